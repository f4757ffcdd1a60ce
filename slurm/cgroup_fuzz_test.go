package slurm

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzParsePIDs checks the cgroup.procs reader: every PID it takes is
// positive and is a line of the file, errors name the file, and the PIDs
// written back one per line (as the kernel does) read back the same.
// Seeds: every cgroup.procs of the fixture trees under testdata/cgroup, and
// the root cgroup.procs of a cgroup v1 host (testdata/captured).
func FuzzParsePIDs(f *testing.F) {
	err := filepath.WalkDir(filepath.Join("testdata", "cgroup"), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "cgroup.procs" {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			f.Add(b)
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	host, err := os.ReadFile(filepath.Join("testdata", "captured", "cgroup.procs"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(host)
	f.Add([]byte(" 7 \n\n+8\n"))
	f.Add([]byte("9223372036854775807\n-1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		seen := map[int]struct{}{}
		err := parsePIDs(b, "/cg", seen)
		if err != nil {
			if !strings.Contains(err.Error(), "/cg/cgroup.procs") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		lines := map[string]bool{}
		for _, l := range bytes.Split(b, []byte{'\n'}) {
			lines[string(bytes.TrimSpace(l))] = true
		}
		var out []byte
		for pid := range seen {
			if pid <= 0 {
				t.Fatalf("%q: pid %d", b, pid)
			}
			if !spelled(lines, pid) {
				t.Fatalf("%q: pid %d is not a line of the file", b, pid)
			}
			out = strconv.AppendInt(out, int64(pid), 10)
			out = append(out, '\n')
		}
		again := map[int]struct{}{}
		if err := parsePIDs(out, "/cg", again); err != nil || len(again) != len(seen) {
			t.Fatalf("%q re-read as %v, %v", out, again, err)
		}
		for pid := range seen {
			if _, ok := again[pid]; !ok {
				t.Fatalf("%q lost pid %d", out, pid)
			}
		}
	})
}

// spelled reports whether one of lines spells pid ("7", "+7", "007").
func spelled(lines map[string]bool, pid int) bool {
	for l := range lines {
		if n, err := strconv.Atoi(l); err == nil && n == pid {
			return true
		}
	}
	return false
}

// FuzzFindJobCgroup looks up arbitrary job ids, node names and uids
// (SLURM_JOB_ID and SLURMD_NODENAME come from the environment) in the
// fixture trees: what it finds is always a job_<id> directory inside the
// root, and a miss wraps ErrNoJobCgroup.
func FuzzFindJobCgroup(f *testing.F) {
	f.Add("42", "n1", 1000)
	f.Add("42", "", -1)
	f.Add("7", "", 0)
	f.Add("9", "n2", 0)
	f.Add("5", "", 0)
	f.Add("..", "..", -1)
	f.Add("1", "", 0)
	roots, err := filepath.Glob(filepath.Join("testdata", "cgroup", "*", ""))
	roots = slices.DeleteFunc(roots, func(r string) bool { fi, err := os.Stat(r); return err != nil || !fi.IsDir() })
	if err != nil || len(roots) == 0 {
		f.Fatal("no fixture trees", err)
	}
	f.Fuzz(func(t *testing.T, job, node string, uid int) {
		for _, root := range roots {
			j, err := FindJobCgroup(root, job, uid, node)
			if err != nil {
				if _, statErr := os.Stat(root); statErr == nil && !errors.Is(err, ErrNoJobCgroup) && !strings.Contains(err.Error(), "bad ") {
					t.Fatalf("%s job %q node %q uid %d: %v", root, job, node, uid, err)
				}
				continue
			}
			dirs := j.Dirs()
			if len(dirs) == 0 || j.ProcsDir() == "" {
				t.Fatalf("%s job %q: found %+v without directories", root, job, j)
			}
			for _, d := range dirs {
				rel, err := filepath.Rel(root, d)
				if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.Base(d) != "job_"+job {
					t.Fatalf("%s job %q node %q uid %d: %s is not a job directory inside the root", root, job, node, uid, d)
				}
				if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
					t.Fatalf("%s job %q: %s is not a directory", root, job, d)
				}
			}
		}
	})
}
