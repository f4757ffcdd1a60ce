package node

import (
	"errors"
	"fmt"
	"github.com/vigil-hpc/vigil/benchmarks/internal/devcheck"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/vigil-hpc/vigil/internal/osutil"
)

// ReasonDiskUserWritable: the disk check failed in a directory that other
// users can write (a full or slow /tmp) or replace, so the failure is no
// evidence against the node (unknown).
const ReasonDiskUserWritable = "DiskUserWritable"

// diskJudge records the disk check's results. In a scratch directory that
// every user can write (the default, /tmp), any user can fill the file
// system or load it: a full or slow directory there is something a user
// can cause, so those failures are unknown with ReasonDiskUserWritable.
// Where a user can replace the directory itself (it is theirs, or a
// directory above it is writable by them), every failure is theirs to
// cause. A directory only root can write is judged as measured.
type diskJudge struct {
	*devcheck.Tally
	// shared says why users reach the directory, "" when only root does.
	shared string
	// redirect is set when a user can replace the directory itself.
	redirect bool
}

// newDiskJudge judges the disk check's results in path.
func newDiskJudge(t *devcheck.Tally, path string) *diskJudge {
	j := &diskJudge{Tally: t}
	if fi, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir() {
		// Missing or not a directory: a user who may remove, rename or
		// replace it could be why.
		if perr := osutil.RootOwnedDir(filepath.Dir(path)); perr != nil {
			j.shared, j.redirect = fmt.Sprintf("%s can be replaced by other users (%v)", path, perr), true
		}
		return j
	}
	if err := osutil.RootOwnedPath(path); err != nil {
		j.shared, j.redirect = fmt.Sprintf("%s can be replaced by other users (%v)", path, err), true
		return j
	}
	if fi, err := os.Stat(path); err == nil {
		switch m := fi.Mode().Perm(); {
		case m&0o002 != 0:
			j.shared = fmt.Sprintf("%s is writable by every user", path)
		case m&0o020 != 0:
			j.shared = fmt.Sprintf("%s is writable by its group", path)
		}
	}
	return j
}

// userCaused reports whether a failure for reason is one a user could
// cause in this directory.
func (j *diskJudge) userCaused(reason string) bool {
	if j.redirect {
		return true
	}
	if j.shared == "" {
		return false
	}
	switch reason {
	case ReasonDiskFull, ReasonDiskWriteSlow, ReasonDiskReadSlow, ReasonDiskLatencyHigh:
		return true
	}
	return false
}

// Fail records a failure, or, where a user could have caused it, an
// unknown that says so.
func (j *diskJudge) Fail(device, reason, format string, args ...any) {
	if !j.userCaused(reason) {
		j.Tally.Fail(device, reason, format, args...)
		return
	}
	j.Tally.Unknown(device, ReasonDiskUserWritable,
		"%s (%s); %s: a full or slow directory that users can fill or load is not evidence against the node; point [checks.disk] path at a directory only root can write to judge it",
		fmt.Sprintf(format, args...), reason, j.shared)
}
