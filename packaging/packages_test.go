// Package packaging holds the tests of vigil's deb and rpm (make deb, make
// rpm; nfpm.yaml and build beside this file): what each package installs
// where, with which mode, marked as what, and what it depends on, compared
// with golden files under testdata/ (refreshed with -update); the
// plugstack.conf line, the example config and the docs inside them.
package packaging

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the packages")

// Where the packages put things (docs/operations.md#packages).
const (
	docDir        = "/usr/share/doc/vigil"
	snippet       = "/etc/slurm/plugstack.conf.d/vigil.conf"
	example       = "/etc/vigil/vigil.toml.example"
	bindir        = "/usr/bin"
	plugstackLine = "required %s/vigil_spank.so config=/etc/vigil/vigil.toml prolog=/usr/bin/vigil-prolog watcher=/usr/bin/vigil-watch watch=auto\n"
)

// root is the module's root, the parent of this package.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// need fails the test, naming the Debian package, when a tool is missing.
func need(t *testing.T, tools ...[2]string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool[0]); err != nil {
			t.Fatalf("%s not found: the package tests need it (%s)", tool[0], tool[1])
		}
	}
}

// built returns the .deb and the .rpm to test: those in $VIGIL_PACKAGES (a
// directory, relative to the module's root; .ci/run builds dist/ first),
// else a fresh `make deb rpm` into a temporary DIST.
func built(t *testing.T) (deb, rpm string) {
	t.Helper()
	dist := os.Getenv("VIGIL_PACKAGES")
	if dist == "" {
		need(t, [2]string{"make", "apt-get install make"}, [2]string{"gcc", "apt-get install gcc"}, [2]string{"objdump", "apt-get install binutils"})
		dist = t.TempDir()
		cmd := exec.Command("make", "deb", "rpm", "DIST="+dist)
		cmd.Dir = root(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make deb rpm: %v\n%s", err, out)
		}
	} else if !filepath.IsAbs(dist) {
		dist = filepath.Join(root(t), dist)
	}
	one := func(pattern string) string {
		m, _ := filepath.Glob(filepath.Join(dist, pattern))
		if len(m) != 1 {
			t.Fatalf("%s in %s: %q, want exactly one (make clean, then make deb rpm)", pattern, dist, m)
		}
		return m[0]
	}
	return one("vigil_*.deb"), one("vigil-*.rpm")
}

// entry is one file of a package's payload.
type entry struct {
	mode string // ls's letters: -rwxr-xr-x, drwxr-xr-x, lrwxrwxrwx
	link string // a symlink's target
	data []byte
}

// payload reads a package's files from a tar stream (gzip-compressed when
// gz), keyed by absolute path.
func payload(t *testing.T, r io.Reader, gz bool) map[string]entry {
	t.Helper()
	if gz {
		z, err := gzip.NewReader(r)
		if err != nil {
			t.Fatal(err)
		}
		r = z
	}
	files := map[string]entry{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		name := "/" + strings.Trim(strings.TrimPrefix(h.Name, "."), "/")
		if name == "/" {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		// Go writes a symlink's mode as L..., ls as l...
		mode := strings.Replace(h.FileInfo().Mode().String(), "L", "l", 1)
		files[name] = entry{mode: mode, link: h.Linkname, data: data}
	}
}

// run runs a command and returns its standard output; it fails the test
// with the standard error.
func run(t *testing.T, stdin io.Reader, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// treeDocs maps what the packages install under /usr/share/doc/vigil to the
// files of the source tree they must be: README.md, docs/*.md and
// docs/monitoring/*. A new document joins the packages without a golden
// change.
func treeDocs(t *testing.T) map[string]string {
	t.Helper()
	docs := map[string]string{docDir + "/README.md": filepath.Join(root(t), "README.md")}
	for _, pattern := range []string{"docs/*.md", "docs/monitoring/*"} {
		m, err := filepath.Glob(filepath.Join(root(t), pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
				rel, _ := filepath.Rel(root(t), f)
				docs[docDir+"/"+rel] = f
			}
		}
	}
	return docs
}

// checkDocs checks that the package holds every document of the tree, as it
// is now, and removes them from files (the golden lists the rest).
func checkDocs(t *testing.T, files map[string]entry) {
	t.Helper()
	for dst, src := range treeDocs(t) {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		switch got, ok := files[dst]; {
		case !ok:
			t.Errorf("%s is not in the package", dst)
		case got.mode != "-rw-r--r--" || !bytes.Equal(got.data, want):
			t.Errorf("%s: mode %s, %d bytes; want -rw-r--r-- and the %d bytes of %s (rebuild the packages)", dst, got.mode, len(got.data), len(want), src)
		}
		delete(files, dst)
	}
}

// checkPrograms runs the packaged vigil-prolog: its example config must be
// the one the package installs, and --check-config must accept it.
func checkPrograms(t *testing.T, files map[string]entry) {
	t.Helper()
	if l := files[bindir+"/vigil-health"]; l.link != "vigil-prolog" {
		t.Errorf("%s/vigil-health: %+v, want a link to vigil-prolog", bindir, l)
	}
	dir := t.TempDir()
	prolog, ex := filepath.Join(dir, "vigil-prolog"), filepath.Join(dir, "vigil.toml.example")
	if err := os.WriteFile(prolog, files[bindir+"/vigil-prolog"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ex, files[example].data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := run(t, nil, prolog, "--print-example-config"); !bytes.Equal(got, files[example].data) {
		t.Errorf("%s is not what the packaged vigil-prolog --print-example-config prints", example)
	}
	run(t, nil, prolog, "--check-config", "--config", ex)
}

// checkSnippet: the plugstack.conf line names the plugin, vigil-prolog and
// vigil-watch where this package puts them.
func checkSnippet(t *testing.T, files map[string]entry, pluginDir string) {
	t.Helper()
	want := strings.Replace(plugstackLine, "%s", pluginDir, 1)
	if got := string(files[snippet].data); got != want {
		t.Errorf("%s:\n%s\nwant\n%s", snippet, got, want)
	}
	for _, f := range []string{pluginDir + "/vigil_spank.so", bindir + "/vigil-prolog", bindir + "/vigil-watch"} {
		if _, ok := files[f]; !ok {
			t.Errorf("%s names %s, which the package does not install", snippet, f)
		}
	}
}

// listing is the golden's file list: one "MODE [FLAGS] PATH[ -> TARGET]"
// line per file, sorted by path.
func listing(files map[string]entry, flags map[string]string) string {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		e := files[name]
		b.WriteString(e.mode)
		if f := flags[name]; f != "" {
			b.WriteString(" " + f)
		}
		b.WriteString(" " + name)
		if e.link != "" {
			b.WriteString(" -> " + e.link)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// golden compares got with testdata/NAME, or rewrites it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (go test ./packaging -run %s -update writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the package (go test ./packaging -run %s -update, then read the diff):\n--- got\n%s--- want\n%s", file, t.Name(), got, want)
	}
}

// version is what packaging/version prints for this tree.
func version(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(string(run(t, nil, "bash", filepath.Join(root(t), "packaging", "version"))))
}

var debMultiarch = regexp.MustCompile(`^/usr/lib/[a-z0-9_]+-linux-gnu[a-z]*/slurm-wlm$`)

// TestPackages builds (or takes from $VIGIL_PACKAGES) the deb and the rpm and
// checks both against testdata/vigil.{deb,rpm}.golden: the files with their
// modes, the config files, the dependencies; the plugstack.conf line; the
// docs, which must be the tree's; the programs, which must run.
func TestPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both packages (make deb rpm)")
	}
	need(t, [2]string{"dpkg-deb", "apt-get install dpkg"}, [2]string{"rpm", "apt-get install rpm"}, [2]string{"rpm2archive", "apt-get install rpm2cpio"})
	deb, rpm := built(t)
	t.Run("deb", func(t *testing.T) { testDeb(t, deb) })
	t.Run("rpm", func(t *testing.T) { testRPM(t, rpm) })
}

func testDeb(t *testing.T, deb string) {
	var b strings.Builder
	b.WriteString("# dpkg-deb -f, -I conffiles, -c (the tree's docs left out: they are checked against the tree)\n")
	for _, field := range []string{"Package", "Architecture", "Section", "Priority", "Maintainer", "Homepage", "Depends", "Recommends", "Description"} {
		b.WriteString(field + ": " + strings.TrimSpace(string(run(t, nil, "dpkg-deb", "-f", deb, field))) + "\n")
	}
	if got, want := strings.TrimSpace(string(run(t, nil, "dpkg-deb", "-f", deb, "Version"))), version(t)+"-1"; got != want {
		t.Errorf("Version: %s, want %s (packaging/version; rebuild the packages)", got, want)
	}
	b.WriteString("conffiles:\n" + string(run(t, nil, "dpkg-deb", "-I", deb, "conffiles")))
	f, err := os.Open(deb)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := payload(t, bytes.NewReader(run(t, f, "dpkg-deb", "--fsys-tarfile", "/dev/stdin")), false)
	var pluginDir string
	for name := range files {
		if strings.HasSuffix(name, "/vigil_spank.so") {
			pluginDir = filepath.Dir(name)
		}
	}
	if !debMultiarch.MatchString(pluginDir) {
		t.Errorf("the plugin is in %q, want Debian's Slurm plugin directory /usr/lib/<multiarch>/slurm-wlm", pluginDir)
	}
	checkSnippet(t, files, pluginDir)
	checkPrograms(t, files)
	checkDocs(t, files)
	b.WriteString("files:\n" + listing(files, nil))
	b.WriteString(snippet + ":\n" + string(files[snippet].data))
	golden(t, "vigil.deb.golden", b.String())
}

func testRPM(t *testing.T, rpm string) {
	var b strings.Builder
	b.WriteString("# rpm -qp --qf, --requires, --recommends, -qlp with each file's mode and flags (c config, n noreplace);\n# the tree's docs left out: they are checked against the tree\n")
	b.WriteString(string(run(t, nil, "rpm", "-qp", "--qf", "Name: %{NAME}\nRelease: %{RELEASE}\nArch: %{ARCH}\nLicense: %{LICENSE}\nPackager: %{PACKAGER}\nURL: %{URL}\nSummary: %{SUMMARY}\n", rpm)))
	if got, want := strings.TrimSpace(string(run(t, nil, "rpm", "-qp", "--qf", "%{VERSION}", rpm))), version(t); got != want {
		t.Errorf("Version: %s, want %s (packaging/version; rebuild the packages)", got, want)
	}
	b.WriteString("requires:\n" + string(run(t, nil, "rpm", "-qp", "--requires", rpm)))
	b.WriteString("recommends:\n" + string(run(t, nil, "rpm", "-qp", "--recommends", rpm)))
	f, err := os.Open(rpm)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := payload(t, bytes.NewReader(run(t, f, "rpm2archive", "-")), true)
	// rpm -qlp is the list; the payload gives each file's mode and data,
	// rpm's header each file's flags.
	list := strings.Fields(string(run(t, nil, "rpm", "-qlp", rpm)))
	flags := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(run(t, nil, "rpm", "-qp", "--qf", "[%{FILEFLAGS:fflags} %{FILENAMES}\n]", rpm))), "\n") {
		if fl, name, ok := strings.Cut(l, " "); ok && fl != "" {
			flags[name] = fl
		}
	}
	for name := range files {
		if !slices.Contains(list, name) {
			t.Errorf("%s is in the payload but not in rpm -qlp", name)
		}
	}
	for _, name := range list {
		if _, ok := files[name]; !ok {
			t.Errorf("rpm -qlp lists %s, which the payload lacks", name)
		}
	}
	checkSnippet(t, files, "/usr/lib64/slurm")
	checkPrograms(t, files)
	checkDocs(t, files)
	b.WriteString("files:\n" + listing(files, flags))
	b.WriteString(snippet + ":\n" + string(files[snippet].data))
	golden(t, "vigil.rpm.golden", b.String())
}

// TestToolsPinnedOnce: .ci/tools installs the nfpm and staticcheck
// versions the Makefile names, each a semver tag the Go module proxy serves.
func TestToolsPinnedOnce(t *testing.T) {
	mk, err := os.ReadFile(filepath.Join(root(t), "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	tools, err := os.ReadFile(filepath.Join(root(t), ".ci", "tools"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct{ makeVar, script string }{{"NFPM_VERSION", "nfpm_version"}, {"STATICCHECK_VERSION", "staticcheck_version"}} {
		m := regexp.MustCompile(`(?m)^` + v.makeVar + `\s*\?=\s*(\S+)$`).FindSubmatch(mk)
		if m == nil {
			t.Errorf("Makefile: no %s ?= line", v.makeVar)
			continue
		}
		if !regexp.MustCompile(`^v\d+\.\d+\.\d+$`).Match(m[1]) {
			t.Errorf("Makefile: %s = %s is not a module version (vX.Y.Z) the proxy serves", v.makeVar, m[1])
		}
		if want := v.script + "=" + string(m[1]) + "\n"; !bytes.Contains(tools, []byte(want)) {
			t.Errorf(".ci/tools has no %q: it must install the Makefile's %s", strings.TrimSpace(want), v.makeVar)
		}
	}
}

// TestOperationsDoc: docs/operations.md shows the plugstack.conf lines the
// goldens hold, and the slurm.conf lines with the packages' paths.
func TestOperationsDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root(t), "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{"vigil.deb.golden", "vigil.rpm.golden"} {
		b, err := os.ReadFile(filepath.Join("testdata", g))
		if err != nil {
			t.Fatal(err)
		}
		_, line, ok := strings.Cut(string(b), snippet+":\n")
		if !ok || !bytes.Contains(doc, []byte("\n"+line)) {
			t.Errorf("docs/operations.md does not show %s's plugstack.conf line %q", g, line)
		}
	}
	for _, l := range []string{"Prolog=/usr/bin/vigil-prolog", "Epilog=/usr/bin/vigil-epilog", "HealthCheckProgram=/usr/bin/vigil-health"} {
		if !bytes.Contains(doc, []byte("\n"+l+"\n")) {
			t.Errorf("docs/operations.md does not show the slurm.conf line %s", l)
		}
	}
}
