package slurm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/internal/osutil"
)

// CommentSep separates the user's part of a job comment from vigil's part
// ("<user comment>; vigil: passed (38 s)").
const CommentSep = "; "

// SplitComment splits a job comment into the user's part and vigil's part,
// which starts at the last ReasonPrefix ("vigil: ") and runs to the end.
// The prolog's status and the watcher's hang notice are both vigil's part:
// each replaces it, and the user's text is kept.
func SplitComment(c string) (user, vigil string) {
	i := strings.LastIndex(c, ReasonPrefix+" ")
	if i < 0 {
		return c, ""
	}
	return strings.TrimSuffix(strings.TrimRight(c[:i], " "), strings.TrimSpace(CommentSep)), c[i:]
}

// JoinComment is the job comment of the user's part and vigil's part.
func JoinComment(user, vigil string) string {
	if user == "" {
		return vigil
	}
	return user + CommentSep + vigil
}

// JobCommenter reads and writes a job's comment (Client does both).
type JobCommenter interface {
	Job(ctx context.Context, id string) (JobInfo, error)
	SetJobComment(ctx context.Context, id, comment string) error
}

// WriteJobComment sets the job's comment to next(the comment as it is) when
// next says so (ok) and that changes it, reading and writing once: for a
// comment that may lose to another writer (vigil's "checking" and
// "passed" give way to a node's failure). written says it wrote.
func WriteJobComment(ctx context.Context, c JobCommenter, id string, next func(old string) (string, bool)) (written bool, err error) {
	info, err := c.Job(ctx, id)
	if err != nil {
		return false, err
	}
	comment, ok := next(info.Comment)
	if !ok || comment == info.Comment {
		return false, nil
	}
	if err := c.SetJobComment(ctx, id, comment); err != nil {
		return false, err
	}
	return true, nil
}

// commentAttempts bounds CommentUpdate.Run's rounds of read, write, read back.
const commentAttempts = 5

// CommentUpdate writes a job's comment that other nodes write at once
// (Run), with its wait before each read-back injected, so that tests wait
// no real time.
type CommentUpdate struct {
	// Sleep waits d, or until ctx ends (then it returns ctx's error);
	// nil waits in real time.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Run sets the job's comment to next(the comment as it is) when next says
// so (ok) and that changes it; written says it wrote. Slurm has no
// compare-and-set, so two nodes that read, change and
// write the comment at once can lose one change. Run therefore
// reads the comment back, after four times the time its own read and write
// took (at least 250 ms, at most 4 s) and a random as much again: another
// writer that read before its write has written by then, unless its
// scontrol calls were that much slower, and writers that collided do not
// meet again. When the comment it finds is not its own, it applies
// next to that one and writes again if that changes it, for
// commentAttempts rounds in all. next must merge (keep what others wrote
// that it still wants), so that the writers converge.
func (u CommentUpdate) Run(ctx context.Context, c JobCommenter, id string, next func(old string) (string, bool)) (written bool, err error) {
	sleep := u.Sleep
	if sleep == nil {
		sleep = osutil.Sleep
	}
	start := time.Now()
	info, err := c.Job(ctx, id)
	if err != nil {
		return false, err
	}
	comment, ok := next(info.Comment)
	if !ok || comment == info.Comment {
		return false, nil
	}
	for i := 1; ; i++ {
		if err := c.SetJobComment(ctx, id, comment); err != nil {
			return written, err
		}
		written = true
		d := min(max(4*time.Since(start), 250*time.Millisecond), 4*time.Second)
		// The jitter keeps writers that collided from meeting again.
		if err := sleep(ctx, d+rand.N(d)); err != nil {
			return true, nil // written; only the check was cut short
		}
		start = time.Now()
		info, err = c.Job(ctx, id)
		if err != nil {
			return true, fmt.Errorf("reading back job %s's comment: %w", id, err)
		}
		if info.Comment == oneLine(comment) || i >= commentAttempts {
			return true, nil
		}
		again, more := next(info.Comment)
		if !more || again == info.Comment {
			return true, nil
		}
		comment = again
	}
}
