package loop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
)

// commentJob is a slurm.JobCommenter over one job.
type commentJob struct{ info slurm.JobInfo }

func (c *commentJob) Job(context.Context, string) (slurm.JobInfo, error) { return c.info, nil }
func (c *commentJob) SetJobComment(_ context.Context, _ string, comment string) error {
	c.info.Comment = comment
	return nil
}

func TestNotWatchingTellsTheJob(t *testing.T) {
	out := filepath.Join(t.TempDir(), "slurm-42.out")
	env := map[string]string{"SLURM_JOB_ID": "42", "SLURMD_NODENAME": "n1", "SLURM_JOB_NODELIST": "n[1-2]"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	why := plainError("vigil-watch: VIGIL_HANG_DETECT_TIME=\"2\": invalid value 2m0s (see vigil-watch --help)\n" +
		"vigil-watch: /etc/vigil/vigil.toml:3: watch.periods: unknown key\n")
	if want := `VIGIL_HANG_DETECT_TIME="2": invalid value 2m0s; /etc/vigil/vigil.toml:3: watch.periods: unknown key`; why != want {
		t.Fatalf("plainError = %q, want %q", why, want)
	}

	t.Run("batch host: comment and output", func(t *testing.T) {
		if err := os.WriteFile(out, []byte("training starts\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		c := &commentJob{info: slurm.JobInfo{ID: "42", Comment: "my run", BatchHost: "n1", Fields: map[string]string{"StdErr": out}}}
		if err := NotWatching(context.Background(), c, lookup, why, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if want := "my run; vigil: not watching: " + why; c.info.Comment != want {
			t.Errorf("comment = %q, want %q", c.info.Comment, want)
		}
		b, _ := os.ReadFile(out)
		if want := "training starts\nvigil-watch: not watching this job: " + why + "\n"; string(b) != want {
			t.Errorf("job output = %q, want %q", b, want)
		}
	})
	t.Run("another node: comment only", func(t *testing.T) {
		os.WriteFile(out, nil, 0o644)
		c := &commentJob{info: slurm.JobInfo{ID: "42", BatchHost: "n2", Fields: map[string]string{"StdErr": out}}}
		if err := NotWatching(context.Background(), c, lookup, why, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(out); len(b) != 0 || !strings.HasPrefix(c.info.Comment, "vigil: not watching: ") {
			t.Errorf("output %q, comment %q: want the comment only", b, c.info.Comment)
		}
	})
	t.Run("output not there yet", func(t *testing.T) {
		c := &commentJob{info: slurm.JobInfo{ID: "42", BatchHost: "n1", Fields: map[string]string{"StdErr": out + ".later"}}}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := NotWatching(ctx, c, lookup, why, time.Millisecond); err == nil || !strings.Contains(err.Error(), "never appeared") {
			t.Errorf("err = %v, want the output file's absence", err)
		}
	})
	t.Run("not in a job", func(t *testing.T) {
		c := &commentJob{}
		if err := NotWatching(context.Background(), c, func(string) (string, bool) { return "", false }, why, time.Millisecond); err != nil || c.info.Comment != "" {
			t.Errorf("outside a job: %v, comment %q", err, c.info.Comment)
		}
	})
}

func TestNotWatchingNoteIsBounded(t *testing.T) {
	n := NotWatchingNote(strings.Repeat("é", 300))
	if len(n) > MaxNotWatchingNote || !strings.HasSuffix(n, "...") || !strings.HasPrefix(n, "vigil: not watching: ") {
		t.Errorf("note of %d bytes: %q", len(n), n)
	}
}
