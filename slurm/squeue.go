package slurm

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/vigil-hpc/vigil/internal/textutil"
)

// QueuedJob is one job as squeue lists it: its id, state and name.
type QueuedJob struct {
	ID    string // "123", "123_4" for an array task
	State string // PENDING, RUNNING, COMPLETED, PREEMPTED ...
	Name  string
}

// Active reports whether the job is still in the queue or on its node:
// pending, configuring, running, suspended, completing, requeued or
// stopped (anything but an end state).
func (j QueuedJob) Active() bool {
	switch j.State {
	case "PENDING", "CONFIGURING", "RUNNING", "SUSPENDED", "COMPLETING", "REQUEUED", "REQUEUE_FED",
		"REQUEUE_HOLD", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD":
		return true
	}
	return false
}

// ownJobsFormat is squeue's --format for OwnJobs: the name last, since a
// job name may hold '|'.
const ownJobsFormat = "%i|%T|%j"

// OwnJobs lists the jobs of the user that runs it with
// `squeue --me --noheader --states=all --format=%i|%T|%j`: those in the
// queue and those that ended within Slurm's MinJobAge.
func (c *Client) OwnJobs(ctx context.Context) ([]QueuedJob, error) {
	out, err := c.run(ctx, c.bin("squeue"), "--me", "--noheader", "--states=all", "--format="+ownJobsFormat)
	if err != nil {
		return nil, fmt.Errorf("slurm: listing own jobs: %w", err)
	}
	return ParseOwnJobs(out)
}

// ParseOwnJobs parses OwnJobs' squeue output, one "ID|STATE|NAME" a line.
func ParseOwnJobs(out []byte) ([]QueuedJob, error) {
	var jobs []QueuedJob
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 || checkJobID(parts[0]) != nil || parts[1] == "" {
			return nil, fmt.Errorf("slurm: squeue line %q is not ID|STATE|NAME", textutil.Cut(line, 200, "..."))
		}
		jobs = append(jobs, QueuedJob{ID: parts[0], State: parts[1], Name: parts[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("slurm: reading squeue output: %w", err)
	}
	return jobs, nil
}
