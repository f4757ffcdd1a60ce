package realjob

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
	"github.com/vigil-hpc/vigil/watcher/sample"
)

// python is Debian's interpreter with python3-torch; the python3 first on
// PATH may be another one without it.
const python = "/usr/bin/python3"

// torchVersion fails the test, with the install hint, when python cannot
// import torch where c's jobs run (the host, or c's Slurm root), and
// returns torch's version.
func torchVersion(t *testing.T, c *slurmtest.Cluster, root string) string {
	t.Helper()
	out, err := c.RootCommand(python, "-c", "import torch, torch.distributed as d; assert d.is_gloo_available(); print(torch.__version__)").CombinedOutput()
	if err != nil {
		hint := "install Debian's PyTorch with: apt-get install -y --no-install-recommends python3-torch (make deps does)"
		if root != "" {
			hint = "install it in the Slurm root with .ci/slurm-root (make slurm-root), which adds python3-torch to " + root
		}
		t.Fatalf("%s cannot import torch with gloo (%v): %s\n%s", python, err, hint, out)
	}
	return strings.TrimSpace(string(out))
}

// blockNode drops node addr's traffic to and from every other address,
// except its slurmd port and the job's watchers' port (Slurm and the
// watchers keep talking to it, as a data network fails while the
// management network stays), in a chain of the test's own; with
// slurmdPort 0, every port (management and data on one network: the node
// is cut off entirely).
// The rules are removed by the returned function and, on every path, in
// t.Cleanup.
func blockNode(t *testing.T, addr string, slurmdPort int, watchPorts []int) (undo func()) {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	chain := "VIGIL-RJ-" + hex.EncodeToString(b)
	ipt := func(args ...string) error {
		out, err := exec.Command("iptables", append([]string{"-w"}, args...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	var once sync.Once
	undo = func() {
		once.Do(func() {
			ipt("-D", "OUTPUT", "-j", chain)
			ipt("-F", chain)
			ipt("-X", chain)
		})
	}
	t.Cleanup(undo)
	ports := strconv.Itoa(slurmdPort)
	for _, p := range watchPorts {
		ports += "," + strconv.Itoa(p)
	}
	rules := [][]string{
		{"-N", chain},
		{"-A", chain, "-d", addr, "-p", "tcp", "-m", "multiport", "!", "--dports", ports, "-j", "DROP"},
		{"-A", chain, "-s", addr, "-p", "tcp", "-m", "multiport", "!", "--sports", ports, "-j", "DROP"},
		{"-I", "OUTPUT", "-j", chain},
	}
	if slurmdPort == 0 { // every port: the node is cut off entirely
		rules[1], rules[2] = []string{"-A", chain, "-d", addr, "-j", "DROP"}, []string{"-A", chain, "-s", addr, "-j", "DROP"}
	}
	for _, r := range rules {
		if err := ipt(r...); err != nil {
			t.Fatalf("%v (iptables is a Debian package: apt-get install -y iptables)", err)
		}
	}
	return undo
}

// event is one JSON line of a watcher's standard output.
type event struct {
	Time   time.Time `json:"time"`
	Host   string    `json:"host"`
	Event  string    `json:"event"`
	Reason string    `json:"reason"`
	Cause  string    `json:"cause"`
}

// events reads the events of the job's watchers (watch-N.out).
func events(dir, logs string) []event {
	var out []event
	files, _ := filepath.Glob(filepath.Join(dir, "watch-*.out")) // the batch script's watchers
	if logs != "" {
		more, _ := filepath.Glob(logs) // the SPANK plugin's
		files = append(files, more...)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) == nil && e.Event != "" {
				out = append(out, e)
			}
		}
	}
	return out
}

// faultTime reads the time a job's rank noted before its fault.
func faultTime(dir string) (time.Time, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "fault"))
	if err != nil {
		return time.Time{}, false
	}
	f, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		return time.Time{}, false
	}
	sec := int64(f)
	return time.Unix(sec, int64((f-float64(sec))*1e9)), true
}

func writeFaultTime(t *testing.T, dir string, at time.Time) {
	t.Helper()
	s := fmt.Sprintf("%.6f block -1\n", float64(at.UnixNano())/1e9)
	if err := os.WriteFile(filepath.Join(dir, "fault"), []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// freezeStep freezes the cgroup of the step that process pid runs in (its
// step_N directory: v1 freezer.state, v2 cgroup.freeze), as an admin or
// Slurm's scontrol suspend does, found through the process's own
// /proc/PID/cgroup and mount table. It is thawed by the returned function
// and, on every path, in t.Cleanup.
func freezeStep(t *testing.T, pid int) (undo func()) {
	t.Helper()
	proc := filepath.Join("/proc", strconv.Itoa(pid))
	cg, err := os.ReadFile(filepath.Join(proc, "cgroup"))
	if err != nil {
		t.Fatalf("the rank to freeze: %v", err)
	}
	mi, err := os.ReadFile(filepath.Join(proc, "mountinfo"))
	if err != nil {
		t.Fatalf("the rank to freeze: %v", err)
	}
	mounts := sample.ParseMountInfo(mi)
	for _, c := range slurm.ParseProcCgroup(cg) {
		v1 := strings.Contains(","+c.Controllers+",", ",freezer,")
		if c.Controllers != "" && !v1 {
			continue
		}
		for _, m := range mounts {
			if v1 && (m.FSType != "cgroup" || !strings.Contains(","+m.Super+",", ",freezer,")) || !v1 && m.FSType != "cgroup2" {
				continue
			}
			rel, ok := strings.CutPrefix(c.Path, strings.TrimSuffix(m.Root, "/"))
			if !ok {
				continue
			}
			dir := filepath.Join(m.Point, rel)
			for !strings.HasPrefix(filepath.Base(dir), "step_") && dir != m.Point && dir != "/" {
				dir = filepath.Dir(dir)
			}
			file, on, off := filepath.Join(dir, "cgroup.freeze"), "1", "0"
			if v1 {
				file, on, off = filepath.Join(dir, "freezer.state"), "FROZEN", "THAWED"
			}
			if !strings.HasPrefix(filepath.Base(dir), "step_") {
				continue
			}
			if err := os.WriteFile(file, []byte(on), 0); err != nil {
				t.Fatalf("freezing the rank's step: %v", err)
			}
			var once sync.Once
			undo = func() { once.Do(func() { os.WriteFile(file, []byte(off), 0) }) }
			t.Cleanup(undo)
			t.Logf("froze %s", dir)
			return undo
		}
	}
	t.Fatalf("no freezer for process %d's step in %s", pid, cg)
	return nil
}

// rankPID is the process id rank wrote to the job's directory.
func rankPID(dir string, rank int) (int, bool) {
	b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("pid-%d", rank)))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil
}
