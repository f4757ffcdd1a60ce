package slurmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fatalTB records Fatalf and stops the goroutine like testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

func TestMissingBinariesNamePackages(t *testing.T) {
	dir := t.TempDir()
	// Only the client tools exist: the daemons' packages must be named.
	for _, b := range []string{"sinfo", "squeue", "scontrol", "sbatch", "scancel"} {
		if err := os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	old := binDirs
	binDirs = []string{dir}
	defer func() { binDirs = old }()

	f := &fatalTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != any(f) {
				panic(r)
			}
		}()
		checkBinaries(f)
	}()
	want := "apt-get install -y --no-install-recommends munge slurmctld slurmd"
	if !strings.Contains(f.msg, want) || strings.Contains(f.msg, "slurm-client") ||
		!strings.Contains(f.msg, "mungekey, munged, slurmctld, slurmd") {
		t.Errorf("Fatalf message = %q, want the missing binaries and %q", f.msg, want)
	}
}

func TestMkdev(t *testing.T) {
	// makedev(195, 3) as glibc computes it.
	if got := mkdev(195, 3); got != 0xc303 {
		t.Errorf("mkdev(195, 3) = %#x, want 0xc303", got)
	}
	// Minor bits above 0xff go to bit 20 and up, as glibc's makedev puts them.
	if got := mkdev(195, 300); got != 0x10c32c {
		t.Errorf("mkdev(195, 300) = %#x, want 0x10c32c", got)
	}
}

func TestCgroupConfByVersion(t *testing.T) {
	for _, tt := range []struct {
		version   string
		automount bool
	}{
		{"22.05.8", true}, {"23.11.10", true}, {"24.11.5", false}, {"25.05.1", false}, {"", true},
	} {
		t.Run(tt.version, func(t *testing.T) {
			cg := cgroupConf(tt.version)
			if got := strings.Contains(cg, "CgroupAutomount="); got != tt.automount {
				t.Errorf("cgroupConf(%q) has CgroupAutomount: %v, want %v\n%s", tt.version, got, tt.automount, cg)
			}
			if !strings.Contains(cg, "CgroupPlugin=cgroup/v1\n") || !strings.Contains(cg, "ConstrainDevices=yes\n") {
				t.Errorf("cgroupConf(%q):\n%s", tt.version, cg)
			}
		})
	}
}

func TestResolveInRoot(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"usr/sbin", "etc/alternatives"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Debian's alternatives: an absolute link to an absolute link to the binary.
	if err := os.WriteFile(filepath.Join(root, "usr/sbin/slurmd-wlm"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/sbin/slurmd-wlm", filepath.Join(root, "etc/alternatives/slurmd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/alternatives/slurmd", filepath.Join(root, "usr/sbin/slurmd")); err != nil {
		t.Fatal(err)
	}
	if got, want := resolveIn(root, "/usr/sbin/slurmd"), filepath.Join(root, "usr/sbin/slurmd-wlm"); got != want {
		t.Errorf("resolveIn = %s, want %s", got, want)
	}
	if got := rootPath(root, "slurmd"); got != "/usr/sbin/slurmd" {
		t.Errorf("rootPath(slurmd) = %q, want /usr/sbin/slurmd", got)
	}
	if got := rootPath(root, "slurmctld"); got != "" {
		t.Errorf("rootPath(slurmctld) = %q in a root without it", got)
	}
}

func TestMissingRootNamesTheBuild(t *testing.T) {
	f := &fatalTB{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != any(f) {
				panic(r)
			}
		}()
		checkRoot(f, filepath.Join(t.TempDir(), "no-root"))
	}()
	if !strings.Contains(f.msg, ".ci/slurm-root") || !strings.Contains(f.msg, "slurmctld") {
		t.Errorf("message %q does not name the missing binaries and the command that builds the root", f.msg)
	}
}
