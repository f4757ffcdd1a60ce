package lifecycle

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/notice"
	"github.com/vigil-hpc/vigil/slurm"
)

func TestJobComment(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name, old, status, want string
	}{
		{"empty", "", "vigil: checking 2 nodes", "vigil: checking 2 nodes"},
		{"user comment kept", "my run 7", "vigil: checking 2 nodes", "my run 7; vigil: checking 2 nodes"},
		{"vigil's part replaced", "my run 7; vigil: checking 2 nodes", "vigil: passed (38 s)", "my run 7; vigil: passed (38 s)"},
		{"only vigil's part", "vigil: checking 2 nodes", "vigil: passed (3 s)", "vigil: passed (3 s)"},
		{"the watcher's part replaced", "a; vigil: hung since 2026-11-29T10:00:00Z on n1", "vigil: passed (3 s)", "a; vigil: passed (3 s)"},
		{"vigil's part bounded", "u", "vigil: " + long, "u; vigil: " + long[:notice.MaxCommentStatus-len("vigil: ")-3] + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := notice.JobComment(tt.old, tt.status)
			if got != tt.want {
				t.Errorf("JobComment(%q, %q) = %q, want %q", tt.old, tt.status, got, tt.want)
			}
			if _, mine := notice.SplitJobComment(got); len(mine) > notice.MaxCommentStatus {
				t.Errorf("vigil's part is %d bytes, want at most %d", len(mine), notice.MaxCommentStatus)
			}
		})
	}
}

func TestStatuses(t *testing.T) {
	fail := []benchmarks.Result{
		{Check: "disk", Status: benchmarks.StatusPass},
		{Check: "gemm", Status: benchmarks.StatusFail, Reason: "GEMMBelowThreshold", Device: "gpu5"},
		{Check: "nvml-ecc", Status: benchmarks.StatusFail},
	}
	if got, want := decide.NodeFailure("n3", fail), "n3 failed gemm (GEMMBelowThreshold gpu5), nvml-ecc"; got != want {
		t.Errorf("NodeFailure = %q, want %q", got, want)
	}
	if got, want := decide.NodeFailure("n3", nil), "n3 failed"; got != want {
		t.Errorf("NodeFailure without results = %q, want %q", got, want)
	}
	if got, want := notice.CheckingStatus(4), "vigil: checking 4 nodes"; got != want {
		t.Errorf("CheckingStatus = %q", got)
	}
	if got, want := notice.CheckingStatus(1), "vigil: checking 1 node"; got != want {
		t.Errorf("CheckingStatus(1) = %q", got)
	}
	if got, want := notice.PassedStatus(37600*time.Millisecond), "vigil: passed (38 s)"; got != want {
		t.Errorf("PassedStatus = %q, want %q", got, want)
	}
	one := notice.FailedStatus("vigil: checking 4 nodes", "n3", "n3 failed gemm (GEMMBelowThreshold gpu5)")
	if want := "vigil: n3 failed gemm (GEMMBelowThreshold gpu5); job requeued"; one != want {
		t.Errorf("FailedStatus = %q, want %q", one, want)
	}
	two := notice.FailedStatus(one, "n2", "n2 failed disk (DiskFull)")
	if want := "vigil: n2 failed disk (DiskFull); n3 failed gemm (GEMMBelowThreshold gpu5); job requeued"; two != want {
		t.Errorf("FailedStatus merged = %q, want %q", two, want)
	}
	again := notice.FailedStatus(two, "n3", "n3 failed nccl")
	if want := "vigil: n2 failed disk (DiskFull); n3 failed nccl; job requeued"; again != want {
		t.Errorf("FailedStatus of the same node = %q, want %q", again, want)
	}
	long := notice.FailedStatus("", "n1", "n1 failed "+strings.Repeat("c", 400))
	if len(long) > notice.MaxCommentStatus || !strings.HasSuffix(long, "...; job requeued") {
		t.Errorf("long notice.FailedStatus = %q (%d bytes)", long, len(long))
	}
	if got := notice.FirstNode([]string{"n2", "n10", "n1"}, "n2"); got != "n1" {
		t.Errorf("FirstNode = %q, want n1", got)
	}
	if got := notice.FirstNode(nil, "n2"); got != "n2" {
		t.Errorf("FirstNode(nil) = %q, want n2", got)
	}
}

// commentSlurm is fakeSlurm with a job comment.
type commentSlurm struct {
	*fakeSlurm
	comment string
	sets    []string
	// inject replaces the comment after the first set (another node's write).
	inject string
}

func (c *commentSlurm) Job(ctx context.Context, id string) (slurm.JobInfo, error) {
	return slurm.JobInfo{ID: id, Comment: c.comment}, nil
}

func (c *commentSlurm) SetJobComment(ctx context.Context, id, comment string) error {
	c.comment = comment
	c.sets = append(c.sets, comment)
	if c.inject != "" {
		c.comment, c.inject = c.inject, ""
	}
	return nil
}

func jobEnv() env {
	return env{"SLURM_JOB_ID": "42", "SLURM_JOB_UID": "1000", "SLURM_JOB_GID": "1000", "SLURM_NODELIST": "n[1-2]",
		"SLURMD_NODENAME": "n1"}
}

func TestRunJobComment(t *testing.T) {
	cases := []struct {
		name, prolog, node, old, inject string
		dry                             bool
		want                            []string
	}{
		{"first node passes", `checks = ["t-pass"]`, "n1", "my run", "", false,
			[]string{"my run; vigil: checking 2 nodes", "my run; vigil: passed (0 s)"}},
		{"first node fails", `checks = ["t-fail"]`, "n1", "my run", "", false,
			[]string{"my run; vigil: checking 2 nodes", "my run; vigil: n1 failed t-fail (Broken gpu0); job requeued"}},
		{"second node fails", `checks = ["t-fail"]`, "n2", "my run; vigil: checking 2 nodes", "", false,
			[]string{"my run; vigil: n2 failed t-fail (Broken gpu0); job requeued"}},
		{"a failure overwritten by the first node is written again", `checks = ["t-fail"]`, "n2", "my run; vigil: checking 2 nodes",
			"my run; vigil: passed (1 s)", false, []string{"my run; vigil: n2 failed t-fail (Broken gpu0); job requeued",
				"my run; vigil: n2 failed t-fail (Broken gpu0); job requeued"}},
		{"second node passes: silent", `checks = ["t-pass"]`, "n2", "my run; vigil: checking 2 nodes", "", false, nil},
		{"passed keeps a failure", `checks = ["t-pass"]`, "n1", "u; vigil: n2 failed t-fail; job requeued",
			"u; vigil: n2 failed t-fail; job requeued", false,
			[]string{"u; vigil: checking 2 nodes"}},
		{"off", "checks = [\"t-fail\"]\njob_comment = false", "n1", "", "", false, nil},
		{"dry run", `checks = ["t-fail"]`, "n1", "", "", true, nil},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			_, conf := setup(t, tt.prolog)
			cs := &commentSlurm{fakeSlurm: &fakeSlurm{node: slurm.Node{Name: tt.node, State: "IDLE"}}, comment: tt.old, inject: tt.inject}
			e := jobEnv()
			e["SLURMD_NODENAME"] = tt.node
			o := runWith(t, conf, decide.ModeProlog, nil, e, func(o *Options) {
				o.Node, o.Slurm, o.DryRun = tt.node, cs, tt.dry
				o.Sleep = func(time.Duration) {}
			})
			if strings.Join(cs.sets, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("comments set:\n%s\nwant:\n%s\n(notes %v)", strings.Join(cs.sets, "\n"), strings.Join(tt.want, "\n"), o.Report.Notes)
			}
		})
	}
}
