package ostest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// ProcFixture writes root/proc/PID/status (all four uids uid) and
// root/proc/PID/cgroup: a process as /proc shows it, for readers given a
// root.
func ProcFixture(t testing.TB, root string, pid, uid int, cgroup string) {
	t.Helper()
	d := filepath.Join(root, "proc", fmt.Sprint(pid))
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	status := fmt.Sprintf("Name:\tsleep\nPid:\t%d\nUid:\t%d\t%d\t%d\t%d\n", pid, uid, uid, uid, uid)
	if err := os.WriteFile(filepath.Join(d, "status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "cgroup"), []byte(cgroup), 0o644); err != nil {
		t.Fatal(err)
	}
}
