package slurm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// A job's AdminComment is the administrators' word: only root, SlurmUser
// and operators may set it, and vigil's cross-node relay trusts it for
// that. `scontrol show job -o` cannot carry it soundly: it prints the
// job's WorkDir (the user's --chdir, free text that may hold spaces and
// '=') just before AdminComment, and AdminComment only when it is set, so
// a directory named "x AdminComment=WORD" reads like an AdminComment of
// WORD (measured on Slurm 22.05 and 24.11). The -o parser therefore never
// fills it (jobFromFields drops it). JobAdminComment reads it from JSON,
// where each field is its own string: `scontrol --json show job ID` where
// scontrol has --json (Slurm 23.02 and later), else `squeue --json
// --jobs=ID` (Slurm 22.05's scontrol has no --json; its squeue has).

// ErrNoJSON is returned when neither scontrol nor squeue can print the job
// as JSON: the AdminComment is then unknown, never read from other text.
var ErrNoJSON = errors.New("slurm: no JSON output of jobs (scontrol --json, squeue --json)")

// jobsJSON is the part of Slurm's JSON job listing JobAdminComment reads.
type jobsJSON struct {
	Jobs []struct {
		JobID        json.RawMessage `json:"job_id"`
		AdminComment *string         `json:"admin_comment"`
	} `json:"jobs"`
}

// JobAdminComment returns the job's AdminComment ("" when it has none), read
// from Slurm's JSON output. An unknown job gives an error wrapping
// ErrNoSuchJob; a Slurm without JSON output one wrapping ErrNoJSON.
func (c *Client) JobAdminComment(ctx context.Context, id string) (string, error) {
	if err := checkJobID(id); err != nil {
		return "", err
	}
	out, err := c.scontrol(ctx, "--json", "show", "job", id)
	if err != nil && noJSONOption(err, out) {
		out, err = c.run(ctx, c.bin("squeue"), "--json", "--jobs="+id)
		if err != nil && noJSONOption(err, out) {
			return "", fmt.Errorf("%w: %v", ErrNoJSON, err)
		}
	}
	if err != nil {
		return "", jobErr("reading the admin comment of", id, err, out)
	}
	return ParseJobAdminComment(out, id)
}

// noJSONOption reports whether a command failed because it has no --json
// option, or no plugin to print JSON with.
func noJSONOption(err error, out []byte) bool {
	s := outputOf(err, out)
	return strings.Contains(s, "unrecognized option '--json'") || strings.Contains(s, "unrecognized option `--json'") ||
		strings.Contains(s, "serializer") || strings.Contains(s, "data_parser")
}

// ParseJobAdminComment returns the admin_comment of job id in Slurm's JSON
// job listing ("" for none, null or absent). A listing without the job
// gives an error wrapping ErrNoSuchJob; output that is not JSON an error.
func ParseJobAdminComment(out []byte, id string) (string, error) {
	var doc jobsJSON
	// scontrol and squeue may print warnings before the document.
	if i := bytes.IndexByte(out, '{'); i > 0 {
		out = out[i:]
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return "", fmt.Errorf("slurm: JSON of job %s: %w", id, err)
	}
	want, err := strconv.ParseUint(id, 10, 32)
	if err != nil {
		return "", fmt.Errorf("%w: job %q is not a plain job id", ErrBadName, id)
	}
	for _, j := range doc.Jobs {
		if n, ok := jobNumber(j.JobID); ok && n == want {
			if j.AdminComment == nil {
				return "", nil
			}
			return *j.AdminComment, nil
		}
	}
	return "", fmt.Errorf("slurm: job %s not in the JSON listing: %w", id, ErrNoSuchJob)
}

// jobNumber reads a job_id: a number (22.05, 24.11) or, as some data
// parsers print integers, {"set":true,"number":N}.
func jobNumber(raw json.RawMessage) (uint64, bool) {
	var n uint64
	if json.Unmarshal(raw, &n) == nil {
		return n, true
	}
	var v struct {
		Set    bool   `json:"set"`
		Number uint64 `json:"number"`
	}
	if json.Unmarshal(raw, &v) == nil && v.Set {
		return v.Number, true
	}
	return 0, false
}
