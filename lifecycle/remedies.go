package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/record"
	"github.com/vigil-hpc/vigil/report"
)

// The remedy history: every remedy vigil made, per node, in the state
// directory (remedies.json beside record-paths.json and
// failed-drains.json), so that the repair ladder counts a component's
// remedies across runs and reboots. It is node-local; one file holds the
// nodes of a machine that runs several slurmd. Each change is a read,
// update and atomic write (temp file, fsync, rename) under an exclusive
// lock, so that two runs at once do not lose a record and a crash leaves
// the old file or the new one. A file that is not valid JSON is kept
// aside (record.CorruptName) and a new one started, said loudly: the counts then
// start again from zero.

// remediesFile is the state file of the remedy history; remediesLock its
// lock, in the state directory's root-only lock directory (osutil.Lock).
const (
	remediesFile = "remedies.json"
	remediesLock = "remedies.lock"
)

// stateLockBound is how long a run waits for a lock on a state file:
// another run holds it for a read and a write.
const stateLockBound = 10 * time.Second

// remedyKeep bounds what the history keeps: records older than this are
// dropped whatever the window, and at most remedyKeepN per node.
const (
	remedyKeep  = 90 * 24 * time.Hour
	remedyKeepN = 100
)

// remedyState is the state file.
type remedyState struct {
	// Nodes holds each node's remedies, oldest first.
	Nodes map[string][]decide.RemedyRecord `json:"nodes"`
}

// remedyStore is the remedy history in a state directory; notes and log
// record what goes wrong with it.
type remedyStore struct {
	path  string
	notes notes
	log   logrus.FieldLogger
}

// remedies is the remedy history in the state directory dir.
func remedies(dir string, n notes, log logrus.FieldLogger) remedyStore {
	return remedyStore{path: filepath.Join(dir, remediesFile), notes: n, log: log}
}

// read returns node's remedies. A missing file holds none; an unreadable
// one too, with a note (the ladder then starts from its first rung).
func (s remedyStore) read(node string) []decide.RemedyRecord {
	st, err := s.load()
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		s.notes.add("reading the remedy history %s: %v: the repair ladder counts no earlier remedies this run", s.path, err)
		s.log.WithError(err).Error("reading the remedy history: the repair ladder counts no earlier remedies this run")
	}
	return st.Nodes[node]
}

func (s remedyStore) load() (remedyState, error) {
	var st remedyState
	b, err := os.ReadFile(s.path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return remedyState{}, fmt.Errorf("%w: %v", record.ErrCorruptState, err)
	}
	return st, nil
}

// add records rec for node at now, dropping the node's records older than
// keep (the window, at least remedyKeep).
func (s remedyStore) add(node string, rec decide.RemedyRecord, now time.Time, keep time.Duration) {
	if err := s.update(node, rec, now, max(keep, remedyKeep)); err != nil {
		s.notes.add("recording the remedy in %s: %v: the repair ladder will not count it", s.path, err)
		s.log.WithError(err).Error("recording the remedy: the repair ladder will not count it")
	}
}

func (s remedyStore) update(node string, rec decide.RemedyRecord, now time.Time, keep time.Duration) error {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o755); err != nil {
		return err
	}
	unlock, err := osutil.Lock(context.Background(), filepath.Dir(s.path), remediesLock, stateLockBound)
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(s.path + ".lock"); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.WithError(err).Warn("removing the remedy history's old lock file")
	}
	st, err := s.load()
	switch {
	case errors.Is(err, record.ErrCorruptState):
		aside := record.CorruptName(s.path, now)
		if rerr := os.Rename(s.path, aside); rerr != nil {
			return fmt.Errorf("%v; cannot keep it aside: %w", err, rerr)
		}
		s.notes.add("CORRUPT STATE FILE %s (%v): kept aside as %s, a new one started; earlier remedies are not counted", s.path, err, aside)
		s.log.WithError(err).WithField("aside", aside).Error("CORRUPT STATE FILE: the remedy history was kept aside and a new one started")
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return err
	}
	if st.Nodes == nil {
		st.Nodes = map[string][]decide.RemedyRecord{}
	}
	var kept []decide.RemedyRecord
	for _, r := range append(st.Nodes[node], rec) {
		if r.At.After(now.Add(-keep)) {
			kept = append(kept, r)
		}
	}
	if len(kept) > remedyKeepN {
		kept = kept[len(kept)-remedyKeepN:]
	}
	st.Nodes[node] = kept
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return report.WriteAtomic(s.path, append(b, '\n'), 0o644)
}
