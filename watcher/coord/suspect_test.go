package coord

import (
	"testing"

	"github.com/vigil-hpc/vigil/watcher/hang"
)

// A member hears from the coordinator's tick that the job may be hung
// (the coordinator's view over every node), and reads what its processes
// wait on then, though its own view sees nothing amiss; it hears so no
// longer once the coordinator's view recovered.
func TestMemberHearsTheJobIsSuspect(t *testing.T) {
	s := startSim(t, 3)
	live := []int{0, 1, 2}
	state := func(k int) func(i int) hostState {
		return func(i int) hostState {
			switch {
			case i == 2 && k == 2:
				return hostState{procs: 4, event: hang.EventSuspect}
			case i == 2 && k == 5:
				return hostState{procs: 4, event: hang.EventRecovered}
			}
			return hostState{procs: 4}
		}
	}
	// The coordinator's view takes node 2's word at round k; its tick of
	// round k+1 carries it.
	want := []bool{false, false, false, true, true, true, false, false}
	for k, w := range want {
		s.period(k, live, state(k))
		if got := s.nodes[1].Suspect(); got != w {
			t.Fatalf("after period %d: member %s says suspect %v, want %v (coordinator: %v)", k, s.names[1], got, w, s.nodes[0].Suspect())
		}
		if s.nodes[1].lone.Suspect() {
			t.Fatalf("period %d: the member's own view says suspect: the test shows nothing", k)
		}
	}
}
