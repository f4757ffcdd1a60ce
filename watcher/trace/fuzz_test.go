package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzReader checks that the hand-written decoder never panics, that every
// error names a line, and that what it accepts encoding/json accepts too,
// with the same values.
func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"v":1,"time":"2026-11-29T10:00:00Z","host":"gpu01","job":"1234","io":{"rchar":0,"wchar":0,"read_bytes":0,"write_bytes":0},"cpu_usec":0,"procs":12,"procs_d":0,"accel":[{"id":"0","util":97,"mem_used_mib":70312,"power_w":612.5}]}`))
	f.Add([]byte(`{"v":1,"time":"2026-11-29T10:00:00.5+01:00","host":"h\u00e9","missing":["io","a\"b"],"cgroup_io":{"rbytes":1},"x":[{},[],null,true,-1e9]}`))
	f.Add([]byte(`{"v":1,"time":"2026-11-29T10:00:00Z","host":"gpu01","procs":3,"procs_t":3,"accel":[{"id":"0","util":97,"sm_clock_mhz":1110,"sm_clock_max_mhz":1980,"throttle":8}]}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"time":"2026-11-29T10:00:00Z","host":"gpu03","job":"1","log":{"stream":"kmsg","line":"NVRM: Xid (PCI:0000:3b:00): 79, x"}}`))
	f.Add([]byte("{\"v\":1}\n\n{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data))
		for i := 0; i < 100; i++ {
			s, err := r.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				var le *LineError
				if !errors.As(err, &le) && !bytes.Contains([]byte(err.Error()), []byte("longer than")) {
					t.Fatalf("error without a line: %v", err)
				}
				continue
			}
			// Re-encode and compare through encoding/json.
			var buf bytes.Buffer
			if err := NewWriter(&buf).Write(s); err != nil {
				t.Fatal(err)
			}
			var back Sample
			if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
				t.Fatalf("encoding/json rejects the re-encoded %q: %v", buf.String(), err)
			}
			again, err := NewReader(&buf).Next()
			if err != nil {
				t.Fatalf("re-reading %q: %v", buf.String(), err)
			}
			if !again.Time.Equal(s.Time) || again.Host != s.Host || again.IO != s.IO || again.ProcsT != s.ProcsT || len(again.Accel) != len(s.Accel) ||
				again.IsLog() != s.IsLog() || (s.IsLog() && *again.Log != *s.Log) {
				t.Fatalf("round trip changed %+v into %+v", s, again)
			}
		}
	})
}
