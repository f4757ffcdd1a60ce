package report

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/vendors"
)

func TestAcceleratorsJSON(t *testing.T) {
	tests := []struct {
		name string
		in   Accelerators
		want string
	}{
		{"none", Accelerators{}, `{"nvidia":0,"ascend":0}`},
		{"table order, zeros written", Accelerators{Count: benchmarks.Hardware{"ascend": 8, "nvidia": 2}, Evidence: []string{"/dev/nvidia0"}},
			`{"nvidia":2,"ascend":8,"evidence":["/dev/nvidia0"]}`},
		{"a vendor the table lacks comes after it", Accelerators{Count: benchmarks.Hardware{"zeta": 1, "acme": 3}},
			`{"nvidia":0,"ascend":0,"acme":3,"zeta":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("got %s, want %s", b, tc.want)
			}
			var back Accelerators
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if back.Count.None() != tc.in.Count.None() || !reflect.DeepEqual(back.Evidence, tc.in.Evidence) {
				t.Fatalf("read back %+v from %+v", back, tc.in)
			}
			for v, n := range tc.in.Count {
				if back.Count[v] != n {
					t.Fatalf("read back %s = %d, want %d", v, back.Count[v], n)
				}
			}
		})
	}
}

func TestAcceleratorsJSONErrors(t *testing.T) {
	for _, in := range []string{`{"nvidia":"two"}`, `{"evidence":3}`, `[1]`} {
		var a Accelerators
		if err := json.Unmarshal([]byte(in), &a); err == nil {
			t.Errorf("%s: no error", in)
		}
	}
}

// TestAcceleratorsFollowTheTable: a vendor added to the table reaches the
// JSON report, the textfile and the table with no change to this package.
func TestAcceleratorsFollowTheTable(t *testing.T) {
	saved := vendors.Table
	t.Cleanup(func() { vendors.Table = saved })
	vendors.Table = append(slices.Clip(saved), vendors.Row{Name: "acme", Maker: "Acme", Noun: "XPU", DevNode: "acme", DevPrefix: "xpu"})

	r := sampleReport()
	r.Accelerators.Count["acme"] = 4
	j, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(j, []byte("\"ascend\": 0,\n    \"acme\": 4,\n")) {
		t.Errorf("JSON lacks acme after ascend:\n%s", j)
	}
	var p bytes.Buffer
	if err := Prometheus(&p, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.String(), "vigil_accelerators{mode=\"prolog\",vendor=\"ascend\"} 0\nvigil_accelerators{mode=\"prolog\",vendor=\"acme\"} 4\n") {
		t.Errorf("textfile lacks acme:\n%s", p.String())
	}
	var tb bytes.Buffer
	Table(&tb, r)
	if !strings.Contains(tb.String(), "accelerators: 2 NVIDIA, 4 Acme\n") {
		t.Errorf("table lacks acme:\n%s", tb.String())
	}
}
