// Package osutil holds the few operating-system helpers that several vigil
// packages share: writing a file atomically, running a command in its
// own process group, killed with the whole group at its deadline, taking
// a lock in a directory only root can open, with a bound (Lock), and
// writing a file with a user's own credentials (WriteFileAsUser).
//
// The atomic writer is our own, about thirty lines, rather than
// github.com/google/renameio/v2, the well-kept library for the same job.
// renameio writes a temporary file in the target's directory, fsyncs it and
// renames it into place, as we do, but it does not fsync the directory
// afterwards (its pull request #42 to add that is still open), and vigil's
// records (the prolog report, hang reports, the XID state) must survive a
// node that crashes right after writing them: that is when they are read.
// Without the directory fsync the rename itself can be lost. One more
// module for thirty lines we would still have to extend is not worth it.
//
// The process-group command is a thin layer over os/exec, which already
// has what it takes (Cmd.Cancel, Cmd.WaitDelay); this package only fixes
// the choices every caller made alike: its own group, and SIGKILL to the
// whole group, so that a command's children die with it.
package osutil
