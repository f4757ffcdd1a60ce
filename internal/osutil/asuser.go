package osutil

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"runtime"
	"syscall"
)

// ErrNotPermitted is wrapped when the user a file is written for may not
// write it: the kernel refused the user's own credentials.
var ErrNotPermitted = errors.New("the user may not write there")

// WriteFileAsUser writes data as dir/name with the file-system identity of
// uid:gid (and no supplementary groups), so that the kernel's permission
// checks decide as they would for that user: a directory the user may not
// write, or a path through one they may not search, is refused with
// ErrNotPermitted, and the file is the user's own from its creation. The
// write is atomic: a new temporary file (O_EXCL, never through a link) in
// the directory, given perm, fsynced and renamed over name, every step
// relative to the directory opened once.
//
// It runs on an OS thread of its own whose fsuid/fsgid (setfsuid(2),
// setfsgid(2)) and groups are changed; the thread is locked and never
// handed back, so it ends with the call and nothing else runs with, or
// after, the changed identity.
func WriteFileAsUser(dir, name string, data []byte, perm uint32, uid, gid int) error {
	if uid < 0 || gid < 0 {
		return fmt.Errorf("write %s as uid %d gid %d: %w", dir, uid, gid, ErrNotPermitted)
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		if err := becomeFS(uid, gid); err != nil {
			done <- err
			return
		}
		done <- writeAt(dir, name, data, perm)
	}()
	err := <-done
	if errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EROFS) {
		return fmt.Errorf("%w: uid %d: %w", ErrNotPermitted, uid, err)
	}
	return err
}

// becomeFS gives the calling (locked) thread the file-system identity
// uid:gid and no supplementary groups, through raw system calls that change
// this thread only, and checks that the kernel took them.
func becomeFS(uid, gid int) error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, 0, 0, 0); e != 0 {
		return fmt.Errorf("setgroups: %w", e)
	}
	syscall.RawSyscall(syscall.SYS_SETFSGID, uintptr(gid), 0, 0)
	syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(uid), 0, 0)
	// Both return the previous value: asking again reads the current one.
	g, _, _ := syscall.RawSyscall(syscall.SYS_SETFSGID, uintptr(gid), 0, 0)
	u, _, _ := syscall.RawSyscall(syscall.SYS_SETFSUID, uintptr(uid), 0, 0)
	if int(u) != uid || int(g) != gid {
		return fmt.Errorf("setfsuid %d/setfsgid %d: still fsuid %d fsgid %d", uid, gid, int(u), int(g))
	}
	return nil
}

// writeAt is the atomic write in dir through file descriptors, with the
// calling thread's credentials.
func writeAt(dir, name string, data []byte, perm uint32) (err error) {
	dfd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer syscall.Close(dfd)
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + name + ".tmp" + hex.EncodeToString(rnd[:])
	fd, err := syscall.Openat(dfd, tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s in %s: %w", tmp, dir, err)
	}
	defer func() {
		if fd >= 0 {
			syscall.Close(fd)
		}
		if err != nil {
			_ = syscall.Unlinkat(dfd, tmp)
		}
	}()
	for b := data; len(b) > 0; {
		n, werr := syscall.Write(fd, b)
		if werr == syscall.EINTR {
			continue
		}
		if werr != nil {
			return fmt.Errorf("write %s in %s: %w", tmp, dir, werr)
		}
		b = b[n:]
	}
	if err = syscall.Fchmod(fd, perm); err != nil {
		return fmt.Errorf("chmod %s in %s: %w", tmp, dir, err)
	}
	if err = syscall.Fsync(fd); err != nil {
		return fmt.Errorf("fsync %s in %s: %w", tmp, dir, err)
	}
	err = syscall.Close(fd)
	fd = -1
	if err != nil {
		return fmt.Errorf("close %s in %s: %w", tmp, dir, err)
	}
	if err = syscall.Renameat(dfd, tmp, dfd, name); err != nil {
		return fmt.Errorf("rename %s to %s in %s: %w", tmp, name, dir, err)
	}
	return syscall.Fsync(dfd)
}
