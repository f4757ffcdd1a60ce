package trace

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestLogRecord reads and writes the log record, and checks that a
// reading next to it is read as before.
func TestLogRecord(t *testing.T) {
	const logLine = `{"v":1,"time":"2026-11-29T10:00:00Z","host":"gpu03","job":"1234","log":{"stream":"kmsg","line":"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."}}`
	const reading = `{"v":1,"time":"2026-11-29T10:00:00Z","host":"gpu01","job":"1234","io":{"rchar":0,"wchar":0,"read_bytes":0,"write_bytes":0},"cpu_usec":0,"procs":12,"procs_d":0,"accel":[{"id":"0","util":97,"mem_used_mib":70312,"power_w":612.5}]}`
	rd := NewReader(strings.NewReader(logLine + "\n" + reading + "\n"))
	s, err := rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	want := Sample{V: 1, Time: t0, Host: "gpu03", Job: "1234",
		Log: &Log{Stream: StreamKmsg, Line: "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."}}
	if !reflect.DeepEqual(s, want) || !s.IsLog() {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	var buf bytes.Buffer
	if err := NewWriter(&buf).Write(s); err != nil {
		t.Fatal(err)
	}
	if buf.String() != logLine+"\n" {
		t.Fatalf("writer:\n got %s\nwant %s", buf.String(), logLine)
	}
	s, err = rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	if s.IsLog() || s.Procs != 12 || len(s.Accel) != 1 {
		t.Fatalf("reading after a log record: %+v", s)
	}
	if _, err := rd.Next(); err != io.EOF {
		t.Fatalf("want EOF, got %v", err)
	}
}

// TestLogRecordTolerates: unknown keys inside "log", escapes, and a null
// "log" (a reading).
func TestLogRecordTolerates(t *testing.T) {
	in := `{"v":1,"time":"2026-11-29T10:00:00Z","host":"h","log":{"x":[1],"line":"a\"b\u00e9\\","stream":"stderr"}}
{"v":1,"time":"2026-11-29T10:00:00Z","host":"h","log":null,"procs":3}
`
	rd := NewReader(strings.NewReader(in))
	s, err := rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	if s.Log == nil || s.Log.Line != `a"bé\` || s.Log.Stream != StreamStderr {
		t.Fatalf("got %+v", s.Log)
	}
	s, err = rd.Next()
	if err != nil {
		t.Fatal(err)
	}
	if s.IsLog() || s.Procs != 3 {
		t.Fatalf("null log: got %+v", s)
	}
	bad := `{"v":1,"time":"2026-11-29T10:00:00Z","host":"h","log":{"line":3}}`
	if _, err := NewReader(strings.NewReader(bad)).Next(); err == nil {
		t.Fatal("a number as the line was accepted")
	}
}
