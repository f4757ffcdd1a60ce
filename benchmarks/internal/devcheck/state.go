package devcheck

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/vigil-hpc/vigil/internal/osutil"
)

// LockState takes an exclusive lock (the file name in the state directory),
// so prologs and epilogs of jobs sharing the node do not interleave their
// updates.
func LockState(dir, name string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
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
