package idle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/vigil-hpc/vigil/internal/osutil"
)

// The sweep's own records, under [idle] state_dir: sweep.json holds its
// submissions by node (the ledger), lock/sweep.lock keeps two sweeps from
// running at once.

// ledgerVersion is the version of sweep.json.
const ledgerVersion = 1

type ledgerFile struct {
	V           int                   `json:"v"`
	Submissions map[string]Submission `json:"submissions"`
}

func ledgerPath(stateDir string) string { return filepath.Join(stateDir, "sweep.json") }

// readLedger reads the submissions of sweep.json; a missing file is none.
// A file that is not a valid ledger is renamed to
// sweep.json.corrupt-TIME (so that it is neither trusted nor lost; left
// in place in a dry run) and reported in err, with no submissions.
func readLedger(stateDir string, now time.Time, dry bool) (map[string]Submission, error) {
	path := ledgerPath(stateDir)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]Submission{}, nil
	}
	if err != nil {
		return nil, err
	}
	var l ledgerFile
	if err := json.Unmarshal(b, &l); err != nil || l.V != ledgerVersion {
		if dry {
			return map[string]Submission{}, fmt.Errorf("%s is not a valid ledger (version %d, %v)", path, l.V, err)
		}
		aside := path + ".corrupt-" + now.UTC().Format("20060102T150405Z")
		if rerr := os.Rename(path, aside); rerr != nil {
			return nil, fmt.Errorf("%s is not a valid ledger (%v) and cannot be moved aside: %w", path, err, rerr)
		}
		return map[string]Submission{}, fmt.Errorf("%s was not a valid ledger (version %d, %v): moved to %s; the nodes count as never submitted", path, l.V, err, aside)
	}
	if l.Submissions == nil {
		l.Submissions = map[string]Submission{}
	}
	return l.Submissions, nil
}

// writeLedger writes the submissions atomically, without those older than
// keep: they no longer decide anything.
func writeLedger(stateDir string, subs map[string]Submission, now time.Time, keep time.Duration) error {
	l := ledgerFile{V: ledgerVersion, Submissions: map[string]Submission{}}
	for node, s := range subs {
		if now.Sub(s.At) < keep {
			l.Submissions[node] = s
		}
	}
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return err
	}
	return osutil.WriteFile(ledgerPath(stateDir), append(b, '\n'), 0o644)
}

// ErrLocked is returned when another sweep holds the lock.
var ErrLocked = errors.New("another idle-sweep is running")

// lock takes sweep.lock (in the state directory's root-only lock
// directory, osutil.Lock) without waiting; the returned function releases
// it.
func lock(stateDir string) (func(), error) {
	unlock, err := osutil.Lock(context.Background(), stateDir, "sweep.lock", 0)
	if errors.Is(err, osutil.ErrLockBusy) {
		return nil, fmt.Errorf("%w (%v)", ErrLocked, err)
	}
	if err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(stateDir, "sweep.lock")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		unlock()
		return nil, fmt.Errorf("removing the old lock file: %w", err)
	}
	return unlock, nil
}
