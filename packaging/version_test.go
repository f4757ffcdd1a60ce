package packaging

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVersion runs packaging/version in throwaway repositories: no tag, a
// tag, commits after it, a pre-release tag, uncommitted changes, no git.
func TestVersion(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git not found: packaging/version needs it (apt-get install git)")
	}
	script, err := os.ReadFile(filepath.Join(root(t), "packaging", "version"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "packaging"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "packaging", "version"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	version := func() string {
		t.Helper()
		out, err := exec.Command("bash", filepath.Join(dir, "packaging", "version")).CombinedOutput()
		if err != nil {
			t.Fatalf("packaging/version: %v\n%s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "tag.gpgSign=false", "-c", "commit.gpgSign=false"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	commit := func(msg string) {
		t.Helper()
		git("commit", "-q", "--allow-empty", "-m", msg)
	}
	hash := func() string {
		t.Helper()
		out, err := exec.Command("git", "-C", dir, "rev-parse", "--short=7", "HEAD").Output()
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}

	if got := version(); got != "0.0.0+unknown" {
		t.Errorf("outside git: %q, want 0.0.0+unknown", got)
	}
	git("init", "-q")
	git("add", "packaging/version")
	commit("one")
	commit("two")
	steps := []struct {
		name string
		do   func()
		want func() string
	}{
		{"no tag", func() {}, func() string { return "0.0.0+2.g" + hash() }},
		{"on a tag", func() { git("tag", "v1.2.0") }, func() string { return "1.2.0" }},
		{"3 commits after it", func() { commit("a"); commit("b"); commit("c") }, func() string { return "1.2.0+3.g" + hash() }},
		{"a tag that is not a version", func() { commit("d"); git("tag", "nightly") }, func() string { return "1.2.0+4.g" + hash() }},
		{"a pre-release", func() { git("tag", "v1.3.0-rc1") }, func() string { return "1.3.0~rc1" }},
		{"uncommitted changes", func() {
			if err := os.WriteFile(filepath.Join(dir, "packaging", "version"), append(script, '\n'), 0o755); err != nil {
				t.Fatal(err)
			}
		}, func() string { return "1.3.0~rc1.dirty" }},
	}
	valid := regexp.MustCompile(`^[0-9][0-9A-Za-z.+~]*$`) // both dpkg and rpm: no '-', no '_'
	for _, s := range steps {
		s.do()
		got, want := version(), s.want()
		if got != want {
			t.Errorf("%s: %q, want %q", s.name, got, want)
		}
		if !valid.MatchString(got) {
			t.Errorf("%s: %q is not a version both dpkg and rpm take", s.name, got)
		}
	}
}
