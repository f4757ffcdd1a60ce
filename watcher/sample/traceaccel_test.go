package sample

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

// accelTrace writes a trace with one line per host per minute; util is the
// minute number, so the tests can tell which line they got.
func accelTrace(t *testing.T, hosts []string, minutes int, missingAt int) string {
	t.Helper()
	var b strings.Builder
	w := trace.NewWriter(&b)
	for m := 0; m < minutes; m++ {
		for _, h := range hosts {
			s := trace.Sample{Time: now.Add(time.Duration(m) * time.Minute), Host: h,
				Accel: []trace.Accel{{ID: "0", Util: float64(m), PowerW: 100}}}
			if m == missingAt {
				s.Missing = []string{"accel"}
			}
			if err := w.Write(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	return b.String()
}

func utilOf(t *testing.T, a []trace.Accel, err error) string {
	t.Helper()
	if errors.Is(err, ErrAccelMissing) {
		return "missing"
	}
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(a[0].Util)
}

func TestTraceAcceleratorsByTime(t *testing.T) {
	ta, err := NewTraceAccelerators(strings.NewReader(accelTrace(t, []string{"gpu01", "gpu02"}, 5, 3)), "gpu02")
	if err != nil {
		t.Fatal(err)
	}
	if ta.Len() != 5 {
		t.Fatalf("Len %d", ta.Len())
	}
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) // the sampler's clock, unrelated to the trace's
	var got []string
	for _, off := range []time.Duration{0, 30 * time.Second, 60 * time.Second, 150 * time.Second, 190 * time.Second, 240 * time.Second, time.Hour, -time.Minute} {
		a, err := ta.SampleAt(start.Add(off))
		got = append(got, utilOf(t, a, err))
	}
	if g := strings.Join(got, " "); g != "0 0 1 2 missing 4 4 0" {
		t.Fatalf("got %s", g)
	}
}

func TestTraceAcceleratorsBySequence(t *testing.T) {
	ta, err := NewTraceAccelerators(strings.NewReader(accelTrace(t, []string{"gpu01"}, 3, -1)), "")
	if err != nil {
		t.Fatal(err)
	}
	ta.BySequence = true
	var got []string
	for i := 0; i < 5; i++ {
		a, err := ta.SampleAt(now.Add(time.Duration(i) * time.Hour))
		got = append(got, utilOf(t, a, err))
	}
	if g := strings.Join(got, " "); g != "0 1 2 2 2" {
		t.Fatalf("got %s", g)
	}
	// Returned readings are copies.
	a, _ := ta.Sample()
	a[0].Util = 99
	if b, _ := ta.Sample(); b[0].Util != 2 {
		t.Fatal("readings shared with the caller")
	}
}

func TestTraceAcceleratorsHosts(t *testing.T) {
	one := accelTrace(t, []string{"gpu01"}, 2, -1)
	two := accelTrace(t, []string{"gpu01", "gpu02"}, 2, -1)
	tests := []struct {
		name, trace, host, err string
	}{
		{"single-host trace stands for any host", one, "n1", ""},
		{"single-host trace, no host", one, "", ""},
		{"several hosts, no host", two, "", "no lines for host"},
		{"several hosts, unknown host", two, "n1", "no lines for host \"n1\" among 2 hosts"},
		{"empty", "", "n1", "among 0 hosts"},
		{"bad line", one + "{\n", "gpu01", "line 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewTraceAccelerators(strings.NewReader(tc.trace), tc.host)
			if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}
}

func TestTraceAcceleratorsOutOfOrder(t *testing.T) {
	in := `{"v":1,"time":"2026-11-29T10:01:00Z","host":"h","accel":[]}` + "\n" + `{"v":1,"time":"2026-11-29T10:00:00Z","host":"h","accel":[]}` + "\n"
	if _, err := NewTraceAccelerators(strings.NewReader(in), "h"); err == nil || !strings.Contains(err.Error(), "out of time order") {
		t.Fatalf("got %v", err)
	}
}

// TestTraceAcceleratorsSkipLogRecords: a log record, of this host or of
// another, is no reading and does not make the trace one of two hosts.
func TestTraceAcceleratorsSkipLogRecords(t *testing.T) {
	logRec := `{"v":1,"time":"2026-11-29T10:00:30Z","host":"gpu09","job":"1","log":{"stream":"kmsg","line":"NVRM: Xid (PCI:0000:3b:00): 79, x"}}` + "\n"
	in := accelTrace(t, []string{"gpu01"}, 3, -1)
	i := strings.Index(in, "\n") + 1
	ta, err := NewTraceAccelerators(strings.NewReader(in[:i]+logRec+in[i:]), "gpu05")
	if err != nil {
		t.Fatal(err)
	}
	if ta.Len() != 3 {
		t.Fatalf("%d readings, want 3", ta.Len())
	}
}
