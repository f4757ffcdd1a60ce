package archtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestReadmeLayout keeps README.md's Layout block true: every folder it
// names exists (an indented line names folders below the last top-level
// one), and every top-level folder of the tree is named.
func TestReadmeLayout(t *testing.T) {
	dir := root(t)
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	named, err := layoutFolders(string(b))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range named {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || !fi.IsDir() {
			t.Errorf("README.md's Layout names %s/, which is not a folder of the tree", f)
		}
	}
	top := map[string]bool{}
	for _, f := range named {
		top[strings.SplitN(f, "/", 2)[0]] = true
	}
	for _, f := range topFolders(t, dir) {
		if !top[f] {
			t.Errorf("README.md's Layout leaves out the top-level folder %s/: add a line for it", f)
		}
	}
}

// layoutFolders returns the folders the README's Layout block names, as
// paths from the module's root.
func layoutFolders(readme string) ([]string, error) {
	_, rest, ok := strings.Cut(readme, "## Layout\n")
	if !ok {
		return nil, errNoLayout
	}
	_, rest, ok = strings.Cut(rest, "```\n")
	if !ok {
		return nil, errNoLayout
	}
	block, _, _ := strings.Cut(rest, "```")
	var out []string
	top := ""
	for _, line := range strings.Split(block, "\n") {
		indented := strings.HasPrefix(line, " ")
		for _, w := range strings.Fields(line) {
			if !strings.HasSuffix(w, "/") || strings.ContainsAny(w, "()") {
				break
			}
			name := strings.TrimSuffix(w, "/")
			if indented {
				out = append(out, top+"/"+name)
				continue
			}
			top = name
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		return nil, errNoLayout
	}
	return out, nil
}

type layoutError string

func (e layoutError) Error() string { return string(e) }

const errNoLayout = layoutError("README.md has no Layout block (## Layout, then a ``` block of folders)")

// topFolders are the tree's top-level folders that git tracks files in,
// hidden ones aside.
func topFolders(t *testing.T, dir string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", dir, "ls-files").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	seen := map[string]bool{}
	for _, f := range strings.Split(string(out), "\n") {
		first, _, nested := strings.Cut(f, "/")
		if nested && !strings.HasPrefix(first, ".") {
			seen[first] = true
		}
	}
	var dirs []string
	for d := range seen {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return dirs
}

// TestLayoutFolders checks the block reader on a block with a missing
// line and a stale one.
func TestLayoutFolders(t *testing.T) {
	got, err := layoutFolders("x\n## Layout\n\n```\nprolog/ epilog/   mains\n  sub/ two/  text (a/: b)\nwatcher/  main\n```\n")
	if err != nil {
		t.Fatal(err)
	}
	want := "prolog epilog epilog/sub epilog/two watcher"
	if strings.Join(got, " ") != want {
		t.Errorf("layoutFolders = %q, want %q", strings.Join(got, " "), want)
	}
	if _, err := layoutFolders("no block"); err == nil {
		t.Error("a README without a Layout block: want an error")
	}
}
