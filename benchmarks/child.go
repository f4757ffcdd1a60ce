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
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/internal/osutil"
)

// ChildArg is the first argument that makes a vigil binary run one check
// as a child of the runner: `vigil-prolog __run-check NAME`. Mains pass
// os.Args to IsChild before anything else.
const ChildArg = "__run-check"

// InChild is true inside a checker child process (set by ChildMain).
var InChild bool

// childSpec is what the parent sends the child on stdin. The child gets
// the sections of its checks ([checks.NAME], their vendors' [vendor.X])
// of the document the parent already parsed and validated (Config, named
// ConfigName in errors), never a path to read again nor the rest of the
// file: parent and child decode the same settings. An empty ConfigName
// means defaults.
type childSpec struct {
	Checks     []string         `json:"checks"`
	ConfigName string           `json:"config_name,omitempty"`
	Config     string           `json:"config,omitempty"`
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
	if spec.ConfigName != "" {
		var err error
		if f, err = config.Parse(strings.NewReader(spec.Config), spec.ConfigName); err != nil {
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
			DryRun: spec.DryRun, Settings: SettingsFrom(f, name), Libraries: LibrariesFrom(f, name)}
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
func (r *CheckRunner) runBatch(parent, bctx context.Context, batch []Check) []Result {
	results := make([]Result, len(batch))
	next := 0 // first check without a result
	for next < len(batch) {
		if bctx.Err() != nil {
			for ; next < len(batch); next++ {
				results[next] = notRun(parent, batch[next].Spec().Name)
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
					results[i] = Result{Check: batch[i].Spec().Name, Status: StatusUnknown, Reason: ReasonCrashed,
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
func (r *CheckRunner) runChild(parent, bctx context.Context, checks []Check, emit func(Result)) int {
	names := make([]string, len(checks))
	for i, c := range checks {
		names[i] = c.Spec().Name
	}
	fail := func(reason, msg string) int {
		for _, n := range names {
			emit(Result{Check: n, Status: StatusUnknown, Reason: reason, Message: msg})
		}
		return len(names)
	}
	spec, err := r.childSpec(names)
	if err != nil {
		return fail(ReasonNotStarted, err.Error())
	}
	ch, err := r.startChild(names, spec)
	if err != nil {
		return fail(ReasonNotStarted, err.Error())
	}
	defer ch.pr.Close()
	return r.followChild(parent, bctx, ch, emit)
}

// childSpec is the spec of a child that runs the checks names: the run's
// environment, each check's deadline and the config document.
func (r *CheckRunner) childSpec(names []string) (childSpec, error) {
	env := r.env()
	spec := childSpec{Checks: names, Timeouts: map[string]int64{},
		Node: env.Node, JobID: env.JobID, Devices: env.Devices, GresGPUs: env.GresGPUs, DryRun: env.DryRun}
	for _, n := range names {
		spec.Timeouts[n] = int64(r.timeout(n))
	}
	f, err := r.config()
	if err != nil {
		return spec, err
	}
	if f != nil {
		sections := make([]string, 0, 2*len(names))
		for _, n := range names {
			sections = append(sections, "checks."+n)
			if c, ok := Lookup(n); ok && Describe(c).Vendor != VendorNone {
				sections = append(sections, VendorSection+"."+string(Describe(c).Vendor))
			}
		}
		sub, err := f.Subset(slices.Compact(slices.Sorted(slices.Values(sections)))...)
		if err != nil {
			return spec, err
		}
		spec.ConfigName, spec.Config = f.Name+" (its checks' sections)", sub
	}
	return spec, nil
}

// child is one running checker child: its messages as they are read from
// the result pipe, and its exit once it is reaped.
type child struct {
	pr       *os.File    // the result pipe's read end
	stderr   *tailBuffer // the end of its stdout and stderr
	msgs     chan childMsg
	readErr  chan error // why the result pipe became unreadable, if it did
	waitDone chan error // cmd.Wait's error
	pgid     int
}

// startChild starts a child for names in its own process group, with spec
// on stdin and the result pipe as fd 3, and starts reading its messages.
func (r *CheckRunner) startChild(names []string, spec childSpec) (*child, error) {
	exe, err := r.exe()
	if err != nil {
		return nil, err
	}
	specJSON, _ := json.Marshal(spec)
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	ch := &child{pr: pr, stderr: &tailBuffer{max: 4096}, msgs: make(chan childMsg),
		readErr: make(chan error, 1), waitDone: make(chan error, 1)}
	// The child is killed by its deadline below, not by a context.
	cmd := osutil.Command(context.Background(), time.Second, append([]string{exe, ChildArg}, names...)...)
	cmd.Stdin = bytes.NewReader(specJSON)
	cmd.Stdout = ch.stderr // a vendor library's chatter is kept with stderr
	cmd.Stderr = ch.stderr
	cmd.ExtraFiles = []*os.File{pw}
	cmd.Env = append(os.Environ(), r.ChildEnv...)
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, fmt.Errorf("starting checker: %w", err)
	}
	ch.pgid = cmd.Process.Pid
	go ch.read()
	go func() {
		err := cmd.Wait()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > r.maxRSS {
			r.maxRSS = ru.Maxrss // KiB on Linux
		}
		ch.waitDone <- err
	}()
	return ch, nil
}

// read decodes the child's messages until the pipe closes or holds
// something that is not one.
func (ch *child) read() {
	defer close(ch.msgs)
	dec := json.NewDecoder(ch.pr)
	for {
		var m childMsg
		if err := dec.Decode(&m); err != nil {
			if err != io.EOF {
				ch.readErr <- err
			}
			return
		}
		ch.msgs <- m
	}
}

// killAndWait kills the child's process group, reaps it and drains its
// messages; it returns cmd.Wait's error.
func (ch *child) killAndWait() error {
	_ = osutil.KillGroup(ch.pgid)
	err := <-ch.waitDone
	ch.pr.Close() // a descendant that left the group may still hold the pipe
	for range ch.msgs {
	}
	return err
}

// crashMessage says why a child died in the middle of a check: how it
// exited, an unreadable result, and the last line it printed.
func (ch *child) crashMessage(waitErr error) string {
	msg := "checker died without a result"
	if waitErr != nil {
		msg = "checker died without a result: " + describeExit(waitErr)
	}
	select {
	case err := <-ch.readErr:
		msg = "unreadable result: " + err.Error()
	default:
	}
	if s := strings.TrimSpace(ch.stderr.String()); s != "" {
		msg += ": " + lastLine(s)
	}
	return msg
}

// followChild follows a started child: each check's start arms its
// deadline, each result is emitted; a check past its deadline, the end of
// the run's budget, a crash or a result out of order kills the child. It
// returns how many checks got a result.
func (r *CheckRunner) followChild(parent, bctx context.Context, ch *child, emit func(Result)) int {
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
		case m, ok := <-ch.msgs:
			if !ok {
				waitErr := ch.killAndWait()
				if current != "" {
					emit(Result{Check: current, Status: StatusUnknown, Reason: ReasonCrashed,
						Message: ch.crashMessage(waitErr), Duration: time.Since(t0)})
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
					ch.killAndWait()
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
			ch.killAndWait()
			emit(timedOut(current, time.Since(t0)))
			return done + 1
		case <-bctx.Done():
			ch.killAndWait()
			if current == "" {
				return done
			}
			emit(stoppedResult(parent, current, time.Since(t0)))
			return done + 1
		}
	}
}

// stoppedResult is the result of check name, killed after d because the
// run was canceled or its budget ran out.
func stoppedResult(parent context.Context, name string, d time.Duration) Result {
	res := timedOut(name, d)
	if parent.Err() != nil {
		res.Status, res.Reason, res.Message = StatusUnknown, ReasonCanceled, "canceled while running"
	} else {
		res.Status, res.Reason = StatusUnknown, ReasonBudgetExpired
		res.Message = fmt.Sprintf("killed when the run's budget ran out after %v", res.Duration.Round(time.Millisecond))
	}
	return res
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
