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
