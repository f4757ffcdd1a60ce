package devcheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	log "github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/internal/osutil"
)

// StateLockBound is how long a check waits for its state lock: another
// vigil run holds it for the few milliseconds of a read and a write.
const StateLockBound = 5 * time.Second

// Reasons of a check that keeps state when its lock cannot be had
// (unknown): the lock stayed busy past StateLockBound, the lock directory
// is not root's own (osutil.PrivateDir), or it could not be made or opened
// at all (a read-only or missing state_dir).
const (
	ReasonStateLockBusy    = "StateLockBusy"
	ReasonStateDirUnsafe   = "StateDirUnsafe"
	ReasonStateDirUnusable = "StateDirUnusable"
)

// LockState takes an exclusive lock (name, in the state directory's
// root-only lock directory dir/lock), so prologs and epilogs of jobs
// sharing the node do not interleave their updates. It waits at most
// StateLockBound. The lock file of earlier versions (dir/name, which any
// user could open and hold) is removed.
func LockState(ctx context.Context, dir, name string) (func(), error) {
	unlock, err := osutil.Lock(ctx, dir, name, StateLockBound)
	if err != nil {
		return nil, err
	}
	if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.WithError(err).Warn("removing an old lock file")
	}
	return unlock, nil
}

// LockReason is the reason token of a LockState error: StateDirUnsafe for
// a lock directory that is not root's own, StateLockBusy for a lock held
// past the bound, StateDirUnusable for any other (the directory could not
// be made or opened).
func LockReason(err error) string {
	switch {
	case errors.Is(err, osutil.ErrUnsafeDir):
		return ReasonStateDirUnsafe
	case errors.Is(err, osutil.ErrLockBusy):
		return ReasonStateLockBusy
	}
	return ReasonStateDirUnusable
}

// LoadState reads a check's JSON state file ("since the last run"); a
// missing file is the zero state.
func LoadState[T any](path string) (T, error) {
	var s T
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// SaveState writes a check's state atomically (temp file, fsync, rename),
// readable by root only.
func SaveState[T any](path string, s T) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return osutil.WriteFile(path, append(b, '\n'), 0o600)
}
