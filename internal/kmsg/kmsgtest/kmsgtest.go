// Package kmsgtest makes the kernel log a user's text the way any user
// can: a program, built at test time and run as nobody, crashes in code
// mapped from a file whose name the test chooses, and the kernel logs
// "NAME[PID]: segfault at ... in FILE[...]" to /dev/kmsg, its process name
// (NAME) being the first 15 bytes of the file's name. Tests use it to show
// that such a record is no driver's line.
package kmsgtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/internal/kmsg"
)

// Device is the kernel log device.
const Device = "/dev/kmsg"

// crash is the program: it reads address 0.
const crash = "int main(void) { volatile int *p = 0; return *p; }\n"

// Segfault builds the program as a file named name, runs it as nobody,
// and returns the record the kernel logged for its segfault, raw (as
// /dev/kmsg gives it) and parsed. It skips the test where that cannot be
// done here (not root, no C compiler, a kernel that does not log
// segfaults: debug.exception-trace 0) and fails it when the kernel should
// have logged the crash and did not.
func Segfault(t *testing.T, name string) (raw string, rec kmsg.Record) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running a program as nobody and reading " + Device + " need root")
	}
	if b, err := os.ReadFile("/proc/sys/debug/exception-trace"); err != nil || strings.TrimSpace(string(b)) != "1" {
		t.Skipf("this kernel does not log user segfaults (debug.exception-trace: %q, %v)", b, err)
	}
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc) to build the crashing program")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	bin := build(t, cc, name)

	fd, err := kmsg.Open(Device)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer syscall.Close(fd)
	if _, err := syscall.Seek(fd, 0, io.SeekEnd); err != nil {
		t.Fatalf("seek %s: %v", Device, err)
	}
	cmd := exec.Command(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGSEGV {
		t.Fatalf("the program run as nobody did not crash with SIGSEGV: %v", err)
	}
	want := fmt.Sprintf("[%d]: segfault at ", cmd.Process.Pid)
	deadline := time.Now().Add(2 * time.Second)
	buf := make([]byte, 16<<10)
	for time.Now().Before(deadline) {
		n, err := syscall.Read(fd, buf)
		switch {
		case errors.Is(err, syscall.EAGAIN):
			time.Sleep(20 * time.Millisecond)
			continue
		case errors.Is(err, syscall.EPIPE):
			continue
		case err != nil:
			t.Fatalf("read %s: %v", Device, err)
		}
		line, _, _ := bytes.Cut(buf[:n], []byte{'\n'})
		if bytes.Contains(line, []byte(want)) {
			return string(line), kmsg.Parse(line)
		}
	}
	t.Fatalf("the kernel logged no segfault for pid %d (%q) although debug.exception-trace is 1 (rate-limited?)", cmd.Process.Pid, want)
	return "", kmsg.Record{}
}

// build compiles the program into a directory nobody may enter, as a file
// named name.
func build(t *testing.T, cc, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kmsgtest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	src := filepath.Join(dir, "crash.c")
	bin := filepath.Join(dir, name)
	if err := os.WriteFile(src, []byte(crash), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(cc, "-O0", "-o", bin, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
