// Package ostest holds test helpers about the OS: parts of a test run as
// another user (the attacks of docs/security.md shown by a real process of
// an unprivileged uid), and /proc fixtures.
package ostest

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Nobody is the uid and gid of the unprivileged user the tests act as.
const Nobody = 65534

// AsNobody returns a command, not started, that runs this test binary's
// test (by name, "-test.run=^test$") as nobody with env as its whole
// environment. The binary is copied into a directory every user may read
// and enter first: go test's own may be root's alone. Its directory is
// removed when t ends.
func AsNobody(t testing.TB, test string, env ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "as-nobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, filepath.Base(self))
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil || os.Chmod(dir, 0o755) != nil {
		t.Fatalf("copying the test binary for nobody: %v", err)
	}
	cmd := exec.Command(bin, "-test.run=^"+test+"$")
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	return cmd
}
