package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm/session"
)

// When vigil cannot drain a node whose prolog failed (slurmctld down,
// scontrol broken), the prolog still fails, and Slurm then drains the node
// itself with the reason "Prolog error", which is not vigil's and so is
// never lifted by vigil's drain rule. vigil remembers its failed drain in
// the state directory; a later run on the node that passes every check,
// while the node is drained with exactly Slurm's "Prolog error" set after
// that failure, lifts that drain (and only that one), as if it had been
// vigil's own.

// failedDrainFile is the state file of the failed drains, by node.
const failedDrainFile = "failed-drains.json"

// failedDrainStore is the state file of the failed drains; notes records
// what goes wrong with it in the run's report.
type failedDrainStore struct {
	path  string
	notes notes
}

// failedDrains is the failed-drain state file in the state directory dir.
func failedDrains(dir string, n notes) failedDrainStore {
	return failedDrainStore{path: filepath.Join(dir, failedDrainFile), notes: n}
}

// read reads the state file; a missing file is empty, an unreadable or
// corrupt one is empty too and says so in a note (vigil then lifts nothing
// it has no record of).
func (s failedDrainStore) read() map[string]decide.FailedDrain {
	b, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]decide.FailedDrain{}
	}
	m := map[string]decide.FailedDrain{}
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		s.notes.add("reading %s: %v: vigil lifts no Slurm \"Prolog error\" drain this run", s.path, err)
		return map[string]decide.FailedDrain{}
	}
	return m
}

func (s failedDrainStore) write(m map[string]decide.FailedDrain) {
	if len(m) == 0 {
		if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.notes.add("removing %s: %v", s.path, err)
		}
		return
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	err := os.MkdirAll(filepath.Dir(s.path), 0o755)
	if err == nil {
		err = report.WriteAtomic(s.path, append(b, '\n'), 0o644)
	}
	if err != nil {
		s.notes.add("recording the failed drain in %s: %v", s.path, err)
	}
}

// remember records that vigil could not drain node (fd).
func (s failedDrainStore) remember(node string, fd decide.FailedDrain) {
	m := s.read()
	m[node] = fd
	s.write(m)
	s.notes.add("vigil could not drain %s (%s); remembered in %s, so that a later passing run lifts the \"%s\" drain Slurm sets when this prolog fails",
		node, fd.Error, s.path, decide.SlurmPrologError)
}

// reasonResumer is the part of slurm.Client that resumes a node only
// while it carries a given reason.
type reasonResumer interface {
	ResumeIfReason(ctx context.Context, node, reason string) (bool, error)
}

// liftPrologError resumes node, which passed this run and which Slurm
// drained for a prolog vigil failed but could not drain (fd, whose record
// is then dropped from st), and returns the action taken. It returns false
// when the client cannot resume by reason or the node no longer carries
// Slurm's reason.
func liftPrologError(ctx context.Context, sl *session.Access, st failedDrainStore, node string, fd decide.FailedDrain, log logrus.FieldLogger) (report.Action, bool) {
	rr, canResume := sl.RawClient().(reasonResumer)
	if !canResume {
		return report.Action{}, false
	}
	act := report.Action{Kind: report.ActionResume, Reason: decide.SlurmPrologError, Lifted: []string{decide.SlurmPrologError}}
	cctx, cancel := sl.Bound(ctx)
	defer cancel()
	resumed, err := rr.ResumeIfReason(cctx, node, decide.SlurmPrologError)
	if err != nil {
		act.Error = err.Error()
		log.WithError(err).Error("resuming the node from Slurm's Prolog error")
		return act, true
	}
	if !resumed {
		return report.Action{}, false
	}
	act.Done = true
	m := st.read()
	delete(m, node)
	st.write(m)
	log.WithField("failed_drain", fd.Time.Format(time.RFC3339)).Info("node resumed: Slurm drained it with \"" + decide.SlurmPrologError +
		"\" for a prolog vigil failed (" + fd.Reason + ") but could not drain itself; this run passed every check")
	return act, true
}
