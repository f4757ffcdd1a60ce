package osutil

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// Command returns a command for argv[0] with arguments argv[1:] that runs
// in its own process group (the group id is the child's pid). When ctx ends
// before the command does, the whole group is killed with SIGKILL, and Wait
// returns at most waitDelay later even when a descendant that left the
// group still holds the output pipes (exec.Cmd.WaitDelay; 0 waits for
// them). argv must not be empty.
func Command(ctx context.Context, waitDelay time.Duration, argv ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return KillGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay
	return cmd
}

// KillGroup sends SIGKILL to the process group whose leader is pid, as
// started by Command.
func KillGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGKILL)
}

// Sleep waits d, or until ctx ends; then it returns ctx's error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
