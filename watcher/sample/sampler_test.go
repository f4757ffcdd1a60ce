package sample

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

var now = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

func pids(p ...int) func() ([]int, error) { return func() ([]int, error) { return p, nil } }

type fakeAccel struct {
	out []trace.Accel
	err error
	at  []time.Time
}

func (f *fakeAccel) Sample() ([]trace.Accel, error) { return f.out, f.err }

type fakeTimed struct{ fakeAccel }

func (f *fakeTimed) SampleAt(t time.Time) ([]trace.Accel, error) {
	f.at = append(f.at, t)
	return f.out, f.err
}

func TestSampler(t *testing.T) {
	v1 := func(c string) string { return filepath.Join("testdata/cgroup/v1", c, "slurm_n1/uid_0/job_7") }
	v2 := "testdata/cgroup/v2/system.slice/slurmstepd.scope/job_7"
	tests := []struct {
		name string
		s    Sampler
		want trace.Sample
	}{
		{
			name: "cgroup v1 fixture: PIDs from cgroup.procs, cpuacct, blkio",
			s:    Sampler{Cgroups: []string{v1("freezer"), v1("cpuacct"), v1("blkio")}},
			want: trace.Sample{IO: trace.IO{RChar: 1010, WChar: 2020, ReadBytes: 4096, WriteBytes: 12288},
				CPUUsec: 123456789, Procs: 3, ProcsD: 1, Missing: []string{"io:103"},
				CgroupIO: &trace.CgroupIO{ReadBytes: 1048586, WriteBytes: 2097172}},
		},
		{
			name: "cgroup v2 fixture: cpu.stat, io.stat, io.pressure",
			s:    Sampler{Cgroups: []string{v2}},
			want: trace.Sample{IO: trace.IO{RChar: 1000, WChar: 2000, ReadBytes: 4096, WriteBytes: 8192},
				CPUUsec: 98765432, Procs: 1, CPUThrottledUsec: 40250000,
				CgroupIO:   &trace.CgroupIO{ReadBytes: 1459300, WriteBytes: 314773704},
				IOPressure: &trace.Pressure{SomeUsec: 123456, FullUsec: 65432}},
		},
		{
			name: "nested cgroup dirs are not counted twice",
			s:    Sampler{Cgroups: []string{v2, v2 + "/step_0"}, PIDs: pids(101)},
			want: trace.Sample{IO: trace.IO{RChar: 1000, WChar: 2000, ReadBytes: 4096, WriteBytes: 8192},
				CPUUsec: 98765432, Procs: 1, CPUThrottledUsec: 40250000,
				CgroupIO:   &trace.CgroupIO{ReadBytes: 1459300, WriteBytes: 314773704},
				IOPressure: &trace.Pressure{SomeUsec: 123456, FullUsec: 65432}},
		},
		{
			name: "no cgroup files: CPU from the processes; zombies, vanished and unreadable processes",
			s:    Sampler{PIDs: pids(101, 102, 103, 104, 105, 106, 999)},
			want: trace.Sample{IO: trace.IO{RChar: 1010, WChar: 2020, ReadBytes: 4096, WriteBytes: 12288},
				CPUUsec: (600 + 120 + 2 + 7) * 10000, Procs: 6, ProcsD: 1,
				Missing: []string{"io:103", "gone:105", "stat:106", "gone:999"}},
		},
		{
			name: "excluded PIDs",
			s:    Sampler{PIDs: pids(101, 102, os.Getpid()), Exclude: []int{102}},
			want: trace.Sample{IO: trace.IO{RChar: 1000, WChar: 2000, ReadBytes: 4096, WriteBytes: 8192},
				CPUUsec: 600 * 10000, Procs: 1},
		},
		{
			name: "clock ticks",
			s:    Sampler{PIDs: pids(101), ClockTicks: 1000},
			want: trace.Sample{IO: trace.IO{RChar: 1000, WChar: 2000, ReadBytes: 4096, WriteBytes: 8192},
				CPUUsec: 600 * 1000, Procs: 1},
		},
		{
			name: "no process's I/O readable",
			s:    Sampler{PIDs: pids(103)},
			want: trace.Sample{CPUUsec: 2 * 10000, Procs: 1, Missing: []string{"io:103", "io"}},
		},
		{
			name: "process list unreadable",
			s:    Sampler{PIDs: func() ([]int, error) { return nil, errors.New("gone") }},
			want: trace.Sample{Missing: []string{"pids", "cpu"}},
		},
		{
			name: "job cgroup gone",
			s:    Sampler{Cgroups: []string{"testdata/cgroup/v1/freezer/slurm_n1/uid_0/job_8"}},
			want: trace.Sample{Missing: []string{"pids", "cpu"}},
		},
		{
			name: "stopped (T) and traced (t) processes",
			s:    Sampler{PIDs: pids(101, 102, 107, 108)},
			want: trace.Sample{IO: trace.IO{RChar: 3010, WChar: 6020, ReadBytes: 12288, WriteBytes: 28672},
				CPUUsec: (3*600 + 120) * 10000, Procs: 4, ProcsD: 1, ProcsT: 2},
		},
		{
			name: "no processes",
			s:    Sampler{PIDs: pids()},
			want: trace.Sample{},
		},
		{
			name: "many vanished processes are counted, not listed",
			s:    Sampler{PIDs: pids(900, 901, 902, 903, 904, 905, 906, 907, 908, 909, 910, 911)},
			want: trace.Sample{Missing: []string{"gone:900", "gone:901", "gone:902", "gone:903", "gone:904", "gone:905", "gone:906", "gone:907", "gone:+4"}},
		},
		{
			name: "accelerators",
			s:    Sampler{PIDs: pids(), Accel: &fakeAccel{out: []trace.Accel{{ID: "0", Util: 97, MemUsedMiB: 1, PowerW: 2}}}},
			want: trace.Sample{Accel: []trace.Accel{{ID: "0", Util: 97, MemUsedMiB: 1, PowerW: 2}}},
		},
		{
			name: "accelerators failing in part",
			s: Sampler{PIDs: pids(), Accel: &fakeAccel{out: []trace.Accel{{ID: "1", Util: 5}},
				err: errors.New("device 0: GPU is lost")}},
			want: trace.Sample{Accel: []trace.Accel{{ID: "1", Util: 5}}, Missing: []string{"accel"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.Root, tc.s.Host, tc.s.Job = "testdata", "n1", "7"
			t.Cleanup(func() { tc.s.Close() })
			// The second sample reads the files kept open by the first.
			var got trace.Sample
			for i := 0; i < 2; i++ {
				got = tc.s.Sample(now)
				tc.want.V, tc.want.Time, tc.want.Host, tc.want.Job = 1, now, "n1", "7"
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("sample %d: got\n%+v\nwant\n%+v", i+1, got, tc.want)
				}
			}
			// The sample is a valid trace line.
			var b strings.Builder
			if err := trace.NewWriter(&b).Write(got); err != nil {
				t.Fatal(err)
			}
			if _, err := trace.NewReader(strings.NewReader(b.String())).Next(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSamplerPassesTimeToTimedAccelerators(t *testing.T) {
	f := &fakeTimed{fakeAccel{out: []trace.Accel{{ID: "0"}}}}
	s := Sampler{Root: "testdata", PIDs: pids(), Accel: f}
	defer s.Close()
	s.Sample(now)
	s.Sample(now.Add(time.Minute))
	if len(f.at) != 2 || !f.at[1].Equal(now.Add(time.Minute)) {
		t.Fatalf("SampleAt got %v", f.at)
	}
}

// TestSamplerRealProc samples real processes under the real /proc.
func TestSamplerRealProc(t *testing.T) {
	cmd := exec.Command("sh", "-c", "head -c 100000 /dev/zero > /dev/null; exec sleep 30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := Sampler{Root: "/", PIDs: pids(cmd.Process.Pid, os.Getpid())}
	defer s.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := s.Sample(time.Now())
		if got.Procs != 1 || len(got.Missing) != 0 {
			t.Fatalf("got %+v", got)
		}
		// The shell has reaped head, whose reads count in its counters.
		if got.IO.RChar >= 100000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("rchar %d after 10 s, want >= 100000 (head's reads)", got.IO.RChar)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestSamplerRealStoppedProc counts a real process stopped by SIGSTOP in
// procs_t, and no longer once it is continued.
func TestSamplerRealStoppedProc(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := Sampler{Root: "/", PIDs: pids(cmd.Process.Pid)}
	defer s.Close()
	waitT := func(want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			got := s.Sample(time.Now())
			if got.Procs != 1 || len(got.Missing) != 0 {
				t.Fatalf("got %+v", got)
			}
			if got.ProcsT == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("procs_t %d after 10 s, want %d", got.ProcsT, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitT(0)
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitT(1)
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitT(0)
}

func TestMissingCapPerKind(t *testing.T) {
	var m missing
	for i := 0; i < 10; i++ {
		m.add("io", i)
		m.add("gone", 100+i)
	}
	m.whole("io")
	got := m.done()
	if len(got) != 2*MaxMissingPerKind+3 || got[len(got)-3] != "io" || got[len(got)-2] != "gone:+2" || got[len(got)-1] != "io:+2" {
		t.Fatalf("got %v", got)
	}

}
