package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func TestIssueExampleLine(t *testing.T) {
	const line = `{"v":1,"time":"2026-11-29T10:00:00Z","host":"gpu01","job":"1234","io":{"rchar":0,"wchar":0,"read_bytes":0,"write_bytes":0},"cpu_usec":0,"procs":12,"procs_d":0,"accel":[{"id":"0","util":97,"mem_used_mib":70312,"power_w":612.5}]}`
	s, err := NewReader(strings.NewReader(line + "\n")).Next()
	if err != nil {
		t.Fatal(err)
	}
	want := Sample{V: 1, Time: t0, Host: "gpu01", Job: "1234", Procs: 12,
		Accel: []Accel{{ID: "0", Util: 97, MemUsedMiB: 70312, PowerW: 612.5}}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	var buf bytes.Buffer
	if err := NewWriter(&buf).Write(s); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != line+"\n" {
		t.Fatalf("writer:\n got %s\nwant %s", got, line)
	}
}

// TestOptionalFields: procs_t and the devices' clocks and clock event
// reasons are written only when set, read back, and read as 0 from lines
// without them.
func TestOptionalFields(t *testing.T) {
	const line = `{"v":1,"time":"2026-11-29T10:00:00Z","host":"gpu01","job":"1234","io":{"rchar":0,"wchar":0,"read_bytes":0,"write_bytes":0},"cpu_usec":0,"procs":12,"procs_d":0,"procs_t":11,"cpu_throttled_usec":4200000,"accel":[{"id":"0","util":97,"mem_used_mib":70312,"power_w":612.5,"sm_clock_mhz":1110,"sm_clock_max_mhz":1980,"throttle":136},{"id":"1","util":97,"mem_used_mib":70312,"power_w":612.5,"sm_clock_max_mhz":1980}]}`
	s, err := NewReader(strings.NewReader(line)).Next()
	if err != nil {
		t.Fatal(err)
	}
	want := Sample{V: 1, Time: t0, Host: "gpu01", Job: "1234", Procs: 12, ProcsT: 11, CPUThrottledUsec: 4200000, Accel: []Accel{
		{ID: "0", Util: 97, MemUsedMiB: 70312, PowerW: 612.5, SMClockMHz: 1110, SMClockMaxMHz: 1980, Throttle: ThrottleHwSlowdown | ThrottleHwPowerBrakeSlowdown},
		{ID: "1", Util: 97, MemUsedMiB: 70312, PowerW: 612.5, SMClockMaxMHz: 1980}}}
	if !reflect.DeepEqual(s, want) {
		t.Fatalf("got %+v\nwant %+v", s, want)
	}
	var buf bytes.Buffer
	if err := NewWriter(&buf).Write(s); err != nil || buf.String() != line+"\n" {
		t.Fatalf("writer: %v\n got %s\nwant %s", err, buf.String(), line)
	}
	var js Sample
	if err := json.Unmarshal([]byte(line), &js); err != nil || !reflect.DeepEqual(js.Accel, want.Accel) || js.ProcsT != 11 {
		t.Fatalf("encoding/json: %+v, %v", js, err)
	}
	if got := ThrottleNames(s.Accel[0].Throttle | 1<<12); !reflect.DeepEqual(got, []string{"HwSlowdown", "HwPowerBrakeSlowdown", "bit12"}) {
		t.Fatalf("ThrottleNames = %v", got)
	}
	if got := ThrottleNames(0); got != nil {
		t.Fatalf("ThrottleNames(0) = %v", got)
	}
}

func randSample(r *rand.Rand, i int) Sample {
	s := Sample{
		V:       1,
		Time:    t0.Add(time.Duration(i) * time.Minute).Add(time.Duration(r.Intn(3)) * time.Millisecond),
		Host:    fmt.Sprintf("gpu%02d", r.Intn(5)),
		Job:     "77",
		IO:      IO{r.Uint64(), r.Uint64() >> 3, uint64(r.Intn(1 << 30)), 0},
		CPUUsec: r.Uint64() >> 1,
		Procs:   r.Intn(2000),
		ProcsD:  r.Intn(3),
		ProcsT:  r.Intn(3) / 2,
	}
	if r.Intn(2) == 0 {
		s.CPUThrottledUsec = r.Uint64() >> 2
	}
	for d := 0; d < r.Intn(9); d++ {
		a := Accel{ID: fmt.Sprint(d), Util: float64(r.Intn(101)), MemUsedMiB: r.Float64() * 80000, PowerW: r.Float64() * 700}
		if r.Intn(2) == 0 {
			a.SMClockMHz, a.SMClockMaxMHz, a.Throttle = 210+r.Intn(1771), 1980, uint64(r.Intn(512))
		}
		s.Accel = append(s.Accel, a)
	}
	if r.Intn(3) == 0 {
		s.Missing = []string{"io:123", "accel", "we\"ird\\ \n\t\x01 ü"}
	}
	if r.Intn(2) == 0 {
		s.CgroupIO = &CgroupIO{ReadBytes: r.Uint64(), WriteBytes: 5}
		s.IOPressure = &Pressure{SomeUsec: 7, FullUsec: r.Uint64()}
	}
	if r.Intn(4) == 0 {
		s.Host = "odd \"host\" é"
	}
	if r.Intn(7) == 0 {
		lines := []string{"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
			"gpu01:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.3<57223> with status=12 opcode=0 len=0 vendor err 129",
			"we\"ird\\ \t\x01 ü"}
		streams := []string{StreamStdout, StreamStderr, StreamKmsg}
		return Sample{V: 1, Time: s.Time, Host: s.Host, Job: s.Job, Log: &Log{Stream: streams[r.Intn(3)], Line: lines[r.Intn(3)]}}
	}
	return s
}

// TestRoundTripAgainstEncodingJSON checks the hand-written encoder and decoder
// against encoding/json in both directions.
func TestRoundTripAgainstEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var want []Sample
	for i := 0; i < 500; i++ {
		s := randSample(r, i)
		want = append(want, s)
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	// encoding/json reads what the Writer wrote.
	for i, line := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		var s Sample
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			t.Fatalf("line %d: encoding/json: %v\n%s", i+1, err, line)
		}
		if !s.Time.Equal(want[i].Time) {
			t.Fatalf("line %d: time %v, want %v", i+1, s.Time, want[i].Time)
		}
		s.Time = want[i].Time
		if len(s.Accel) == 0 && len(want[i].Accel) == 0 {
			s.Accel = want[i].Accel
		}
		if !reflect.DeepEqual(s, want[i]) {
			t.Fatalf("line %d: encoding/json decoded\n%+v\nwant\n%+v", i+1, s, want[i])
		}
	}
	// The Reader reads what encoding/json writes (other key order, escapes).
	var jbuf bytes.Buffer
	for _, s := range want {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		jbuf.Write(b)
		jbuf.WriteByte('\n')
	}
	for name, in := range map[string]*bytes.Buffer{"writer": &buf, "encoding/json": &jbuf} {
		t.Run(name, func(t *testing.T) {
			rd := NewReader(in)
			for i := 0; ; i++ {
				s, err := rd.Next()
				if err == io.EOF {
					if i != len(want) {
						t.Fatalf("got %d samples, want %d", i, len(want))
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if !s.Time.Equal(want[i].Time) {
					t.Fatalf("sample %d: time %v, want %v", i, s.Time, want[i].Time)
				}
				s.Time = want[i].Time
				if len(s.Accel) == 0 && len(want[i].Accel) == 0 {
					s.Accel = want[i].Accel
				}
				if !reflect.DeepEqual(s, want[i]) {
					t.Fatalf("sample %d:\n got %+v\nwant %+v", i, s, want[i])
				}
			}
		})
	}
}

func TestReaderTolerates(t *testing.T) {
	in := "\n" +
		`{"extra":{"a":[1,2,{"b":null}],"c":true,"d":false,"e":-1.5e3},"v":1,"host":"h","time":"2026-11-29T10:00:00.5+01:00","accel":null,"io":{"rchar":5,"future":"x"},"missing":null}` + "\n" +
		"   \n" +
		`{"v":1,"host":"h\u00e9\ud83d\ude00","time":"2026-11-29T10:01:00Z","accel":[{"id":"GPU-1","util":12.25,"new":[]}]}` // no final newline
	r := NewReader(strings.NewReader(in))
	s, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if s.IO.RChar != 5 || !s.Time.Equal(t0.Add(-time.Hour+500*time.Millisecond)) || r.Line() != 2 {
		t.Fatalf("got %+v line %d", s, r.Line())
	}
	s, err = r.Next()
	if err != nil {
		t.Fatal(err)
	}
	if s.Host != "hé😀" || len(s.Accel) != 1 || s.Accel[0].Util != 12.25 || s.Accel[0].ID != "GPU-1" || r.Line() != 4 {
		t.Fatalf("got %+v line %d", s, r.Line())
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("want io.EOF, got %v", err)
	}
}

func TestReaderErrors(t *testing.T) {
	good := `{"v":1,"time":"2026-11-29T10:00:00Z","host":"h"}`
	tests := []struct {
		name, line string
		want       error
		msg        string
	}{
		{"version 2", `{"v":2,"time":"2026-11-29T10:00:00Z","host":"h"}`, ErrVersion, "line 3: unsupported format version 2 (this reader knows 1)"},
		{"no version", `{"time":"2026-11-29T10:00:00Z","host":"h"}`, ErrSyntax, `no "v"`},
		{"no host", `{"v":1,"time":"2026-11-29T10:00:00Z"}`, ErrSyntax, `no "host"`},
		{"no time", `{"v":1,"host":"h"}`, ErrSyntax, `no "time"`},
		{"bad time", `{"v":1,"time":"yesterday","host":"h"}`, ErrSyntax, "bad time"},
		{"feb 30", `{"v":1,"time":"2026-02-30T10:00:00Z","host":"h"}`, ErrSyntax, "bad time"},
		{"negative counter", `{"v":1,"time":"2026-11-29T10:00:00Z","host":"h","io":{"rchar":-1}}`, ErrSyntax, "non-negative integer"},
		{"float counter", `{"v":1,"time":"2026-11-29T10:00:00Z","host":"h","cpu_usec":1.5}`, ErrSyntax, "non-negative integer"},
		{"truncated", `{"v":1,"time":"2026-11-29T10:00:00Z","host":"h","io":{"rch`, ErrSyntax, "unterminated string"},
		{"trailing", good + `x`, ErrSyntax, "trailing data"},
		{"not json", `hello`, ErrSyntax, "want '{'"},
		{"bad value", `{"v":1,"x":nope}`, ErrSyntax, "want a value"},
		{"string util", `{"v":1,"time":"2026-11-29T10:00:00Z","host":"h","accel":[{"util":"97"}]}`, ErrSyntax, "want a number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(good + "\n\n" + tc.line + "\n" + good + "\n"))
			if _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
			_, err := r.Next()
			var le *LineError
			if !errors.As(err, &le) || le.Line != 3 || !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want a line-3 error wrapping %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), "trace: line 3: ") {
				t.Fatalf("error %q does not say %q", err, tc.msg)
			}
			// The reader goes on after a bad line.
			if s, err := r.Next(); err != nil || s.Host != "h" || r.Line() != 4 {
				t.Fatalf("after the bad line: %+v %v line %d", s, err, r.Line())
			}
		})
	}
}

func TestLongLine(t *testing.T) {
	var s Sample
	s.Time, s.Host = t0, "h"
	for i := 0; i < 20000; i++ {
		s.Missing = append(s.Missing, fmt.Sprintf("io:%d", i))
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := 0; i < 3; i++ {
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	r := NewReader(&buf)
	for i := 0; i < 3; i++ {
		got, err := r.Next()
		if err != nil || len(got.Missing) != 20000 || got.Missing[19999] != "io:19999" {
			t.Fatalf("sample %d: %v, %d missing", i, err, len(got.Missing))
		}
	}
}

func TestWriterRejectsOtherVersion(t *testing.T) {
	err := NewWriter(io.Discard).Write(Sample{V: 2})
	if !errors.Is(err, ErrVersion) {
		t.Fatalf("got %v", err)
	}
}

func benchLines(b *testing.B, n int) []byte {
	b.Helper()
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for i := 0; i < n; i++ {
		s := Sample{Time: t0.Add(time.Duration(i/500) * time.Minute), Host: fmt.Sprintf("gpu%03d", i%500), Job: "123456",
			IO: IO{uint64(i) * 1000, uint64(i) * 300, uint64(i) * 4096, 0}, CPUUsec: uint64(i) * 1e6, Procs: 40}
		for d := 0; d < 8; d++ {
			s.Accel = append(s.Accel, Accel{ID: fmt.Sprint(d), Util: float64(i % 101), MemUsedMiB: 70312, PowerW: 612.5})
		}
		if err := w.Write(s); err != nil {
			b.Fatal(err)
		}
	}
	return buf.Bytes()
}

// BenchmarkReader decodes 8-GPU samples with the hand-written Reader.
func BenchmarkReader(b *testing.B) {
	data := benchLines(b, 10000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	lines := 0
	for i := 0; i < b.N; i++ {
		r := NewReader(bytes.NewReader(data))
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			lines++
		}
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkReaderEncodingJSON is the same with json.Decoder, for comparison.
func BenchmarkReaderEncodingJSON(b *testing.B) {
	data := benchLines(b, 10000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	lines := 0
	for i := 0; i < b.N; i++ {
		dec := json.NewDecoder(bytes.NewReader(data))
		var s Sample
		for {
			s.Accel = s.Accel[:0]
			if err := dec.Decode(&s); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
			lines++
		}
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkWriter encodes 8-GPU samples.
func BenchmarkWriter(b *testing.B) {
	s := Sample{Time: t0, Host: "gpu001", Job: "123456", Procs: 40}
	for d := 0; d < 8; d++ {
		s.Accel = append(s.Accel, Accel{ID: fmt.Sprint(d), Util: 97, MemUsedMiB: 70312, PowerW: 612.5})
	}
	w := NewWriter(io.Discard)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := w.Write(s); err != nil {
			b.Fatal(err)
		}
	}
}

// Line is the number of the line last returned or rejected by Next (1-based).
func (r *Reader) Line() int { return r.line }
