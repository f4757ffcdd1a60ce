package benchmarks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-hpc/vigil/config"
)

// ChildArg is the first argument that makes a vigil binary run one check
// as a child of the runner: `vigil-prolog __run-check NAME`. Mains pass
// os.Args to IsChild before anything else.
const ChildArg = "__run-check"

// InChild is true inside a checker child process (set by ChildMain).
var InChild bool

// childSpec is what the parent sends the child on stdin.
type childSpec struct {
	Checks     []string         `json:"checks"`
	ConfigPath string           `json:"config_path,omitempty"`
	Node       string           `json:"node,omitempty"`
	JobID      string           `json:"job_id,omitempty"`
	Devices    []int            `json:"devices,omitempty"`
	GresGPUs   int              `json:"gres_gpus,omitempty"`
	DryRun     bool             `json:"dry_run,omitempty"`
	Timeouts   map[string]int64 `json:"timeouts_ns,omitempty"`
}

// childMsg is one line the child writes on the result pipe: the start of a
// check, then its result.
type childMsg struct {
	Start  string  `json:"start,omitempty"`
	Result *Result `json:"result,omitempty"`
}

// IsChild reports whether args (os.Args) ask for a checker child.
func IsChild(args []string) bool {
	return len(args) >= 3 && args[1] == ChildArg
}

// ChildMain runs the checks named in args[2:] one after the other with the
// spec read from stdin, writing a start line and a result line (JSON) per
// check to result (fd 3 in a real child). It returns the exit code.
func ChildMain(args []string, stdin io.Reader, result io.Writer, stderr io.Writer) int {
	InChild = true
	if !IsChild(args) {
		fmt.Fprintf(stderr, "usage: %s %s CHECK... < spec.json\n", args[0], ChildArg)
		return 2
	}
	var spec childSpec
	if err := json.NewDecoder(stdin).Decode(&spec); err != nil {
		fmt.Fprintf(stderr, "vigil checker: reading spec: %v\n", err)
		return 2
	}
	f := config.Empty("defaults")
	if spec.ConfigPath != "" {
		var err error
		if f, err = config.Load(spec.ConfigPath); err != nil {
			fmt.Fprintf(stderr, "vigil checker: %v\n", err)
			return 2
		}
	}
	enc := json.NewEncoder(result)
	for _, name := range args[2:] {
		c, ok := Lookup(name)
		if !ok {
			fmt.Fprintf(stderr, "vigil checker: %v %q\n", ErrUnknownCheck, name)
			return 2
		}
		if err := enc.Encode(childMsg{Start: name}); err != nil {
			fmt.Fprintf(stderr, "vigil checker: writing: %v\n", err)
			return 2
		}
		env := &Env{Node: spec.Node, JobID: spec.JobID, Devices: spec.Devices, GresGPUs: spec.GresGPUs,
			DryRun: spec.DryRun, Settings: SettingsFrom(f, name)}
		ctx, cancel := context.WithCancel(context.Background())
		if t := spec.Timeouts[name]; t > 0 {
			ctx, cancel = context.WithTimeout(context.Background(), time.Duration(t))
		}
		res := normalize(name, c.Run(ctx, env))
		cancel()
		if err := enc.Encode(childMsg{Result: &res}); err != nil {
			fmt.Fprintf(stderr, "vigil checker: writing result: %v\n", err)
			return 2
		}
	}
	return 0
}

// SettingsFrom returns the Env.Settings function of check name over f.
func SettingsFrom(f *config.File, name string) func(v any) error {
	return func(v any) error { return f.Decode("checks."+name, v) }
}

// runBatch runs isolated checks in as few children as it can: one child
// runs them in order and reports each start and result; when a check hangs
// past its deadline the child's whole process group is killed, the check
// fails with CheckTimedOut and a new child takes the checks that are left.
// A child that dies mid-check makes that check unknown (CheckCrashed).
func (r *Runner) runBatch(parent, bctx context.Context, batch []Check) []Result {
	results := make([]Result, len(batch))
	next := 0 // first check without a result
	for next < len(batch) {
		if bctx.Err() != nil {
			for ; next < len(batch); next++ {
				results[next] = notRun(parent, batch[next].Name())
			}
			break
		}
		pos := next
		got := r.runChild(parent, bctx, batch[next:], func(res Result) {
			results[pos] = res // the child reports in order
			pos++
		})
		if got == 0 && bctx.Err() != nil {
			continue // the loop marks the rest as not run
		}
		if got == 0 {
			// The child died before starting anything: give up on the rest.
			for i := next; i < len(batch); i++ {
				if results[i].Check == "" {
					results[i] = Result{Check: batch[i].Name(), Status: StatusUnknown, Reason: ReasonCrashed,
						Message: "checker died before starting"}
				}
			}
			break
		}
		next += got
	}
	return results
}

func notRun(parent context.Context, name string) Result {
	if parent.Err() != nil {
		return Result{Check: name, Status: StatusUnknown, Reason: ReasonCanceled, Message: "not run: canceled"}
	}
	return Result{Check: name, Status: StatusUnknown, Reason: ReasonBudgetExpired, Message: "not run: the run's budget was spent"}
}

// runChild starts one child for checks and reports each result through
// emit. It returns how many checks got a result (in order), 0 when the
// child could not start or died before its first check.
func (r *Runner) runChild(parent, bctx context.Context, checks []Check, emit func(Result)) int {
	names := make([]string, len(checks))
	spec := childSpec{ConfigPath: r.ConfigPath, Timeouts: map[string]int64{}}
	env := r.env()
	spec.Node, spec.JobID, spec.Devices, spec.GresGPUs, spec.DryRun = env.Node, env.JobID, env.Devices, env.GresGPUs, env.DryRun
	for i, c := range checks {
		names[i] = c.Name()
		spec.Checks = append(spec.Checks, c.Name())
		spec.Timeouts[c.Name()] = int64(r.timeout(c.Name()))
	}
	fail := func(reason, msg string) int {
		for _, n := range names {
			emit(Result{Check: n, Status: StatusUnknown, Reason: reason, Message: msg})
		}
		return len(names)
	}
	exe, err := r.exe()
	if err != nil {
		return fail(ReasonNotStarted, err.Error())
	}
	specJSON, _ := json.Marshal(spec)
	pr, pw, err := os.Pipe()
	if err != nil {
		return fail(ReasonNotStarted, err.Error())
	}
	defer pr.Close()
	stderr := &tailBuffer{max: 4096}
	cmd := exec.Command(exe, append([]string{ChildArg}, names...)...)
	cmd.Stdin = bytes.NewReader(specJSON)
	cmd.Stdout = stderr // a vendor library's chatter is kept with stderr
	cmd.Stderr = stderr
	cmd.ExtraFiles = []*os.File{pw}
	cmd.Env = append(os.Environ(), r.ChildEnv...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		pw.Close()
		return fail(ReasonNotStarted, fmt.Sprintf("starting checker: %v", err))
	}
	pw.Close()
	pgid := cmd.Process.Pid
	msgs := make(chan childMsg)
	readErr := make(chan error, 1)
	go func() {
		defer close(msgs)
		dec := json.NewDecoder(pr)
		for {
			var m childMsg
			if err := dec.Decode(&m); err != nil {
				if err != io.EOF {
					readErr <- err
				}
				return
			}
			msgs <- m
		}
	}()
	waitDone := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > r.maxRSS {
			r.maxRSS = ru.Maxrss // KiB on Linux
		}
		waitDone <- err
	}()
	killAndWait := func() error {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		err := <-waitDone
		pr.Close() // a descendant that left the group may still hold the pipe
		for range msgs {
		}
		return err
	}

	done := 0
	current := ""
	var t0 time.Time
	var deadline <-chan time.Time
	var timer *time.Timer
	stopTimer := func() {
		if timer != nil {
			timer.Stop()
		}
		deadline = nil
	}
	defer stopTimer()
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				waitErr := killAndWait()
				if current != "" {
					msg := "checker died without a result"
					if waitErr != nil {
						msg = "checker died without a result: " + describeExit(waitErr)
					}
					select {
					case err := <-readErr:
						msg = "unreadable result: " + err.Error()
					default:
					}
					if s := strings.TrimSpace(stderr.String()); s != "" {
						msg += ": " + lastLine(s)
					}
					emit(Result{Check: current, Status: StatusUnknown, Reason: ReasonCrashed, Message: msg, Duration: time.Since(t0)})
					done++
				}
				return done
			}
			switch {
			case m.Start != "":
				current, t0 = m.Start, time.Now()
				stopTimer()
				timer = time.NewTimer(r.timeout(current))
				deadline = timer.C
				if r.OnStart != nil {
					r.OnStart(current, 1)
				}
			case m.Result != nil:
				res := normalize(m.Result.Check, *m.Result)
				if res.Check != current || current == "" {
					killAndWait()
					emit(Result{Check: current, Status: StatusUnknown, Reason: ReasonBadResult,
						Message: fmt.Sprintf("result for %q while running %q", res.Check, current)})
					return done + 1
				}
				res.Duration = time.Since(t0)
				emit(res)
				done++
				current = ""
				stopTimer()
			}
		case <-deadline:
			killAndWait()
			emit(timedOut(current, time.Since(t0)))
			return done + 1
		case <-bctx.Done():
			killAndWait()
			if current == "" {
				return done
			}
			res := timedOut(current, time.Since(t0))
			if parent.Err() != nil {
				res.Status, res.Reason, res.Message = StatusUnknown, ReasonCanceled, "canceled while running"
			} else {
				res.Status, res.Reason = StatusUnknown, ReasonBudgetExpired
				res.Message = fmt.Sprintf("killed when the run's budget ran out after %v", res.Duration.Round(time.Millisecond))
			}
			emit(res)
			return done + 1
		}
	}
}

func describeExit(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "killed by signal " + ws.Signal().String()
		}
		return fmt.Sprintf("exit status %d", ee.ExitCode())
	}
	return err.Error()
}

func lastLine(s string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !strings.HasPrefix(l, "goroutine ") {
			// Prefer the panic line of a Go crash when there is one.
			for _, p := range lines {
				if strings.HasPrefix(p, "panic: ") || strings.HasPrefix(p, "fatal error: ") || strings.HasPrefix(p, "SIGSEGV") {
					return strings.TrimSpace(p)
				}
			}
			return l
		}
	}
	return ""
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }
