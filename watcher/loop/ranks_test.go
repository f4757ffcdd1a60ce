package loop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/watcher/coord"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/sample"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// The watcher on the batch host reads its node's ranks from its real
// processes' environment each period; the layout record it writes holds
// them, and a new, whole one follows when they change (an elastic restart
// adds ranks), none when they stay; a "[rankN]:" line is placed through it.
func TestLayoutRecordFollowsTheRankMap(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "slurm-7.out")
	appendFile(t, out, "")
	log, _ := test.NewNullLogger()
	logs := OpenJobLogs(context.Background(), func(context.Context) (string, string, string, error) { return out, "", "n1", nil },
		filepath.Join(dir, "noroot"), "n1", "7", []string{"n1", "n2"}, log)
	defer logs.Close()
	start := func(env ...string) int {
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
		return cmd.Process.Pid
	}
	torchrun := start("SLURM_PROCID=0", "SLURM_STEP_ID=0")
	pids := []int{torchrun, start("SLURM_PROCID=0", "SLURM_STEP_ID=0", "RANK=0", "WORLD_SIZE=4"),
		start("SLURM_PROCID=0", "SLURM_STEP_ID=0", "RANK=1", "WORLD_SIZE=4")}
	s := &sample.Sampler{Root: "/", PIDs: func() ([]int, error) { return pids, nil }}
	view := coord.NewLone(DefaultSettings().Hang)
	logs.Ranks = view.Ranks
	var rec bytes.Buffer
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	l := &Loop{Period: time.Second, Sampler: &fakeSampler{}, Detector: &scriptDetector{}, Record: trace.NewWriter(&rec),
		Logs: logs, Job: view, Ranks: s.Ranks, Log: log}
	step := func(i int) {
		if _, err := l.Step(context.Background(), at.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	step(0)
	step(1)
	pids = append(pids, start("SLURM_PROCID=0", "SLURM_STEP_ID=0", "RANK=3", "WORLD_SIZE=4"))
	step(2)
	step(3)
	var layouts []joblog.Layout
	r := trace.NewReader(&rec)
	for {
		s, err := r.Next()
		if err != nil {
			break
		}
		if s.IsLog() && s.Log.Stream == trace.StreamLayout {
			var lo joblog.Layout
			if err := json.Unmarshal([]byte(s.Log.Line), &lo); err != nil {
				t.Fatal(err)
			}
			layouts = append(layouts, lo)
		}
	}
	want := []map[int]string{{0: "n1", 1: "n1"}, {0: "n1", 1: "n1", 3: "n1"}}
	if len(layouts) != len(want) {
		t.Fatalf("%d layout records %+v, want %d", len(layouts), layouts, len(want))
	}
	for i, lo := range layouts {
		if !maps.Equal(lo.Ranks, want[i]) || len(lo.Nodes) != 2 {
			t.Errorf("layout record %d: %+v, want ranks %v and the job's nodes", i, lo, want[i])
		}
	}
	if src := joblog.Attribute("[rank3]: RuntimeError: boom", layouts[1]); src.Host != "n1" || src.By != joblog.ByRank {
		t.Errorf("[rank3]: attributed %+v", src)
	}
	if src := joblog.Attribute("[rank2]: RuntimeError: boom", layouts[1]); src.Host != "" {
		t.Errorf("[rank2], in no one's environment, attributed %+v", src)
	}
}
