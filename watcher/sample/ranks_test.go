package sample

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func environ(vars ...string) []byte { return []byte(strings.Join(vars, "\x00") + "\x00") }

func TestParseRankEnv(t *testing.T) {
	step := "SLURM_STEP_ID=0"
	for _, c := range []struct {
		name string
		env  []byte
		want RankEnv
		ok   bool
	}{
		{"torchrun rank", environ("SLURM_PROCID=1", step, "RANK=3", "LOCAL_RANK=1", "GROUP_RANK=1", "WORLD_SIZE=4"),
			RankEnv{Rank: 3, From: "RANK", Launcher: true, Local: 1, Group: 1, World: 4}, true},
		{"torchrun itself", environ("SLURM_PROCID=1", step, "SLURM_LOCALID=0", "PATH=/usr/bin"),
			RankEnv{Rank: 1, From: RankFromProcID, Local: 0, Group: -1, World: -1}, true},
		{"srun task", environ("SLURM_PROCID=5", step, "SLURM_LOCALID=1"),
			RankEnv{Rank: 5, From: RankFromProcID, Local: 1, Group: -1, World: -1}, true},
		{"batch script", environ("SLURM_PROCID=0", "SLURM_JOB_ID=7"), RankEnv{}, false},
		{"open mpi", environ("SLURM_PROCID=0", step, "OMPI_COMM_WORLD_RANK=12", "OMPI_COMM_WORLD_LOCAL_RANK=4", "OMPI_COMM_WORLD_SIZE=16"),
			RankEnv{Rank: 12, From: "OMPI_COMM_WORLD_RANK", Launcher: true, Local: 4, Group: -1, World: 16}, true},
		{"pmix before pmi", environ("PMI_RANK=2", "PMIX_RANK=9"), RankEnv{Rank: 9, From: "PMIX_RANK", Launcher: true, Local: -1, Group: -1, World: -1}, true},
		{"pmi", environ("PMI_RANK=2", "PMI_SIZE=8"), RankEnv{Rank: 2, From: "PMI_RANK", Launcher: true, Local: -1, Group: -1, World: 8}, true},
		{"horovod", environ("HOROVOD_RANK=6", step, "SLURM_PROCID=0"), RankEnv{Rank: 6, From: "HOROVOD_RANK", Launcher: true, Local: -1, Group: -1, World: -1}, true},
		{"jax", environ("JAX_PROCESS_ID=2", "SLURM_PROCID=0", step), RankEnv{Rank: 2, From: "JAX_PROCESS_ID", Launcher: true, Local: -1, Group: -1, World: -1}, true},
		{"rank before mpi", environ("OMPI_COMM_WORLD_RANK=1", "RANK=7"), RankEnv{Rank: 7, From: "RANK", Launcher: true, Local: -1, Group: -1, World: -1}, true},
		{"rank not a number", environ("RANK=x", "SLURM_PROCID=2", step), RankEnv{}, false},
		{"negative", environ("RANK=-1"), RankEnv{}, false},
		{"signed", environ("RANK=+1"), RankEnv{}, false},
		{"huge", environ("RANK=99999999999"), RankEnv{}, false},
		{"past the world", environ("RANK=4", "WORLD_SIZE=4"), RankEnv{}, false},
		{"first of a repeated name", environ("RANK=1", "RANK=2"), RankEnv{Rank: 1, From: "RANK", Launcher: true, Local: -1, Group: -1, World: -1}, true},
		{"no rank", environ("HOME=/home/u", "RANKS=3", "=3", "garbage"), RankEnv{}, false},
		{"empty", nil, RankEnv{}, false},
		{"no final nul", []byte("A=1\x00RANK=4"), RankEnv{Rank: 4, From: "RANK", Launcher: true, Local: -1, Group: -1, World: -1}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := ParseRankEnv(c.env)
			if ok != c.ok || got != c.want {
				t.Errorf("ParseRankEnv(%q) = %+v, %v; want %+v, %v", c.env, got, ok, c.want, c.ok)
			}
		})
	}
}

func TestNodeRanks(t *testing.T) {
	procid := func(r int) RankEnv { return RankEnv{Rank: r, From: RankFromProcID} }
	rank := func(r int) RankEnv { return RankEnv{Rank: r, From: "RANK", Launcher: true} }
	for _, c := range []struct {
		name     string
		envs     []RankEnv
		launched bool
		want     []int
		wantL    bool
	}{
		{"torchrun and its ranks", []RankEnv{procid(1), rank(3), rank(2), rank(3)}, false, []int{2, 3}, true},
		{"srun tasks", []RankEnv{procid(4), procid(5)}, false, []int{4, 5}, false},
		{"torchrun after its ranks exited", []RankEnv{procid(1)}, true, nil, true},
		{"none", nil, false, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, l := NodeRanks(c.envs, c.launched)
			if !slices.Equal(got, c.want) || l != c.wantL {
				t.Errorf("NodeRanks = %v, %v; want %v, %v", got, l, c.want, c.wantL)
			}
		})
	}
}

// TestReadRanksOfRealProcesses starts real processes with rank variables
// and reads them back from /proc, as the watcher does; another user's
// process, which this one may not read when it runs as that user, and a
// vanished one are skipped.
func TestReadRanksOfRealProcesses(t *testing.T) {
	start := func(env ...string) *exec.Cmd {
		cmd := exec.Command("sleep", "30")
		cmd.Env = env
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// Until its exec is done, the child's /proc environ is the test's.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid)); strings.HasPrefix(string(b), "sleep\x00") {
				break
			}
		}
		return cmd
	}
	launcher := start("SLURM_PROCID=1", "SLURM_STEP_ID=0")
	r2 := start("SLURM_PROCID=1", "SLURM_STEP_ID=0", "RANK=2", "LOCAL_RANK=0", "WORLD_SIZE=4")
	r3 := start("SLURM_PROCID=1", "SLURM_STEP_ID=0", "RANK=3", "LOCAL_RANK=1", "WORLD_SIZE=4")
	pids := []int{launcher.Process.Pid, r2.Process.Pid, r3.Process.Pid, 1 << 30}
	got, launched := ReadRanks("/", pids, false)
	if !slices.Equal(got, []int{2, 3}) || !launched {
		t.Fatalf("ReadRanks = %v, %v; want [2 3], true", got, launched)
	}
	got, _ = ReadRanks("/", pids[:1], launched)
	if len(got) != 0 {
		t.Errorf("the launcher alone, after its ranks: %v; want none", got)
	}
	if os.Getuid() != 0 {
		t.Skip("the unreadable case needs root to run a process as another user")
	}
	// A process of root's, read by nobody: /proc/PID/environ is the
	// owner's alone (ptrace access mode), the read fails and is skipped.
	rootRank := start("RANK=9")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/tmp", "vigil-ranks-") // t.TempDir's parent is closed to other users
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "sample.test"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "sample.test"), "-test.run=^TestReadRanksHelper$")
	cmd.Env = []string{"VIGIL_RANKS_PIDS=" + strconv.Itoa(rootRank.Process.Pid) + "," + strconv.Itoa(r2.Process.Pid)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "ranks=[]") {
		t.Errorf("nobody read ranks of root's processes: %s", out)
	}
}

// TestReadRanksHelper is TestReadRanksOfRealProcesses' reader run as
// another user; it does nothing on its own.
func TestReadRanksHelper(t *testing.T) {
	v := os.Getenv("VIGIL_RANKS_PIDS")
	if v == "" {
		t.Skip("run by TestReadRanksOfRealProcesses")
	}
	var pids []int
	for _, p := range strings.Split(v, ",") {
		n, _ := strconv.Atoi(p)
		pids = append(pids, n)
	}
	got, _ := ReadRanks("/", pids, false)
	if _, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pids[0]), "environ")); err == nil {
		t.Fatalf("root's environ is readable by uid %d", os.Getuid())
	}
	os.Stdout.WriteString("ranks=" + intsString(got) + "\n")
}

func intsString(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return "[" + strings.Join(s, ",") + "]"
}

// TestRankCacheReadsOnce: a process's environment is read once while it
// lives (the cached answer is used, not the file), and a pid that left the
// list is forgotten.
func TestRankCacheReadsOnce(t *testing.T) {
	root := t.TempDir()
	c := rankCache{7: {env: RankEnv{Rank: 3, From: "RANK", Launcher: true}, ok: true}, 8: {env: RankEnv{Rank: 5, From: "RANK", Launcher: true}, ok: true}}
	// pid 7 has no /proc entry under root: only the cache can give its rank.
	ranks, _ := readRanks(root, []int{7}, false, c)
	if len(ranks) != 1 || ranks[0] != 3 {
		t.Errorf("ranks %v, want [3] from the cache", ranks)
	}
	if _, kept := c[8]; kept || len(c) != 1 {
		t.Errorf("cache %v: pid 8 left the list and must be forgotten", c)
	}
}

// TestRankCacheRereadsNoRank: an environment that named no rank (a rank
// read between torchrun's fork and its exec shows torchrun's) is read
// again, and the rank it names after the exec is found.
func TestRankCacheRereadsNoRank(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "proc", "7")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(env string) {
		if err := os.WriteFile(filepath.Join(dir, "environ"), []byte(env), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := rankCache{}
	write("PATH=/usr/bin\x00SLURM_JOB_ID=9\x00")
	if ranks, _ := readRanks(root, []int{7}, false, c); len(ranks) != 0 {
		t.Fatalf("ranks %v before the exec, want none", ranks)
	}
	write("PATH=/usr/bin\x00RANK=3\x00LOCAL_RANK=1\x00WORLD_SIZE=4\x00")
	if ranks, _ := readRanks(root, []int{7}, false, c); len(ranks) != 1 || ranks[0] != 3 {
		t.Fatalf("ranks %v after the exec, want [3]", ranks)
	}
}

// TestRankCacheRereadsTheLaunchersTask: a rank read between torchrun's fork
// and its exec, under srun, shows torchrun's environment, which names its
// srun task (SLURM_PROCID 1 on the second node). Kept, it hid the rank
// the process execs as (RANK=2) for the whole job; it is read again.
func TestRankCacheRereadsTheLaunchersTask(t *testing.T) {
	root := t.TempDir()
	write := func(pid, env string) {
		dir := filepath.Join(root, "proc", pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "environ"), []byte(env), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const agent = "PATH=/usr/bin\x00SLURM_JOB_ID=9\x00SLURM_STEP_ID=0\x00SLURM_PROCID=1\x00SLURM_LOCALID=0\x00"
	c := rankCache{}
	write("6", agent)                                                              // torchrun, srun's task 1
	write("7", agent)                                                              // its child, forked, not yet exec'd
	write("8", agent+"RANK=3\x00LOCAL_RANK=1\x00GROUP_RANK=1\x00WORLD_SIZE=4\x00") // the other child, exec'd
	ranks, launched := readRanks(root, []int{6, 7, 8}, false, c)
	if !launched || !slices.Equal(ranks, []int{3}) {
		t.Fatalf("ranks %v (launched %v) before the exec, want [3] and launched", ranks, launched)
	}
	write("7", agent+"RANK=2\x00LOCAL_RANK=0\x00GROUP_RANK=1\x00WORLD_SIZE=4\x00")
	if ranks, _ := readRanks(root, []int{6, 7, 8}, launched, c); !slices.Equal(ranks, []int{2, 3}) {
		t.Fatalf("ranks %v after the exec, want [2 3]", ranks)
	}
}
