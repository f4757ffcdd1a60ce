package sample

import (
	"errors"
	"testing"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

func TestParseProcIO(t *testing.T) {
	tests := []struct {
		name, in string
		want     trace.IO
		err      bool
	}{
		{"kernel 6", "rchar: 4520\nwchar: 18\nsyscr: 13\nsyscw: 1\nread_bytes: 4096\nwrite_bytes: 8192\ncancelled_write_bytes: 0\n", trace.IO{RChar: 4520, WChar: 18, ReadBytes: 4096, WriteBytes: 8192}, false},
		{"no final newline, other order", "write_bytes: 4\nread_bytes: 3\nwchar: 2\nrchar: 1", trace.IO{RChar: 1, WChar: 2, ReadBytes: 3, WriteBytes: 4}, false},
		{"huge", "rchar: 18446744073709551615\nwchar: 0\nread_bytes: 0\nwrite_bytes: 0\n", trace.IO{RChar: 1<<64 - 1}, false},
		{"overflow", "rchar: 18446744073709551616\nwchar: 0\nread_bytes: 0\nwrite_bytes: 0\n", trace.IO{}, true},
		{"missing key", "rchar: 1\nwchar: 2\nread_bytes: 3\n", trace.IO{}, true},
		{"bad number", "rchar: x\nwchar: 2\nread_bytes: 3\nwrite_bytes: 4\n", trace.IO{}, true},
		{"empty (process gone)", "", trace.IO{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProcIO([]byte(tc.in))
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v, error %v", got, err, tc.want, tc.err)
			}
			if err != nil && !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v does not wrap ErrFormat", err)
			}
		})
	}
}

func TestParseProcStat(t *testing.T) {
	tests := []struct {
		name, in string
		want     ProcStat
		err      bool
	}{
		{"plain", "1234 (python3) R 1 1234 1234 0 -1 4194304 100 0 0 0 500 100 7 3 20 0 1 0 100 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
			ProcStat{'R', 500, 100, 7, 3}, false},
		{"comm with spaces and parens", "77 (a) b (c)) D 1 2 3 0 -1 0 0 0 0 0 9 8 7 6 20 0 1 0\n", ProcStat{'D', 9, 8, 7, 6}, false},
		{"negative cutime", "77 (x) S 1 2 3 0 -1 0 0 0 0 0 9 8 -1 6 20\n", ProcStat{'S', 9, 8, 0, 6}, false},
		{"short", "77 (x) S 1 2 3\n", ProcStat{}, true},
		{"no comm", "77 x S 1 2 3 0 -1 0 0 0 0 0 9 8 7 6 20\n", ProcStat{}, true},
		{"bad utime", "77 (x) S 1 2 3 0 -1 0 0 0 0 0 a 8 7 6 20\n", ProcStat{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseProcStat([]byte(tc.in))
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
	if got := (ProcStat{UTime: 1, STime: 2, CUTime: 3, CSTime: 4}).Ticks(); got != 10 {
		t.Fatalf("Ticks = %d", got)
	}
}

func TestParseCgroupFiles(t *testing.T) {
	t.Run("cpu.stat", func(t *testing.T) {
		v, err := ParseCPUStat([]byte("usage_usec 98765432\nuser_usec 1\nsystem_usec 2\n"))
		if err != nil || v != 98765432 {
			t.Fatalf("%d %v", v, err)
		}
		if _, err := ParseCPUStat([]byte("user_usec 1\n")); !errors.Is(err, ErrFormat) {
			t.Fatalf("no usage_usec: %v", err)
		}
		if _, err := ParseCPUStat([]byte("usage_usec -1\n")); !errors.Is(err, ErrFormat) {
			t.Fatalf("bad value: %v", err)
		}
	})
	t.Run("cpuacct.usage", func(t *testing.T) {
		v, err := ParseCPUAcctUsage([]byte("123456789012\n"))
		if err != nil || v != 123456789 {
			t.Fatalf("%d %v", v, err)
		}
		if _, err := ParseCPUAcctUsage([]byte("\n")); err == nil {
			t.Fatal("empty: no error")
		}
	})
	t.Run("blkio", func(t *testing.T) {
		c, err := ParseBlkioServiceBytes([]byte("8:0 Read 100\n8:0 Write 200\n8:0 Sync 300\n8:0 Total 300\n8:16 Read 1\n8:16 Write 2\nTotal 303\n"))
		if err != nil || c != (trace.CgroupIO{ReadBytes: 101, WriteBytes: 202}) {
			t.Fatalf("%+v %v", c, err)
		}
		if c, err := ParseBlkioServiceBytes([]byte("Total 0\n")); err != nil || c != (trace.CgroupIO{}) {
			t.Fatalf("empty cgroup: %+v %v", c, err)
		}
		if _, err := ParseBlkioServiceBytes([]byte("8:0 Read x\n")); err == nil {
			t.Fatal("bad value: no error")
		}
	})
	t.Run("io.stat", func(t *testing.T) {
		c, err := ParseIOStat([]byte("8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0\n8:0 rbytes=100 wbytes=200 rios=1 wios=2\n"))
		if err != nil || c != (trace.CgroupIO{ReadBytes: 1459300, WriteBytes: 314773704}) {
			t.Fatalf("%+v %v", c, err)
		}
		if c, err := ParseIOStat(nil); err != nil || c != (trace.CgroupIO{}) {
			t.Fatalf("empty: %+v %v", c, err)
		}
		if _, err := ParseIOStat([]byte("8:0 rbytes\n")); err == nil {
			t.Fatal("bad field: no error")
		}
	})
	t.Run("io.pressure", func(t *testing.T) {
		p, err := ParsePressure([]byte("some avg10=0.00 avg60=0.12 avg300=0.05 total=123456\nfull avg10=0.00 avg60=0.10 avg300=0.04 total=65432\n"))
		if err != nil || p != (trace.Pressure{SomeUsec: 123456, FullUsec: 65432}) {
			t.Fatalf("%+v %v", p, err)
		}
		if p, err := ParsePressure([]byte("some avg10=0.00 avg60=0.00 avg300=0.00 total=5\n")); err != nil || p.SomeUsec != 5 {
			t.Fatalf("only some: %+v %v", p, err)
		}
		if _, err := ParsePressure([]byte("full total=1\n")); err == nil {
			t.Fatal("no some line: no error")
		}
		if _, err := ParsePressure([]byte("some avg10=0.00\n")); err == nil {
			t.Fatal("no total: no error")
		}
	})
}
