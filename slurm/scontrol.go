package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vigil-hpc/vigil/internal/textutil"
)

// Node is a node's state as scontrol reports it.
type Node struct {
	Name   string
	State  string   // base state: IDLE, ALLOCATED, MIXED, DOWN ...
	Flags  []string // DRAIN, MAINTENANCE, REBOOT_REQUESTED, POWERED_DOWN, NOT_RESPONDING ...
	Reason string   // the reason without Slurm's " [user@time]" suffix; "" when none

	ReasonUser string            // who set the reason ("root", "slurm"), from the suffix
	ReasonTime time.Time         // when the reason was set (local time), zero when not printed
	Gres       string            // the Gres value ("gpu:4", "gpu:a100:8(S:0-1)"), "" for (null)
	Fields     map[string]string // every Key=Value pair as printed
}

// Is reports whether the node's base state or one of its flags is state
// (case-insensitive), e.g. n.Is("DRAIN"), n.Is("IDLE").
func (n Node) Is(state string) bool {
	state = strings.ToUpper(state)
	return n.State == state || contains(n.Flags, state)
}

// Drained reports whether the node carries a drain flag (DRAIN, or a
// DRAINING/DRAINED base state as older versions print it).
func (n Node) Drained() bool {
	return n.Is("DRAIN") || n.Is("DRAINED") || n.Is("DRAINING")
}

// OwnedByVigil reports whether the node's reason is vigil's own ("vigil:" prefix).
func (n Node) OwnedByVigil() bool { return strings.HasPrefix(n.Reason, ReasonPrefix) }

// StaleReason reports whether the node carries a reason that no state
// explains: Slurm keeps a reason only for DOWN, DRAIN and FAIL nodes, but
// 24.11 leaves the old one in place when an admin resumes a DOWN node. Such
// a reason is a leftover that nobody holds the node with.
func (n Node) StaleReason() bool {
	return n.Reason != "" && !n.Drained() && n.ForeignState() == ""
}

// foreignStates are states that another party (an admin, the power saving
// logic, the reboot logic, Slurm's health tracking) owns. vigil neither
// drains nor resumes a node in any of them, whoever's reason it carries.
var foreignStates = []string{
	"DOWN", "MAINTENANCE", "MAINT", "REBOOT_REQUESTED", "REBOOT_ISSUED", "REBOOT",
	"POWERED_DOWN", "POWERING_DOWN", "POWER_DOWN", "POWERING_UP", "POWER_UP",
	"FAIL", "FAILING", "FUTURE", "INVAL", "INVALID_REG",
}

// ForeignState returns the first state of the node that another party owns
// (DOWN, MAINTENANCE, REBOOT_*, POWER*, FAIL*, FUTURE, INVAL), or "".
func (n Node) ForeignState() string {
	for _, s := range foreignStates {
		if n.Is(s) {
			return s
		}
	}
	return ""
}

// JobInfo is a job as `scontrol show job` reports it.
type JobInfo struct {
	ID       string
	State    string
	Reason   string
	Comment  string
	UserID   string // as printed: "alice(1000)"
	NodeList string // "" when not allocated
	Restarts int
	// Fields holds every Key=Value pair as printed, but AdminComment
	// (read it with Client.JobAdminComment: admincomment.go). Fields
	// printed after WorkDir (SystemComment, Comment, StdErr, StdIn,
	// StdOut, ...) may have been written by the job's user through
	// --chdir: they are the user's data, never vigil's or the admins'.
	Fields map[string]string

	Name       string // JobName
	User       string // the name from UserId ("alice")
	UID        int    // the number from UserId (1000)
	Partition  string
	BatchHost  string
	ExitCode   int // exit status from ExitCode=S:G
	ExitSignal int // signal from ExitCode=S:G
}

// ReasonPrefix starts every drain reason vigil sets.
const ReasonPrefix = "vigil:"

// MaxReasonLen is the longest drain reason vigil sets, in bytes. Slurm
// accepts longer ones, but sinfo and admin tools show the first few dozen
// characters; details belong in the report.
const MaxReasonLen = 256

var (
	// ErrControllerDown: an earlier command of the client could not reach
	// slurmctld, so this one was not run (Client.run).
	ErrControllerDown = errors.New("slurm: slurmctld unreachable")
	// ErrNotOurs is returned when vigil declines to touch a node another party drained.
	ErrNotOurs = errors.New("slurm: node state set by someone else")
	// ErrNoSuchNode is returned when Slurm does not know the node.
	ErrNoSuchNode = errors.New("slurm: no such node")
	// ErrNoSuchJob is returned when Slurm does not know the job (or no longer does).
	ErrNoSuchJob = errors.New("slurm: no such job")
	// ErrBadName is returned for a node name or job id that is not a single
	// plain name (hostlist expressions, spaces, '=' are refused so that one
	// call can never touch more than one node or job).
	ErrBadName = errors.New("slurm: invalid node name or job id")
)

// Client talks to Slurm through scontrol (and scancel, squeue and sbatch).
type Client struct {
	Runner  CommandRunner // nil: an ExecRunner
	BinDir  string        // where scontrol, scancel, squeue and sbatch live; "" means /usr/bin (then PATH)
	Timeout time.Duration // per command; 0 means 30s
	Env     []string      // extra environment for the commands (SLURM_CONF=...); used when Runner is nil, an *ExecRunner or an EnvRunner

	// down is the first error that said slurmctld cannot be reached:
	// once set, every later command fails at once with it (wrapping
	// ErrControllerDown), so that a run with the controller down spends
	// one command's timeout, not one per call.
	down atomic.Pointer[CommandError]
}

// DefaultTimeout is the per-command timeout when Client.Timeout is 0.
const DefaultTimeout = 30 * time.Second

func (c *Client) runner() CommandRunner {
	switch r := c.Runner.(type) {
	case nil:
		return &ExecRunner{Env: c.Env}
	case *ExecRunner:
		if len(c.Env) == 0 {
			return r
		}
		cp := *r
		cp.Env = append(append([]string(nil), r.Env...), c.Env...)
		return &cp
	default:
		return r
	}
}

// bin returns the path of a Slurm client program: BinDir/name; with no
// BinDir, /usr/bin/name, else name as found in PATH, else /usr/bin/name (the
// prolog and epilog run without PATH, so /usr/bin comes first).
func (c *Client) bin(name string) string {
	if c.BinDir != "" {
		return filepath.Join(c.BinDir, name)
	}
	p := filepath.Join("/usr/bin", name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if lp, err := exec.LookPath(name); err == nil {
		return lp
	}
	return p
}

func (c *Client) run(ctx context.Context, argv ...string) ([]byte, error) {
	if d := c.down.Load(); d != nil {
		return nil, fmt.Errorf("%w: not running %s after %v", ErrControllerDown, strings.Join(argv, " "), d)
	}
	t := c.Timeout
	if t <= 0 {
		t = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	var out []byte
	var err error
	if er, ok := c.Runner.(EnvRunner); ok {
		out, err = er.RunEnv(ctx, argv, append([]string(nil), c.Env...))
	} else {
		out, err = c.runner().Run(ctx, argv)
	}
	var ce *CommandError
	if !errors.As(err, &ce) {
		return out, err
	}
	timedOut := errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil
	if timedOut {
		// Say whose silence it was: scontrol itself keeps trying an
		// unreachable slurmctld for longer than a short timeout.
		cp := *ce
		cp.Err = fmt.Errorf("%w: no answer from slurmctld within %s", ce.Err, t)
		ce, err = &cp, &cp
	}
	if controllerDown(ce.Output()) || timedOut {
		// slurmctld could not be reached, or did not answer within the
		// timeout: later commands would wait as long for nothing.
		c.down.CompareAndSwap(nil, ce)
	}
	return out, err
}

// controllerDown reports whether scontrol's output says slurmctld could
// not be reached.
func controllerDown(out string) bool {
	return strings.Contains(out, "Unable to contact slurm controller")
}

// ControllerDown reports whether err says slurmctld could not be reached
// ("Unable to contact slurm controller") or did not answer within the
// client's timeout, from this command or an earlier one of the same
// client.
func ControllerDown(err error) bool {
	var ce *CommandError
	return errors.Is(err, ErrControllerDown) ||
		errors.As(err, &ce) && (controllerDown(ce.Output()) || errors.Is(ce.Err, context.DeadlineExceeded))
}

func (c *Client) scontrol(ctx context.Context, args ...string) ([]byte, error) {
	return c.run(ctx, append([]string{c.bin("scontrol")}, args...)...)
}

// checkNodeName refuses anything but one plain node name.
func checkNodeName(name string) error {
	if name == "" || strings.HasPrefix(name, "-") {
		return fmt.Errorf("%w: node %q", ErrBadName, name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return fmt.Errorf("%w: node %q", ErrBadName, name)
		}
	}
	return nil
}

// checkJobID accepts "123", "123_4" (array task) and "123+1" (het job component).
func checkJobID(id string) error {
	digits := func(s string) bool {
		if s == "" {
			return false
		}
		for _, r := range s {
			if r < '0' || r > '9' {
				return false
			}
		}
		return true
	}
	base, comp, hasComp := strings.Cut(id, "+")
	job, task, hasTask := strings.Cut(base, "_")
	if !digits(job) || hasTask && !digits(task) || hasComp && !digits(comp) {
		return fmt.Errorf("%w: job %q", ErrBadName, id)
	}
	return nil
}

// outputOf returns what a failed command printed (stderr, else stdout).
func outputOf(err error, stdout []byte) string {
	var ce *CommandError
	if errors.As(err, &ce) {
		return ce.Stderr + "\n" + ce.Stdout + "\n" + string(stdout)
	}
	return string(stdout)
}

// Node reads one node's state and reason with `scontrol show node -o NAME`.
// An unknown node gives an error wrapping ErrNoSuchNode.
func (c *Client) Node(ctx context.Context, name string) (Node, error) {
	if err := checkNodeName(name); err != nil {
		return Node{}, err
	}
	out, err := c.scontrol(ctx, "show", "node", "-o", name)
	if err != nil {
		// 22.05 prints "Node NAME not found" on stdout and exits 1.
		if strings.Contains(outputOf(err, out), "not found") {
			return Node{}, fmt.Errorf("slurm: node %s: %w (%v)", name, ErrNoSuchNode, err)
		}
		return Node{}, fmt.Errorf("slurm: reading node %s: %w", name, err)
	}
	return ParseNode(out, name)
}

// SanitizeReason makes a drain reason safe for `scontrol update Reason=`:
// one line (control characters and runs of white space become one space),
// double quotes (which scontrol strips) become single quotes, at most
// MaxReasonLen bytes cut at a rune boundary, and it always starts with
// ReasonPrefix ("vigil: ..."). An empty reason becomes "vigil: unspecified".
func SanitizeReason(reason string) string {
	reason = strings.ToValidUTF8(reason, "?")
	reason = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(reason), ReasonPrefix))
	var b strings.Builder
	space := false
	for _, r := range reason {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = true
			continue
		}
		if r == '"' {
			r = '\''
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	body := b.String()
	if body == "" {
		body = "unspecified"
	}
	s := ReasonPrefix + " " + body
	if len(s) > MaxReasonLen {
		cut := MaxReasonLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = strings.TrimSpace(s[:cut])
	}
	return s
}

// Drain drains a node with reason, which is passed through SanitizeReason
// (so it always starts with "vigil:").
//
// It first reads the node. When that fails, it changes nothing and returns
// the error. It changes nothing and returns an error wrapping ErrNotOurs
// when the node carries a reason that is not vigil's (whatever its state),
// or is in a state another party owns (see ForeignState: DOWN, MAINTENANCE,
// REBOOT_REQUESTED/ISSUED, POWERED_DOWN/POWERING_DOWN/POWERING_UP,
// FAIL/FAILING ...), even with a vigil reason. When the node is already
// drained by vigil, the reason is replaced by the new one (the newest
// finding is the one worth showing; the report keeps the history), unless
// it is the same. Otherwise it runs
// `scontrol update NodeName=NODE State=DRAIN Reason=REASON`.
//
// Race: scontrol has no compare-and-set. If an admin drains the node or sets
// a reason between the read and the update (a few milliseconds), vigil's
// reason replaces the admin's. The window is kept to one scontrol round
// trip: nothing else runs between the read and the update.
func (c *Client) Drain(ctx context.Context, node, reason string) error {
	if err := checkNodeName(node); err != nil {
		return err
	}
	reason = SanitizeReason(reason)
	n, err := c.Node(ctx, node)
	if err != nil {
		return fmt.Errorf("slurm: not draining %s: cannot read its state: %w", node, err)
	}
	if err := notOurs(n); err != nil {
		return fmt.Errorf("slurm: not draining %s: %w", node, err)
	}
	if n.Drained() && n.Reason == reason {
		return nil
	}
	if _, err := c.scontrol(ctx, "update", "NodeName="+node, "State=DRAIN", "Reason="+reason); err != nil {
		return fmt.Errorf("slurm: draining %s: %w", node, err)
	}
	return nil
}

// notOurs returns an error wrapping ErrNotOurs when the node's reason or
// state belongs to someone else.
func notOurs(n Node) error {
	if n.RebootedDown() {
		return nil // back from vigil's own reboot with nextstate=DOWN
	}
	if n.Reason != "" && !n.OwnedByVigil() && !n.StaleReason() {
		return fmt.Errorf("%w: state %s, reason %q by %s", ErrNotOurs, n.stateString(), n.Reason, n.ReasonUser)
	}
	if s := n.ForeignState(); s != "" {
		return fmt.Errorf("%w: state %s (%s), reason %q", ErrNotOurs, n.stateString(), s, n.Reason)
	}
	if n.Drained() && n.Reason == "" {
		return fmt.Errorf("%w: drained without a reason", ErrNotOurs)
	}
	return nil
}

func (n Node) stateString() string {
	return strings.Join(append([]string{n.State}, n.Flags...), "+")
}

// Resume resumes a node only when it is drained with vigil's own reason. It
// reports whether it resumed the node.
//
// It reads the node immediately before acting. When the read fails it
// returns (false, err). When the node is not drained and carries no foreign
// reason or state, there is nothing to resume: (false, nil). When it carries
// a reason that is not vigil's, or a state another party owns (see Drain),
// it returns (false, error wrapping ErrNotOurs). Only a node that is drained,
// with a reason starting with "vigil:", and in no foreign state is resumed
// with `scontrol update NodeName=NODE State=RESUME`: (true, nil), and so is
// a node back DOWN from vigil's own reboot (Node.RebootedDown).
//
// Race: an admin who drains the node with their own reason between the read
// and the update (one scontrol round trip) is overridden; Slurm offers no
// conditional update.
func (c *Client) Resume(ctx context.Context, node string) (bool, error) {
	if err := checkNodeName(node); err != nil {
		return false, err
	}
	n, err := c.Node(ctx, node)
	if err != nil {
		return false, fmt.Errorf("slurm: not resuming %s: cannot read its state: %w", node, err)
	}
	if err := notOurs(n); err != nil {
		return false, fmt.Errorf("slurm: not resuming %s: %w", node, err)
	}
	if !(n.Drained() && n.OwnedByVigil()) && !n.RebootedDown() {
		return false, nil
	}
	if _, err := c.scontrol(ctx, "update", "NodeName="+node, "State=RESUME"); err != nil {
		return false, fmt.Errorf("slurm: resuming %s: %w", node, err)
	}
	return true, nil
}

// ResumeIfReason resumes the node only while it is drained with exactly
// reason (one that is not vigil's, such as Slurm's own "Prolog error") and
// in no state another party owns (down, maintenance, reboot...): (true,
// nil). Any other node is left alone: (false, nil). The same race as
// Resume applies.
func (c *Client) ResumeIfReason(ctx context.Context, node, reason string) (bool, error) {
	if err := checkNodeName(node); err != nil {
		return false, err
	}
	n, err := c.Node(ctx, node)
	if err != nil {
		return false, fmt.Errorf("slurm: not resuming %s: cannot read its state: %w", node, err)
	}
	if !n.Drained() || n.Reason != reason || n.ForeignState() != "" {
		return false, nil
	}
	if _, err := c.scontrol(ctx, "update", "NodeName="+node, "State=RESUME"); err != nil {
		return false, fmt.Errorf("slurm: resuming %s: %w", node, err)
	}
	return true, nil
}

// isNoSuchJob reports whether a failed command said the job id is unknown.
func isNoSuchJob(err error, out []byte) bool {
	return strings.Contains(outputOf(err, out), "Invalid job id")
}

func jobErr(op, id string, err error, out []byte) error {
	if isNoSuchJob(err, out) {
		return fmt.Errorf("slurm: %s job %s: %w (%v)", op, id, ErrNoSuchJob, err)
	}
	return fmt.Errorf("slurm: %s job %s: %w", op, id, err)
}

// Job shows one job with `scontrol show job -o ID`. For an array job id it
// returns the record whose JobId is id, else the first. An unknown (or
// purged) job gives an error wrapping ErrNoSuchJob.
func (c *Client) Job(ctx context.Context, id string) (JobInfo, error) {
	if err := checkJobID(id); err != nil {
		return JobInfo{}, err
	}
	out, err := c.scontrol(ctx, "show", "job", "-o", id)
	if err != nil {
		return JobInfo{}, jobErr("showing", id, err, out)
	}
	return ParseJob(out, id)
}

// oneLine makes a comment one line for scontrol: control characters
// become spaces, double quotes single quotes, invalid UTF-8 '?'.
func oneLine(comment string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '"':
			return '\''
		case unicode.IsControl(r):
			return ' '
		}
		return r
	}, strings.ToValidUTF8(comment, "?"))
}

// SetJobComment replaces the job's comment with
// `scontrol update JobId=ID Comment=COMMENT`. The comment is made one line
// (control characters become spaces, double quotes single quotes).
func (c *Client) SetJobComment(ctx context.Context, id, comment string) error {
	if err := checkJobID(id); err != nil {
		return err
	}
	comment = oneLine(comment)
	out, err := c.scontrol(ctx, "update", "JobId="+id, "Comment="+comment)
	if err != nil {
		return jobErr("commenting", id, err, out)
	}
	return nil
}

// SetJobAdminComment replaces the job's AdminComment with
// `scontrol update JobId=ID AdminComment=TEXT`, made one line like a
// comment. Only Slurm's administrators (root, SlurmUser, operators) may
// set it, so its text is the administrators' word, never the user's.
func (c *Client) SetJobAdminComment(ctx context.Context, id, text string) error {
	if err := checkJobID(id); err != nil {
		return err
	}
	out, err := c.scontrol(ctx, "update", "JobId="+id, "AdminComment="+oneLine(text))
	if err != nil {
		return jobErr("setting the admin comment of", id, err, out)
	}
	return nil
}

// Requeue requeues the job with `scontrol requeue ID`, or
// `scontrol requeuehold ID` (held until released) when hold is true.
func (c *Client) Requeue(ctx context.Context, id string, hold bool) error {
	if err := checkJobID(id); err != nil {
		return err
	}
	verb := "requeue"
	if hold {
		verb = "requeuehold"
	}
	out, err := c.scontrol(ctx, verb, id)
	if err != nil {
		return jobErr("requeueing", id, err, out)
	}
	return nil
}

// Cancel cancels the job with `scancel ID`. scancel exits 0 for an unknown
// or finished job, so cancelling such a job returns nil.
func (c *Client) Cancel(ctx context.Context, id string) error {
	if err := checkJobID(id); err != nil {
		return err
	}
	out, err := c.run(ctx, c.bin("scancel"), id)
	if err != nil {
		return jobErr("cancelling", id, err, out)
	}
	return nil
}

// NodeGresGPUs returns the number of GPUs in the node's configured Gres
// (gpu:N, gpu:TYPE:N, several entries summed; 0 when it has none).
func (c *Client) NodeGresGPUs(ctx context.Context, node string) (int, error) {
	n, err := c.Node(ctx, node)
	if err != nil {
		return 0, err
	}
	count, err := ParseGresGPUs(n.Gres)
	if err != nil {
		return 0, fmt.Errorf("slurm: node %s: %w", node, err)
	}
	return count, nil
}

// Config returns the key/value pairs of `scontrol show config` (e.g.
// "MailProg" → "/usr/bin/mail", "SLURM_VERSION" → "22.05.8"); values as
// printed, units included ("SlurmdTimeout" → "300 sec").
func (c *Client) Config(ctx context.Context) (map[string]string, error) {
	out, err := c.scontrol(ctx, "show", "config")
	if err != nil {
		return nil, fmt.Errorf("slurm: reading config: %w", err)
	}
	cfg := ParseConfig(out)
	if len(cfg) == 0 {
		return nil, fmt.Errorf("slurm: no settings in scontrol show config output %q", textutil.Cut(string(out), 200, "..."))
	}
	return cfg, nil
}
