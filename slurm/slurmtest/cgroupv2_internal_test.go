package slurmtest

import (
	"strings"
	"testing"
)

func TestCgroupConfV2(t *testing.T) {
	cg := cgroupConfV2()
	for _, want := range []string{"CgroupPlugin=cgroup/v2\n", "CgroupMountpoint=/sys/fs/cgroup\n", "IgnoreSystemd=yes\n",
		"ConstrainCores=no\n", "ConstrainRAMSpace=no\n", "ConstrainDevices=yes\n"} {
		if !strings.Contains(cg, want) {
			t.Errorf("cgroupConfV2 lacks %q:\n%s", want, cg)
		}
	}
	// Both write into the host's root cgroup.subtree_control.
	for _, bad := range []string{"CgroupAutomount", "EnableControllers"} {
		if strings.Contains(cg, bad) {
			t.Errorf("cgroupConfV2 sets %s:\n%s", bad, cg)
		}
	}
}

func TestCgroupModeNames(t *testing.T) {
	if CgroupDefault.String() != "default" || CgroupV1.String() != "v1" || CgroupV2.String() != "v2" {
		t.Errorf("names %s %s %s", CgroupDefault, CgroupV1, CgroupV2)
	}
}

// TestCleanCgroupV2OnlyOwnDirs: the clean-up never walks a directory that
// is not a cluster's.
func TestCleanCgroupV2OnlyOwnDirs(t *testing.T) {
	dir := t.TempDir() // not named vst...
	if n := cleanCgroupV2(dir); n != 0 {
		t.Errorf("cleanCgroupV2(%s) = %d", dir, n)
	}
	if !isDir(dir) {
		t.Errorf("%s removed", dir)
	}
}
