package lifecycle

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/lifecycle/record"
)

// nobodyID is the unprivileged uid and gid the job's user has in these tests.
const nobodyID = 65534

// reachable is a fresh directory (mode 0755, owned by root) that every
// user can reach: its parents are opened up to 0755 too.
func reachable(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, p := range []string{d, filepath.Dir(d)} {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// nobodyJob is the job environment of a job of uid/gid 65534 whose
// working directory is work.
func nobodyJob(work string) env {
	e := jobEnv()
	e["SLURM_JOB_UID"], e["SLURM_JOB_GID"], e["SLURM_JOB_WORK_DIR"] = "65534", "65534", work
	return e
}

// TestWorkdirResultIsWrittenAsTheUser: with result_dir = "workdir" the
// user names the directory (sbatch --chdir). A root-owned directory, a
// link the user made to one, and a link in place of the file to a root
// file get nothing from root: the file is written with the user's own
// credentials, so the kernel refuses what the user could not do. The
// user's own directory gets the file, owned by the user.
func TestWorkdirResultIsWrittenAsTheUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the job's user is another uid")
	}
	const conf = "checks = [\"t-pass\"]\nresult_dir = \"workdir\""
	t.Run("a root-owned directory", func(t *testing.T) {
		rootDir := reachable(t)
		_, o := resultRun(t, conf, false, nobodyJob(rootDir))
		if ents, _ := os.ReadDir(rootDir); len(ents) != 0 {
			t.Fatalf("root wrote into %s: %v", rootDir, ents)
		}
		if notes := strings.Join(o.Report.Notes, "\n"); !strings.Contains(notes, "result file not written") ||
			!strings.Contains(notes, "the job's user (uid 65534) may not write there") {
			t.Fatalf("notes:\n%s", notes)
		}
	})
	t.Run("the user's link to a root-owned directory", func(t *testing.T) {
		rootDir, home := reachable(t), reachable(t)
		if err := os.Chown(home, nobodyID, nobodyID); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(home, "out")
		if err := os.Symlink(rootDir, link); err != nil {
			t.Fatal(err)
		}
		resultRun(t, conf, false, nobodyJob(link))
		if ents, _ := os.ReadDir(rootDir); len(ents) != 0 {
			t.Fatalf("root wrote through the link into %s: %v", rootDir, ents)
		}
	})
	t.Run("the user's own directory, a link in place of the file", func(t *testing.T) {
		home, victimDir := reachable(t), reachable(t)
		if err := os.Chown(home, nobodyID, nobodyID); err != nil {
			t.Fatal(err)
		}
		victim := filepath.Join(victimDir, "shadow")
		if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, filepath.Join(home, "vigil-42-n1.json")); err != nil {
			t.Fatal(err)
		}
		_, o := resultRun(t, conf, false, nobodyJob(home))
		if b, _ := os.ReadFile(victim); string(b) != "keep" {
			t.Fatalf("the link's target was written: %q", b)
		}
		fi, err := os.Lstat(filepath.Join(home, "vigil-42-n1.json"))
		if err != nil || !fi.Mode().IsRegular() {
			t.Fatalf("result file %v, %v (notes %q)", fi, err, o.Report.Notes)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != nobodyID || st.Gid != nobodyID || fi.Mode().Perm() != 0o644 {
			t.Errorf("result file %v %d:%d, want -rw-r--r-- 65534:65534", fi.Mode(), st.Uid, st.Gid)
		}
	})
}

// TestAdminResultDirRootOnlyWhereNoUserCanRedirect: a result_dir the
// admin made root's own (0755, root all the way up) is written by root and
// given to the user; one a user could redirect (a parent anyone can write)
// is written as the user, who may not write there.
func TestAdminResultDirRootOnlyWhereNoUserCanRedirect(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the job's user is another uid")
	}
	spool := filepath.Join(reachable(t), "results")
	if err := os.Mkdir(spool, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := record.WriteJobResult(spool, "vigil-1-n1.json", []byte("{}"), nobodyID, nobodyID); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(spool, "vigil-1-n1.json"))
	if err != nil || fi.Sys().(*syscall.Stat_t).Uid != nobodyID {
		t.Fatalf("root-owned spool: %v, %v", fi, err)
	}

	open := reachable(t)
	if err := os.Chmod(open, 0o777); err != nil { // not sticky: anyone may rename what is in it
		t.Fatal(err)
	}
	spool = filepath.Join(open, "results")
	if err := os.Mkdir(spool, 0o755); err != nil {
		t.Fatal(err)
	}
	err = record.WriteJobResult(spool, "vigil-1-n1.json", []byte("{}"), nobodyID, nobodyID)
	if !errors.Is(err, record.ErrResultDir) || !errors.Is(err, osutil.ErrNotPermitted) {
		t.Fatalf("err = %v, want record.ErrResultDir: the user may not write there", err)
	}
	if ents, _ := os.ReadDir(spool); len(ents) != 0 {
		t.Fatalf("root wrote into %s: %v", spool, ents)
	}
}
