package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/internal/textutil"
)

// CommandRunner runs one command with a deadline in its own process group.
type CommandRunner interface {
	// Run runs argv[0] with arguments argv[1:] and returns its standard
	// output. A failed command returns a *CommandError (its stdout is
	// returned too, as far as it was read).
	Run(ctx context.Context, argv []string) (stdout []byte, err error)
}

// EnvRunner is a CommandRunner that also takes the extra environment of the
// command (Client.Env: "SLURM_CONF=/etc/slurm/slurm.conf"). A Client hands
// its Env to a CommandRunner that implements it, so tests see the exact argv and
// environment; a plain CommandRunner never sees Client.Env.
type EnvRunner interface {
	CommandRunner
	// RunEnv runs argv like Run with env added to the environment (later
	// entries win).
	RunEnv(ctx context.Context, argv, env []string) (stdout []byte, err error)
}

// maxStderr is how much of a command's standard error a CommandError keeps,
// in bytes.
const maxStderr = 64 << 10

// CommandError is a command that could not start, exited non-zero, or was
// killed at its deadline.
type CommandError struct {
	Argv     []string
	ExitCode int    // exit status; -1 when it did not start or was killed by a signal
	Stderr   string // standard error, trimmed, at most 64 KiB
	Stdout   string // standard output, trimmed, at most 64 KiB (scontrol prints some errors there)
	Err      error  // *exec.ExitError, the start error, or the context's error
}

// Error tells the command, how it ended and what it printed on stderr (or
// stdout when stderr was empty).
func (e *CommandError) Error() string {
	msg := e.Stderr
	if msg == "" {
		msg = e.Stdout
	}
	s := fmt.Sprintf("slurm: %s: %v", strings.Join(e.Argv, " "), e.Err)
	if msg != "" {
		s += ": " + textutil.Cut(msg, 1024, "...")
	}
	return s
}

// Unwrap returns the underlying error, so that
// errors.Is(err, context.DeadlineExceeded) holds for a command killed at its
// deadline.
func (e *CommandError) Unwrap() error { return e.Err }

// Output is what the command printed: stderr, else stdout.
func (e *CommandError) Output() string {
	if e.Stderr != "" {
		return e.Stderr
	}
	return e.Stdout
}

// ExecRunner runs commands as child processes. Each command runs in its own
// process group; when the context ends first, the whole group is killed with
// SIGKILL and Run returns an error wrapping the context's error.
type ExecRunner struct {
	// Env is added to the current process's environment (later entries
	// win), e.g. "SLURM_CONF=/etc/slurm/test.conf".
	Env []string
	// WaitDelay bounds how long Run waits for the output pipes to close
	// after the process was killed or exited (children that escaped the
	// group may hold them); 0 means 2s.
	WaitDelay time.Duration
}

// limitedBuffer keeps the first max bytes written and drops the rest.
type limitedBuffer struct {
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

// Run runs argv in its own process group under ctx. It returns the standard
// output; on failure a *CommandError.
func (r *ExecRunner) Run(ctx context.Context, argv []string) ([]byte, error) {
	if len(argv) == 0 {
		return nil, &CommandError{Argv: argv, ExitCode: -1, Err: errors.New("empty argv")}
	}
	if err := ctx.Err(); err != nil {
		return nil, &CommandError{Argv: argv, ExitCode: -1, Err: err}
	}
	wait := r.WaitDelay
	if wait == 0 {
		wait = 2 * time.Second
	}
	cmd := osutil.Command(ctx, wait, argv...)
	if len(r.Env) > 0 {
		cmd.Env = append(os.Environ(), r.Env...)
	}
	var stdout bytes.Buffer
	stderr := &limitedBuffer{max: maxStderr}
	cmd.Stdout = &stdout
	cmd.Stderr = stderr
	err := cmd.Run()
	out := stdout.Bytes()
	if err == nil {
		return out, nil
	}
	ce := &CommandError{
		Argv:     append([]string(nil), argv...),
		ExitCode: -1,
		Stderr:   strings.TrimSpace(stderr.buf.String()),
		Stdout:   strings.TrimSpace(textutil.Cut(string(out), maxStderr, "...")),
		Err:      err,
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		ce.ExitCode = ee.ExitCode()
	}
	if cerr := ctx.Err(); cerr != nil {
		ce.Err = fmt.Errorf("killed: %w", cerr)
		ce.ExitCode = -1
	}
	return out, ce
}
