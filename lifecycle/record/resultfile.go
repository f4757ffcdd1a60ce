package record

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// JobResult is the small file the prolog of each node leaves for the job's
// user ([prolog] result_dir): this node's verdict and its failing checks.
type JobResult struct {
	// Job is the job id.
	Job string `json:"job"`
	// Node is the node this prolog ran on.
	Node string `json:"node"`
	// Verdict is pass, fail or unknown.
	Verdict benchmarks.Status `json:"verdict"`
	// Requeued is true when the prolog failed, so Slurm requeued the job.
	Requeued bool `json:"requeued"`
	// Action is what vigil did to the node (drain, resume, none, ...).
	Action string `json:"action"`
	// Start is when the prolog began.
	Start time.Time `json:"start"`
	// DurationS is how long it ran, in seconds.
	DurationS float64 `json:"duration_s"`
	// Failed are the failing checks.
	Failed []JobResultCheck `json:"failed,omitempty"`
	// Checks names every check that ran and its status.
	Checks map[string]benchmarks.Status `json:"checks"`
	// Skipped says why no checks ran, when none did.
	Skipped string `json:"skipped,omitempty"`
}

// JobResultCheck is one failing check in a JobResult.
type JobResultCheck struct {
	Check   string `json:"check"`
	Reason  string `json:"reason,omitempty"`
	Device  string `json:"device,omitempty"`
	Message string `json:"message,omitempty"`
}

// NewJobResult is the result file's content for a run's report.
func NewJobResult(rep *report.Report) JobResult {
	jr := JobResult{Job: rep.Job, Node: rep.Node, Verdict: rep.Verdict, Requeued: rep.ExitCode == decide.ExitFail,
		Action: rep.Action.Kind, Start: rep.Start.UTC(), DurationS: rep.Duration.Round(time.Millisecond).Seconds(),
		Checks: map[string]benchmarks.Status{}, Skipped: rep.Skipped}
	for _, res := range rep.Results {
		jr.Checks[res.Check] = res.Status
		if res.Status == benchmarks.StatusFail {
			jr.Failed = append(jr.Failed, JobResultCheck{Check: res.Check, Reason: res.Reason, Device: res.Device, Message: res.Message})
		}
	}
	return jr
}

// JobResultName is the result file's name: vigil-JOBID-NODE.json.
func JobResultName(job, node string) string {
	return "vigil-" + filepath.Base(job) + "-" + filepath.Base(node) + ".json"
}

// ErrResultDir is wrapped when the result directory may not be written:
// not a directory, or one the job's user may not write.
var ErrResultDir = errors.New("result directory refused")

// WriteJobResult writes data as dir/name for the job's user uid:gid, mode
// 0644, atomically. Root writes it (then gives it to the user) only where
// no user can put anything or redirect a path: dir and every directory
// above it root's and not writable by others (osutil.RootOwnedDir), as a
// spool the admin made. Anywhere else it is written as the user
// (WriteJobResultAsUser), so the kernel decides as it would for them.
func WriteJobResult(dir, name string, data []byte, uid, gid int) error {
	if err := osutil.RootOwnedDir(dir); err != nil {
		return WriteJobResultAsUser(dir, name, data, uid, gid)
	}
	return writeAsRoot(dir, name, data, uid, gid)
}

// WriteJobResultAsUser writes data as dir/name with the job's user's own
// file-system identity (osutil.WriteFileAsUser): the job's working
// directory is the user's word (sbatch --chdir), so root never creates
// anything there; a directory the user may not write is ErrResultDir.
func WriteJobResultAsUser(dir, name string, data []byte, uid, gid int) error {
	if !filepath.IsAbs(dir) {
		return fmt.Errorf("%q: %w: not an absolute path", dir, ErrResultDir)
	}
	err := osutil.WriteFileAsUser(dir, name, data, 0o644, uid, gid)
	if errors.Is(err, osutil.ErrNotPermitted) {
		return fmt.Errorf("%s: %w: the job's user (uid %d) may not write there: %w", dir, ErrResultDir, uid, err)
	}
	return err
}

// writeAsRoot writes data as dir/name owned by uid:gid, mode 0644,
// atomically: a temporary file created (never opened through a link) in
// the directory, chowned, synced and renamed over name, every step
// relative to the directory opened once (os.Root). dir is root's own
// (osutil.RootOwnedDir).
func writeAsRoot(dir, name string, data []byte, uid, gid int) (err error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + name + ".tmp" + hex.EncodeToString(rnd[:])
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			root.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chown(uid, gid); err != nil {
		return err
	}
	if err = f.Chmod(0o644); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return root.Rename(tmp, name)
}

// ResultDir is where a run's result file goes ([prolog] result_dir, the
// job's working directory for "workdir"), "" for none.
func ResultDir(p config.Prolog, lookup func(string) (string, bool)) string {
	d := p.ResultDir
	if d == config.ResultDirWorkdir {
		d, _ = lookup("SLURM_JOB_WORK_DIR")
	}
	return d
}

// WriteRunResult leaves the job's user this node's result (rep) in dir
// ("" for none); userDir says dir is the job's working directory, written
// only as the user. Failures are logged and noted.
func WriteRunResult(rep *report.Report, job *slurm.Job, dir string, userDir bool, log logrus.FieldLogger, note func(format string, args ...any)) {
	if dir == "" {
		return
	}
	if job.UID < 0 || job.GID < 0 {
		note("result file not written: the job's uid/gid are unknown")
		return
	}
	b, err := json.MarshalIndent(NewJobResult(rep), "", "  ")
	if err == nil {
		write := WriteJobResult
		if userDir {
			write = WriteJobResultAsUser
		}
		err = write(dir, JobResultName(job.ID, rep.Node), append(b, '\n'), job.UID, job.GID)
	}
	if err != nil {
		log.WithError(err).Warn("writing the job's result file")
		note("result file not written: %v", err)
	}
}
