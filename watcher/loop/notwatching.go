package loop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
)

// MaxNotWatchingNote bounds the job comment's note, in bytes (as the hang
// notes are bounded: squeue and scontrol show it whole).
const MaxNotWatchingNote = 200

// NotWatchingNote is vigil's part of the job comment when the watcher cannot
// watch the job: "vigil: not watching: WHY", cut to MaxNotWatchingNote.
func NotWatchingNote(why string) string {
	note := slurm.ReasonPrefix + " not watching: " + strings.Join(strings.Fields(why), " ")
	if len(note) > MaxNotWatchingNote {
		note = strings.ToValidUTF8(note[:MaxNotWatchingNote-3], "") + "..."
	}
	return note
}

// NotWatching tells the user of the job this process runs in that the job
// runs unwatched, and why (a watcher that vigil's SPANK plugin started
// writes its own log to a file the user may never read): the job's comment
// gets vigil's note (NotWatchingNote, the user's part kept), and the node
// that runs the batch script appends one line ("vigil-watch: not watching
// this job: WHY") to the job's standard error file, once it exists (a
// watcher that starts before the batch step waits for the file, at most
// until ctx ends). Outside a job it does nothing.
func NotWatching(ctx context.Context, c slurm.JobCommenter, lookup func(string) (string, bool), why string, poll time.Duration) error {
	job, err := slurm.JobFromEnv(lookup)
	if err != nil {
		return nil // not in a job: stderr is all there is
	}
	var errs []error
	note := NotWatchingNote(why)
	if _, err := slurm.WriteJobComment(ctx, c, job.ID, func(old string) (string, bool) {
		user, _ := slurm.SplitComment(old)
		return slurm.JoinComment(user, note), true
	}); err != nil {
		errs = append(errs, fmt.Errorf("job %s's comment: %w", job.ID, err))
	}
	info, err := c.Job(ctx, job.ID)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if writesOutput(info, job) {
		line := "vigil-watch: not watching this job: " + strings.Join(strings.Fields(why), " ") + "\n"
		if err := appendWhenThere(ctx, info.Fields["StdErr"], line, poll); err != nil {
			errs = append(errs, fmt.Errorf("job %s's output: %w", job.ID, err))
		}
	}
	return errors.Join(errs...)
}

// writesOutput says whether this node tells the job's output: the batch
// host, else the job's first node, so that one line is written however many
// nodes share the file system.
func writesOutput(info slurm.JobInfo, job *slurm.Job) bool {
	path := info.Fields["StdErr"]
	if path == "" || path == "(null)" || strings.Contains(path, "%") || path == "/dev/null" {
		return false
	}
	if info.BatchHost != "" {
		return info.BatchHost == job.NodeName
	}
	return len(job.Nodes) > 0 && job.Nodes[0] == job.NodeName
}

// appendWhenThere appends line to the file at path once the file exists
// (slurmstepd creates, and truncates, the job's output when the batch step
// starts), looking every poll until ctx ends.
func appendWhenThere(ctx context.Context, path, line string, poll time.Duration) error {
	for {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			_, err = f.WriteString(line)
			return errors.Join(err, f.Close())
		}
		if !errors.Is(err, os.ErrNotExist) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s never appeared: %w", path, err)
		case <-time.After(poll):
		}
	}
}

// NotWatchingWait bounds how long TellNotWatching waits for the job's
// output file to appear.
const NotWatchingWait = 2 * time.Minute

// TellNotWatching is NotWatching through scontrol (/usr/bin's, else the
// one on PATH: the config that names slurm_bin_dir may be what is wrong),
// waiting at most NotWatchingWait; why is vigil-watch's error output, whose
// "vigil-watch: " prefixes and "(see ...)" pointers are left out.
func TellNotWatching(ctx context.Context, lookup func(string) (string, bool), why string) error {
	ctx, cancel := context.WithTimeout(ctx, NotWatchingWait)
	defer cancel()
	c := &slurm.Client{}
	return NotWatching(ctx, c, lookup, plainError(why), time.Second)
}

// plainError joins vigil-watch's error lines into one sentence without
// their "vigil-watch: " prefixes and "(see vigil-watch --help)" pointers.
func plainError(out string) string {
	var parts []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "vigil-watch: "))
		if i := strings.LastIndex(l, " (see vigil-watch"); i >= 0 {
			l = l[:i]
		}
		if l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}
