package slurmtest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// builds caches BuildBinary's results for the life of the test binary.
var builds struct {
	mu   sync.Mutex
	dir  string
	pkgs map[string]*build
}

type build struct {
	once sync.Once
	path string
	err  error
}

// binDirPrefix names the directories BuildBinary writes to; the suffix is
// the test process's PID so that later runs can remove stale ones.
const binDirPrefix = "/tmp/vst-bin-"

// BuildBinary builds the main package pkg ("github.com/vigil-hpc/vigil/prolog")
// with `go build` once per test binary and returns the path of the binary,
// in a directory under /tmp that slurmd (root) and job users can read
// (mode 0755). Parallel callers wait for the one build. It fails the test
// with go build's output when the build fails. The directory lives as long
// as the test binary; the next test binary removes it.
func BuildBinary(t testing.TB, pkg string) string {
	t.Helper()
	builds.mu.Lock()
	if builds.pkgs == nil {
		sweepBinDirs()
		dir := binDirPrefix + strconv.Itoa(os.Getpid())
		if err := os.MkdirAll(dir, 0o755); err != nil {
			builds.mu.Unlock()
			t.Fatalf("slurmtest: %v", err)
		}
		builds.dir = dir
		builds.pkgs = map[string]*build{}
	}
	b := builds.pkgs[pkg]
	if b == nil {
		b = &build{}
		builds.pkgs[pkg] = b
	}
	dir := builds.dir
	builds.mu.Unlock()

	b.once.Do(func() {
		begin := time.Now()
		b.path, b.err = goBuild(dir, pkg)
		if b.err == nil {
			t.Logf("slurmtest: built %s in %.2fs", pkg, time.Since(begin).Seconds())
		}
	})
	if b.err != nil {
		t.Fatalf("slurmtest: %v", b.err)
	}
	return b.path
}

func goBuild(dir, pkg string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		//lint:ignore SA1019 a test binary runs on the machine whose toolchain built it
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goBin); err != nil {
			return "", errors.New("go not found on PATH nor in GOROOT")
		}
	}
	name := path.Base(pkg)
	sub, err := os.MkdirTemp(dir, name+"-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(sub, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(sub, name)
	cmd := exec.Command(goBin, "build", "-o", out, pkg)
	cmd.Dir = moduleRoot()
	cmd.Env = os.Environ()
	if os.Getenv("CGO_CFLAGS") == "" {
		cmd.Env = append(cmd.Env, "CGO_CFLAGS=-Wno-deprecated-declarations")
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, msg)
	}
	if err := os.Chmod(out, 0o755); err != nil {
		return "", err
	}
	return out, nil
}

// moduleRoot is the directory holding go.mod above the working directory
// (go test runs tests in their package directory), or "" to let go decide.
func moduleRoot() string {
	d, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// sweepBinDirs removes build directories of test processes that have exited.
func sweepBinDirs() {
	dirs, _ := filepath.Glob(binDirPrefix + "*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(strings.TrimPrefix(d, binDirPrefix))
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		_ = os.RemoveAll(d)
	}
}
