package notice

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/session"
)

// The prolog tells the job's user what it is doing in the job's comment,
// after the user's own text:
//
//	<user comment>; vigil: checking 4 nodes
//	<user comment>; vigil: passed (38 s)
//	<user comment>; vigil: n3 failed gemm (GEMMBelowThreshold gpu5); job requeued
//
// vigil's part starts with slurm.ReasonPrefix and is replaced, never
// appended twice; the user's part is kept as it is. Only two kinds of node
// write, so that a 64-node job does not make 64 writers: the first node of
// the job's sorted node list (checking, passed) and a node that fails (its
// own failure, added to those already reported). The first node does not
// replace a failure with "passed".
//
// The first node reads the comment and then writes it: a failure written
// in between, or before its "checking", would be lost. A failing node
// therefore writes its failure before it drains itself, reads the comment
// again CommentSettle later and writes its failure again when it is gone
// (the failing prolog exits that much later). Two writes that land within
// a few milliseconds can still lose the failure from the comment; the
// node's report and result file keep it. A job that ended before a failing
// prolog requeued it (a batch script shorter than the slowest prolog)
// takes no comment: Slurm answers "Job has already finished".

// commentSep separates the failures of several nodes in vigil's part.
const commentSep = "; "

// CommentSettle are the pauses after which a failing node checks that its
// failure is still in the job's comment.
var CommentSettle = []time.Duration{time.Second, 2 * time.Second}

// MaxCommentStatus bounds vigil's part of the job comment, in bytes.
const MaxCommentStatus = 200

const requeuedSuffix = "; job requeued"

// SplitJobComment splits a job comment into the user's part and vigil's
// part (slurm.SplitComment, which the watcher's hang notice shares).
func SplitJobComment(c string) (user, vigil string) { return slurm.SplitComment(c) }

// JobComment is the comment old with vigil's part replaced by status
// (cut to MaxCommentStatus bytes); the user's part is kept.
func JobComment(old, status string) string {
	user, _ := SplitJobComment(old)
	status = cutStatus(status, MaxCommentStatus)
	return slurm.JoinComment(user, status)
}

// cutStatus cuts s to at most n bytes on a rune boundary, ending in "...".
func cutStatus(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n-3]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "..."
}

// CheckingStatus is vigil's part while the prolog checks n nodes.
func CheckingStatus(n int) string {
	if n == 1 {
		return slurm.ReasonPrefix + " checking 1 node"
	}
	return fmt.Sprintf("%s checking %d nodes", slurm.ReasonPrefix, n)
}

// PassedStatus is vigil's part after the first node passed in d.
func PassedStatus(d time.Duration) string {
	return fmt.Sprintf("%s passed (%d s)", slurm.ReasonPrefix, int(d.Round(time.Second)/time.Second))
}

// FailedStatus is vigil's part after node failed with failure (from
// NodeFailure), merged with the failures of other nodes that old's vigil
// part already reports.
func FailedStatus(old, node, failure string) string {
	_, mine := SplitJobComment(old)
	var items []string
	if strings.HasSuffix(mine, requeuedSuffix) {
		body := strings.TrimSuffix(strings.TrimPrefix(mine, slurm.ReasonPrefix+" "), requeuedSuffix)
		for _, it := range strings.Split(body, commentSep) {
			if strings.Contains(it, " failed") && !strings.HasPrefix(it, node+" ") {
				items = append(items, it)
			}
		}
	}
	items = append(items, failure)
	slices.Sort(items)
	s := slurm.ReasonPrefix + " " + strings.Join(items, commentSep)
	return cutStatus(s, MaxCommentStatus-len(requeuedSuffix)) + requeuedSuffix
}

// FirstNode is the first of the job's nodes in sorted order, the one that
// writes "checking" and "passed"; self when the job's node list is unknown.
func FirstNode(nodes []string, self string) string {
	if len(nodes) == 0 {
		return self
	}
	return slices.Min(nodes)
}

// jobCommenter is the part of slurm.Client that reads and sets a job's comment.
type jobCommenter = slurm.JobCommenter

// CommentWriter writes vigil's part of one prolog's job comment; a nil
// one writes nothing. failure is this node's failure once it was written.
type CommentWriter struct {
	cli      jobCommenter
	job      *slurm.Job
	node     string
	log      logrus.FieldLogger
	note     func(format string, args ...any)
	bound    func(context.Context) (context.Context, context.CancelFunc)
	sleep    func(time.Duration)
	deadline time.Time
	// saw hears, when vigil's part of the comment is read before this
	// node's failure is written, whether it already reports another
	// node's failure (the job's user's notice: UserNotice.sawComment).
	saw     func(othersFailed bool)
	failure string
}

// NewCommentWriter returns the comment writer of a prolog's job, nil when
// the Slurm client cannot set a job's comment (and in a dry run, which has
// no client).
func NewCommentWriter(sl *session.Access, job *slurm.Job, node string, sleep func(time.Duration), saw func(othersFailed bool), log logrus.FieldLogger, note func(format string, args ...any)) *CommentWriter {
	if sl.Client() == nil {
		return nil
	}
	c, ok := sl.RawClient().(jobCommenter)
	if !ok {
		return nil
	}
	return &CommentWriter{cli: c, job: job, node: node, log: log, note: note, bound: sl.Bound,
		sleep: sleep, deadline: sl.Deadline, saw: saw}
}

// firstNode reports whether this node writes "checking" and "passed".
func (c *CommentWriter) firstNode() bool {
	return FirstNode(c.job.Nodes, c.node) == c.node
}

// Checking says "checking N nodes" from the first node.
func (c *CommentWriter) Checking(ctx context.Context) {
	if c == nil || !c.firstNode() {
		return
	}
	n := max(len(c.job.Nodes), 1)
	// "checking" replaces the last run's failure; written once, it gives
	// way to a failure another node writes at the same moment.
	if err := c.set(ctx, func(string) (string, bool) { return CheckingStatus(n), true }); err != nil {
		c.log.WithError(err).Warn("setting the job's comment")
		c.note("job comment not set: %v", err)
	}
}

// Failed writes this node's failure before vigil drains it (a job that
// Slurm is requeueing refuses updates for a while), and remembers it for
// result.
func (c *CommentWriter) Failed(ctx context.Context, failure string) {
	if c == nil {
		return
	}
	c.failure = failure
	if err := c.set(ctx, c.missingFailure); err != nil {
		c.log.WithError(err).Warn("setting the job's comment")
		c.note("job comment not set: %v", err)
	}
}

func (c *CommentWriter) missingFailure(mine string) (string, bool) {
	c.saw(isFailedStatus(mine) && !strings.Contains(mine, c.failure))
	return FailedStatus(mine, c.node, c.failure), !strings.Contains(mine, c.failure)
}

// RunEnd is how a run ended, for the job's comment.
type RunEnd struct {
	// Code is the exit code.
	Code int
	// Passed is set when the verdict is pass.
	Passed bool
	// Took is how long the run took.
	Took time.Duration
	// BadLinks are the job's bad links that blame nobody.
	BadLinks []string
}

// Result says how the run ended, after the report was written (errors go
// to the log only): the first node "passed" unless a failure is already
// shown; a failing node of a multi-node job checks that its failure is
// still there.
func (c *CommentWriter) Result(ctx context.Context, end RunEnd) {
	if c == nil {
		return
	}
	switch {
	case end.Code == decide.ExitFail && c.failure != "" && len(c.job.Nodes) > 1:
		// The first node may have read the comment just before the
		// failure was written and write "checking" or "passed" just after
		// it: look again.
		for _, d := range CommentSettle {
			if time.Until(c.deadline) < d+time.Second {
				break
			}
			c.pause(d)
			// Slurm refuses updates while it requeues the job ("Job has
			// already finished"): the next look may get through.
			if err := c.set(ctx, c.missingFailure); err != nil {
				c.log.WithError(err).Info("checking the job's comment again")
			}
		}
	case end.Code == decide.ExitOK && end.Passed && c.firstNode():
		status := PassedStatus(end.Took)
		if len(end.BadLinks) > 0 {
			status += "; bad link " + strings.Join(end.BadLinks, ", ") + ", nobody drained"
		}
		err := c.set(ctx, func(mine string) (string, bool) {
			return status, !isFailedStatus(mine)
		})
		if err != nil {
			c.log.WithError(err).Warn("setting the job's comment")
		}
	}
}

// set sets the job's comment with vigil's part replaced by next(vigil's
// part), when next says so: a node's failure through slurm.CommentUpdate
// (read, write, read back and merge again when another node wrote at
// once), "checking" and "passed", which give way to a failure, through
// slurm.WriteJobComment (once).
func (c *CommentWriter) set(ctx context.Context, next func(mine string) (string, bool)) error {
	cctx, cancel := c.bound(ctx)
	defer cancel()
	update := slurm.WriteJobComment
	if c.failure != "" {
		update = slurm.CommentUpdate{Sleep: c.pauseCtx}.Run
	}
	var status string
	written, err := update(cctx, c.cli, c.job.ID, func(old string) (string, bool) {
		_, mine := SplitJobComment(old)
		st, ok := next(mine)
		if !ok {
			return old, false
		}
		status = st
		return JobComment(old, st), true
	})
	if err != nil || !written {
		return err
	}
	c.log.WithField("comment", status).Info("job comment set")
	return nil
}

func (c *CommentWriter) pause(d time.Duration) {
	if c.sleep != nil {
		c.sleep(d)
		return
	}
	time.Sleep(d)
}

// pauseCtx waits d through the run's sleep, or in real time until ctx ends
// when that is nil: the wait before a failure's comment is read back.
func (c *CommentWriter) pauseCtx(ctx context.Context, d time.Duration) error {
	if c.sleep == nil {
		return osutil.Sleep(ctx, d)
	}
	c.sleep(d)
	return ctx.Err()
}

// isFailedStatus reports whether vigil's part reports a failed node.
func isFailedStatus(mine string) bool { return strings.HasSuffix(mine, requeuedSuffix) }
