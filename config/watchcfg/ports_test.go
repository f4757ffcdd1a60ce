package watchcfg

import (
	"strconv"
	"testing"
)

// TestJobPortsFromTheWholeID: a job's meeting ports come from its whole
// id, so jobs 1000 ids apart (which once shared port + id mod 1000) get
// different first ports; the sequence is PortTries distinct ports in the
// span, the same for the same id, and none when the meeting is off.
func TestJobPortsFromTheWholeID(t *testing.T) {
	s := Default()
	for _, pair := range [][2]string{{"1234", "2234"}, {"42", "1042"}, {"100000", "101000"}, {"7", "1007"}} {
		a, b := s.JobPorts(pair[0]), s.JobPorts(pair[1])
		if a[0] == b[0] {
			t.Errorf("jobs %s and %s share their first port %d", pair[0], pair[1], a[0])
		}
	}
	same := 0
	for id := 1; id <= 20000; id++ {
		if s.JobPorts(strconv.Itoa(id))[0] == s.JobPorts(strconv.Itoa(id + PortSpan))[0] {
			same++
		}
	}
	// By chance, one pair in PortSpan shares a first port: 20 expected.
	if same > 60 {
		t.Errorf("%d of 20000 jobs share their first port with the job %d ids later", same, PortSpan)
	}
	for _, id := range []string{"1", "999", "123456789", "4294967295", "42_3", "x"} {
		ports := s.JobPorts(id)
		if len(ports) != PortTries {
			t.Fatalf("job %s: %d ports, want %d", id, len(ports), PortTries)
		}
		seen := map[int]bool{}
		for i, p := range ports {
			if p < s.Port || p >= s.Port+PortSpan || seen[p] {
				t.Errorf("job %s: port %d (%d of %v) out of %d..%d or repeated", id, p, i, ports, s.Port, s.Port+PortSpan-1)
			}
			seen[p] = true
			if i > 0 && p != s.Port+(ports[i-1]-s.Port+1)%PortSpan {
				t.Errorf("job %s: %v does not follow its first port in order", id, ports)
			}
		}
		if again := s.JobPorts(id); again[0] != ports[0] {
			t.Errorf("job %s: first port %d, then %d", id, ports[0], again[0])
		}
	}
	s.Port = 0
	if p := s.JobPorts("42"); p != nil {
		t.Errorf("port = 0: JobPorts = %v, want none", p)
	}
}

// TestJobPortsWrapInTheSpan: a sequence that starts near the span's end
// continues at its start, never above Port+PortSpan-1.
func TestJobPortsWrapInTheSpan(t *testing.T) {
	s := Default()
	for id := 0; id < 100000; id++ {
		ports := s.JobPorts(strconv.Itoa(id))
		if ports[0]-s.Port < PortSpan-PortTries+1 {
			continue
		}
		for _, p := range ports {
			if p >= s.Port+PortSpan {
				t.Fatalf("job %d: %v leaves the span", id, ports)
			}
		}
		if ports[PortTries-1] >= ports[0] {
			t.Fatalf("job %d: %v does not wrap", id, ports)
		}
		return
	}
	t.Fatal("no job id in 0..99999 starts near the span's end")
}
