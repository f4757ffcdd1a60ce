package osutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// vigil's lock files live in a directory only root can open (LockDirName
// under a state directory, mode 0700). flock(2) works on a file opened
// read-only, so a lock file any user can open is a lock any user can hold:
// a check waiting on it would wait until its deadline, and a lock holder
// could make vigil's own runs time out. Lock refuses a directory a user
// could reach or replace, and waits for a lock at most a bound, so that a
// lock vigil cannot take is said as such, never a hang.

// LockDirName is the directory, under a state directory, that holds
// vigil's lock files.
const LockDirName = "lock"

// ErrLockBusy is wrapped when a lock is still held by another process when
// its bound runs out.
var ErrLockBusy = errors.New("lock still held by another process")

// ErrUnsafeDir is wrapped when a directory that must be root's own is not:
// not a directory, not owned by root, open to group or others, or below a
// directory another user can write (a sticky directory such as /tmp aside,
// where only the owner of an entry may rename or remove it).
var ErrUnsafeDir = errors.New("directory is not private to root")

// lockPoll is how often a busy lock is tried again.
const lockPoll = 20 * time.Millisecond

// PrivateDir creates dir (mode 0700, parents 0755) when it is missing and
// checks that it is root's own: a directory owned by root (or by the
// effective user, when vigil runs unprivileged in tests), mode 0700 or
// stricter, and that no directory on its path (symbolic links resolved)
// can be written by another user. It returns dir's resolved path.
func PrivateDir(dir string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	real, st, err := rootPath(dir)
	if err != nil {
		return "", err
	}
	if st.Mode&0o077 != 0 {
		return "", fmt.Errorf("%s: %w: mode %04o, want 0700 (chmod 0700 %s)", real, ErrUnsafeDir, st.Mode&0o7777, real)
	}
	return real, nil
}

// RootOwnedPath checks that no user but root can replace dir or redirect
// a path through it (RootOwnedDir, except that dir itself may be writable
// by others, as /tmp is): what is in it may be theirs, dir is root's.
func RootOwnedPath(dir string) error {
	_, _, err := rootPath(dir)
	return err
}

// RootOwnedDir checks that no user but root can put anything into dir or
// redirect a path through it: dir (symbolic links resolved) and every
// directory above it are owned by root (or the effective user) and not
// writable by group or others, the directories above it except where
// sticky (only the owner of an entry may rename or remove it there).
func RootOwnedDir(dir string) error {
	real, st, err := rootPath(dir)
	if err != nil {
		return err
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("%s: %w: mode %04o can be written by other users", real, ErrUnsafeDir, st.Mode&0o7777)
	}
	return nil
}

// rootPath resolves dir and checks its owner and that of every directory
// above it, and that none above it can be written by other users (sticky
// ones aside). It returns the resolved path and its stat.
func rootPath(dir string) (string, *syscall.Stat_t, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", nil, err
	}
	st, err := lstat(real)
	if err != nil {
		return "", nil, err
	}
	if err := ownedBySelf(real, st); err != nil {
		return "", nil, err
	}
	for p := filepath.Dir(real); ; p = filepath.Dir(p) {
		pst, err := lstat(p)
		if err != nil {
			return "", nil, err
		}
		if err := ownedBySelf(p, pst); err != nil {
			return "", nil, err
		}
		if pst.Mode&0o022 != 0 && pst.Mode&syscall.S_ISVTX == 0 {
			return "", nil, fmt.Errorf("%s: %w: its parent %s (mode %04o) can be written by other users, who could replace it", real, ErrUnsafeDir, p, pst.Mode&0o7777)
		}
		if p == filepath.Dir(p) {
			return real, st, nil
		}
	}
}

func lstat(p string) (*syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: p, Err: err}
	}
	return &st, nil
}

// ownedBySelf reports a path that is not a directory or is owned by
// neither root nor the effective user.
func ownedBySelf(p string, st *syscall.Stat_t) error {
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return fmt.Errorf("%s: %w: not a directory", p, ErrUnsafeDir)
	}
	if st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s: %w: owned by uid %d, want root (chown root:root %s)", p, ErrUnsafeDir, st.Uid, p)
	}
	return nil
}

// Lock takes the exclusive lock name in stateDir's lock directory
// (stateDir/lock, made and checked by PrivateDir), trying for at most
// bound, and less when ctx ends sooner: half of ctx's time left, so that
// the caller has time to say why. It returns the release. A lock still
// held when the bound runs out is ErrLockBusy; a lock directory that is
// not root's own is ErrUnsafeDir.
func Lock(ctx context.Context, stateDir, name string, bound time.Duration) (func(), error) {
	dir, err := PrivateDir(filepath.Join(stateDir, LockDirName))
	if err != nil {
		return nil, err
	}
	return TryLock(ctx, filepath.Join(dir, name), bound)
}

// TryLock takes an exclusive flock on path (created mode 0600, never
// through a symbolic link), trying again every few milliseconds for at
// most bound (and half of ctx's time left). The caller checks that path's
// directory is private (PrivateDir).
func TryLock(ctx context.Context, path string, bound time.Duration) (func(), error) {
	if dl, ok := ctx.Deadline(); ok {
		bound = min(bound, time.Until(dl)/2)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(bound)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w after %v", path, ErrLockBusy, bound.Round(time.Millisecond))
		}
		select {
		case <-ctx.Done():
		case <-time.After(lockPoll):
		}
	}
}
