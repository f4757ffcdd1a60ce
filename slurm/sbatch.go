package slurm

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/internal/textutil"
)

// BatchJob is a batch job vigil submits itself (the idle validation): one
// node, whole, for a command. Every field becomes one sbatch option; the
// command is the batch script (sbatch --wrap), each word quoted for sh.
type BatchJob struct {
	// Name is the job's name (--job-name).
	Name string
	// Node is the one node the job runs on (--nodelist, --nodes=1); the
	// job takes it whole (--exclusive, --mem=0).
	Node string
	// Partition, QOS, Reservation and Account are passed when not "".
	Partition, QOS, Reservation, Account string
	// Gres is the node's GPUs to take as well (--gres, "gpu:4",
	// "gpu:a100:8"); "" for none.
	Gres string
	// TimeLimit is the job's time limit (--time), at least a minute.
	TimeLimit time.Duration
	// Chdir is the job's working directory (--chdir).
	Chdir string
	// Output is the job's output file (--output).
	Output string
	// Command is the argv the job runs.
	Command []string
}

// ErrSubmit is wrapped by errors of a submission that sbatch refused.
var ErrSubmit = errors.New("slurm: submission refused")

// Submit submits j with `sbatch --parsable ...` (SubmitArgv) and returns
// the job id. A refused submission (invalid partition, node or
// reservation; a node that cannot run the job) returns an error wrapping
// ErrSubmit with sbatch's message.
func (c *Client) Submit(ctx context.Context, j BatchJob) (string, error) {
	argv, err := j.argv()
	if err != nil {
		return "", err
	}
	out, err := c.run(ctx, append([]string{c.bin("sbatch")}, argv...)...)
	if err != nil {
		var ce *CommandError
		if errors.As(err, &ce) && ce.ExitCode > 0 && !ControllerDown(err) {
			return "", fmt.Errorf("%w: %s on %s: %s", ErrSubmit, j.Name, j.Node, sbatchWhy(ce.Output()))
		}
		return "", fmt.Errorf("slurm: submitting %s: %w", j.Name, err)
	}
	return ParseSubmitted(out)
}

// SubmitArgv is the sbatch command line of j, after the program's path:
// exact, for tests and for the sweep's dry run.
func (j BatchJob) SubmitArgv() ([]string, error) { return j.argv() }

func (j BatchJob) argv() ([]string, error) {
	if err := checkNodeName(j.Node); err != nil {
		return nil, err
	}
	if len(j.Command) == 0 || j.Name == "" || j.TimeLimit < time.Minute {
		return nil, fmt.Errorf("slurm: batch job %q: want a name, a command and a time limit of a minute or more", j.Name)
	}
	for _, v := range []string{j.Name, j.Partition, j.QOS, j.Reservation, j.Account, j.Gres, j.Chdir, j.Output} {
		if strings.ContainsAny(v, "\n\x00") {
			return nil, fmt.Errorf("slurm: batch job %q: a value holds a newline or NUL", j.Name)
		}
	}
	argv := []string{"--parsable", "--job-name=" + j.Name}
	opt := func(name, v string) {
		if v != "" {
			argv = append(argv, "--"+name+"="+v)
		}
	}
	opt("partition", j.Partition)
	opt("qos", j.QOS)
	opt("reservation", j.Reservation)
	opt("account", j.Account)
	argv = append(argv, "--nodelist="+j.Node, "--nodes=1", "--ntasks=1", "--exclusive", "--mem=0")
	opt("gres", j.Gres)
	argv = append(argv, "--time="+SlurmTime(j.TimeLimit))
	opt("chdir", j.Chdir)
	opt("output", j.Output)
	return append(argv, "--wrap="+ShellCommand(j.Command)), nil
}

// SlurmTime writes d as Slurm's time limit "D-HH:MM:SS", rounded up to
// the minute (sbatch --time counts minutes).
func SlurmTime(d time.Duration) string {
	m := int64((d + time.Minute - 1) / time.Minute)
	return fmt.Sprintf("%d-%02d:%02d:00", m/(24*60), m/60%24, m%60)
}

// ShellCommand is argv as one sh command line: "exec" and each word in
// single quotes, so that no word is split, globbed or expanded.
func ShellCommand(argv []string) string {
	words := []string{"exec"}
	for _, a := range argv {
		words = append(words, "'"+strings.ReplaceAll(a, "'", `'\''`)+"'")
	}
	return strings.Join(words, " ")
}

// ParseSubmitted reads the job id that `sbatch --parsable` prints ("123",
// or "123;cluster" on a federation; warnings may come first).
func ParseSubmitted(out []byte) (string, error) {
	s := strings.TrimSpace(string(out))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[i+1:])
	}
	id, _, _ := strings.Cut(s, ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("slurm: sbatch printed %q, not a job id", textutil.Cut(string(out), 200, "..."))
	}
	return id, nil
}

// sbatchWhy is the last line of sbatch's message s, without its prefixes
// ("sbatch: error: Batch job submission failed: "): the one that says why.
func sbatchWhy(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	return strings.TrimPrefix(strings.TrimPrefix(l, "sbatch: error: "), "Batch job submission failed: ")
}

// GPUGres is the GPU part of a node's Gres value, as sbatch --gres takes
// it to ask for all of them: "gpu:4" stays, "gpu:a100:4(S:0-1)" is
// "gpu:a100:4", other resources are left out ("" for none).
func GPUGres(gres string) string {
	if gres == "" || gres == "(null)" {
		return ""
	}
	var out []string
	for _, item := range splitTopLevel(gres) {
		if p := strings.IndexByte(item, '('); p >= 0 {
			item = item[:p]
		}
		if item == "gpu" || strings.HasPrefix(item, "gpu:") {
			out = append(out, item)
		}
	}
	return strings.Join(out, ",")
}
