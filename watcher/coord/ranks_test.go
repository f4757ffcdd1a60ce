package coord

import (
	"maps"
	"strings"
	"testing"
	"time"
)

func TestRankMapUpdate(t *testing.T) {
	var r RankMap
	steps := []struct {
		name    string
		claims  map[string][]int
		want    map[int]string
		changed bool
	}{
		{"first round", map[string][]int{"n1": {0, 1}, "n2": {2, 3}}, map[int]string{0: "n1", 1: "n1", 2: "n2", 3: "n2"}, true},
		{"same again", map[string][]int{"n1": {0, 1}, "n2": {2, 3}}, map[int]string{0: "n1", 1: "n1", 2: "n2", 3: "n2"}, false},
		{"rank 3 exited: kept", map[string][]int{"n1": {0, 1}, "n2": {2}}, map[int]string{0: "n1", 1: "n1", 2: "n2", 3: "n2"}, false},
		{"two hosts claim rank 2: left", map[string][]int{"n2": {2}, "n3": {2}}, map[int]string{0: "n1", 1: "n1", 2: "n2", 3: "n2"}, false},
		{"elastic restart moves ranks 2 and 3", map[string][]int{"n1": {0, 1}, "n3": {2, 3}}, map[int]string{0: "n1", 1: "n1", 2: "n3", 3: "n3"}, true},
	}
	for _, s := range steps {
		changed := r.Update(s.claims)
		if got := r.Map(); !maps.Equal(got, s.want) || changed != s.changed {
			t.Errorf("%s: %v, changed %v; want %v, %v", s.name, got, changed, s.want, s.changed)
		}
	}
}

func TestSummaryRanksChecked(t *testing.T) {
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"state":"ok","ranks":[0,1]}`, true},
		{`{"state":"ok","ranks":[-1]}`, false},
		{`{"state":"ok","ranks":[16777216]}`, false},
	} {
		if _, err := DecodeSummary([]byte(c.body)); (err == nil) != c.ok {
			t.Errorf("DecodeSummary(%s): %v, want ok %v", c.body, err, c.ok)
		}
	}
	if _, ok := tickRankMap(`{"-1":"n1"}`); ok {
		t.Error("a tick's rank map with rank -1 was taken")
	}
	if _, ok := tickRankMap(`{"1":""}`); ok {
		t.Error("a tick's rank map with an empty host was taken")
	}
}

// Three watchers meet; each reads its node's ranks (two per node, as
// torchrun starts them): after two periods every watcher, members too,
// knows the whole rank map, and a rank that moves (an elastic restart)
// moves on every watcher.
func TestRankMapReachesEveryWatcher(t *testing.T) {
	s := startSim(t, 3)
	live := []int{0, 1, 2}
	own := func(i int) []int { return []int{2 * i, 2*i + 1} }
	want := map[int]string{}
	for i, n := range s.names {
		for _, r := range own(i) {
			want[r] = n
		}
	}
	for k := range 3 {
		for _, i := range live {
			s.nodes[i].SetRanks(s.names[i], own(i))
		}
		s.period(k, live, func(int) hostState { return hostState{procs: 4} })
	}
	waitRanks(t, s, want)
	// The ranks of the third node restart on the second (a replaced node).
	want[4], want[5] = s.names[1], s.names[1]
	for k := 3; k < 6; k++ {
		for _, i := range live {
			r := own(i)
			switch i {
			case 1:
				r = []int{2, 3, 4, 5}
			case 2:
				r = nil
			}
			s.nodes[i].SetRanks(s.names[i], r)
		}
		s.period(k, live, func(int) hostState { return hostState{procs: 4} })
	}
	waitRanks(t, s, want)
}

// waitRanks waits until every node's rank map is want.
func waitRanks(t *testing.T, s *sim, want map[int]string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var bad []string
		for i, n := range s.nodes {
			if got := n.Ranks(); !maps.Equal(got, want) {
				bad = append(bad, s.names[i])
			}
		}
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: rank map %v, want %v", strings.Join(bad, ","), s.nodes[1].Ranks(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A lone watcher's rank map is its own node's.
func TestLoneRanks(t *testing.T) {
	l := NewLone(testHang())
	l.SetRanks("n1", []int{0, 1})
	if got := l.Ranks(); !maps.Equal(got, map[int]string{0: "n1", 1: "n1"}) {
		t.Errorf("lone rank map %v", got)
	}
}
