package slurm_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// addToken is a merging update: vigil's part of the comment lists tokens,
// and each writer adds its own to whatever it finds.
func addToken(tok string) func(string) (string, bool) {
	return func(old string) (string, bool) {
		user, mine := slurm.SplitComment(old)
		toks := strings.Fields(strings.TrimPrefix(mine, slurm.ReasonPrefix+" "))
		if slices.Contains(toks, tok) {
			return old, true
		}
		toks = append(toks, tok)
		slices.Sort(toks)
		return slurm.JoinComment(user, slurm.ReasonPrefix+" "+strings.Join(toks, " ")), true
	}
}

// TestE2EJobCommentWriters: six writers add their part to a real job's
// comment at the same moment, as the nodes of a job that all fail their
// prolog or all hang do. Slurm has no compare-and-set; CommentUpdate's
// read-back must leave every part in the comment, and the user's text.
func TestE2EJobCommentWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: starts a Slurm cluster")
	}
	c := slurmtest.Start(t, slurmtest.Options{Nodes: 1})
	cl := c.Client()
	job := c.Sbatch(t, "sleep 120\n", "--comment=my run 7")
	c.WaitJob(t, job, 60*time.Second, "RUNNING")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	const writers, rounds = 6, 3
	for r := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		var toks []string
		for w := range writers {
			tok := fmt.Sprintf("r%dn%d", r, w)
			toks = append(toks, tok)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := (slurm.CommentUpdate{}).Run(ctx, cl, job, addToken(tok)); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("round %d: %v", r, err)
		}
		info, err := cl.Job(ctx, job)
		if err != nil {
			t.Fatal(err)
		}
		user, mine := slurm.SplitComment(info.Comment)
		for _, tok := range toks {
			if !strings.Contains(mine, tok) {
				t.Errorf("round %d: comment %q lost %s", r, info.Comment, tok)
			}
		}
		if user != "my run 7" {
			t.Errorf("round %d: the user's part became %q", r, user)
		}
	}
	if out, err := c.Command(t, "scancel", job); err != nil {
		t.Fatalf("scancel: %v\n%s", err, out)
	}
}
