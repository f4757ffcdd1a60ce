package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// When vigil cannot drain a node whose prolog failed (slurmctld down,
// scontrol broken), the prolog still fails, and Slurm then drains the node
// itself with the reason "Prolog error", which is not vigil's and so is
// never lifted by vigil's drain rule. vigil remembers its failed drain in
// the state directory; a later run on the node that passes every check,
// while the node is drained with exactly Slurm's "Prolog error" set after
// that failure, lifts that drain (and only that one), as if it had been
// vigil's own.

// SlurmPrologError is the reason Slurm drains a node with when its prolog
// fails.
const SlurmPrologError = "Prolog error"

// failedDrainFile is the state file of the failed drains, by node.
const failedDrainFile = "failed-drains.json"

// FailedDrain is one drain vigil could not make.
type FailedDrain struct {
	// Time is when the drain failed.
	Time time.Time `json:"time"`
	// Reason is the reason vigil wanted to set.
	Reason string `json:"reason"`
	// Job is the job whose prolog failed ("" outside a prolog).
	Job string `json:"job,omitempty"`
	// Error is why the drain failed.
	Error string `json:"error"`
}

// failedDrainStore is the state file of the failed drains; note records
// what goes wrong with it in the run's report.
type failedDrainStore struct {
	path string
	note func(format string, args ...any)
}

// failedDrains is the run's failed-drain state file, in the state directory.
func (r *run) failedDrains() failedDrainStore {
	return failedDrainStore{path: filepath.Join(stateDir(r.o), failedDrainFile), note: r.note}
}

// read reads the state file; a missing file is empty, an unreadable or
// corrupt one is empty too and says so in a note (vigil then lifts nothing
// it has no record of).
func (s failedDrainStore) read() map[string]FailedDrain {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]FailedDrain{}
	}
	m := map[string]FailedDrain{}
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		s.note("reading %s: %v: vigil lifts no Slurm \"Prolog error\" drain this run", s.path, err)
		return map[string]FailedDrain{}
	}
	return m
}

func (s failedDrainStore) write(m map[string]FailedDrain) {
	if len(m) == 0 {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.note("removing %s: %v", s.path, err)
		}
		return
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	err := os.MkdirAll(filepath.Dir(s.path), 0o755)
	if err == nil {
		err = report.WriteAtomic(s.path, append(b, '\n'), 0o644)
	}
	if err != nil {
		s.note("recording the failed drain in %s: %v", s.path, err)
	}
}

// rememberFailedDrain records that vigil could not drain this node.
func (r *run) rememberFailedDrain(reason string, err error) {
	st := r.failedDrains()
	m := st.read()
	fd := FailedDrain{Time: r.o.Now().UTC(), Reason: reason, Error: err.Error()}
	if r.job != nil {
		fd.Job = r.job.ID
	}
	m[r.rep.Node] = fd
	st.write(m)
	r.note("vigil could not drain %s (%v); remembered in %s, so that a later passing run lifts the \"%s\" drain Slurm sets when this prolog fails",
		r.rep.Node, err, st.path, SlurmPrologError)
}

// reasonResumer is the part of slurm.Client that resumes a node only
// while it carries a given reason.
type reasonResumer interface {
	ResumeIfReason(ctx context.Context, node, reason string) (bool, error)
}

// liftsPrologError reports whether n is drained by Slurm for the failed
// prolog vigil could not drain itself: reason exactly SlurmPrologError,
// set no earlier than a minute before vigil's recorded failed drain.
func liftsPrologError(n slurm.Node, fd FailedDrain, ok bool) bool {
	if !ok || !n.Drained() || n.Reason != SlurmPrologError || n.ForeignState() != "" {
		return false
	}
	return n.ReasonTime.IsZero() || !n.ReasonTime.Before(fd.Time.Add(-time.Minute))
}

// liftPrologError resumes a node that passed this run and that Slurm
// drained for a prolog vigil failed but could not drain (fd, whose record
// is then dropped). It returns false when the client cannot resume by
// reason or the node no longer carries Slurm's reason.
func (r *run) liftPrologError(ctx context.Context, fd FailedDrain) bool {
	rr, canResume := r.rawSlurm().(reasonResumer)
	if !canResume {
		return false
	}
	rep := r.rep
	rep.Action = report.Action{Kind: report.ActionResume, Reason: SlurmPrologError, Lifted: []string{SlurmPrologError}}
	cctx, cancel := r.actionCtx(ctx)
	defer cancel()
	resumed, err := rr.ResumeIfReason(cctx, rep.Node, SlurmPrologError)
	if err != nil {
		rep.Action.Error = err.Error()
		r.log.WithError(err).Error("resuming the node from Slurm's Prolog error")
		return true
	}
	if !resumed {
		rep.Action = report.Action{}
		return false
	}
	rep.Action.Done = true
	st := r.failedDrains()
	m := st.read()
	delete(m, rep.Node)
	st.write(m)
	r.log.WithField("failed_drain", fd.Time.Format(time.RFC3339)).Info("node resumed: Slurm drained it with \"" + SlurmPrologError +
		"\" for a prolog vigil failed (" + fd.Reason + ") but could not drain itself; this run passed every check")
	return true
}
