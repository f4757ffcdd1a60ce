// Package pagetest is for tests of vigil's HTML pages (watcher/hangview's
// replay and live hang report pages): it finds the charts and the culprit
// hosts in a page, and renders a page in a real headless browser. The
// browser is required: a test that asks for it fails, naming the Debian
// package, when it is missing (.ci/deps installs it).
package pagetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Browser is Debian's headless-capable browser, from the package chromium.
const Browser = "chromium"

var (
	chartRe   = regexp.MustCompile(`<svg class="chart" data-host="([^"]*)"`)
	culpritRe = regexp.MustCompile(`<section class="host culprit" id="[^"]*" data-host="([^"]*)"`)
)

// Charts lists the hosts of the page's charts, in page order.
func Charts(page string) []string { return submatches(chartRe, page) }

// Culprits lists the hosts the page highlights as culprits, in page order.
func Culprits(page string) []string { return submatches(culpritRe, page) }

// Series counts the lines drawn in each host's chart (up to four: I/O,
// CPU, device utilisation, device power; none for a host without
// readings in the charts' time range).
func Series(page string) map[string]int {
	out := map[string]int{}
	locs := chartRe.FindAllStringSubmatchIndex(page, -1)
	for _, l := range locs {
		host := page[l[2]:l[3]]
		chart := page[l[0]:]
		if end := strings.Index(chart, "</svg>"); end >= 0 {
			chart = chart[:end]
		}
		out[host] = strings.Count(chart, `<path class="series"`)
	}
	return out
}

func submatches(re *regexp.Regexp, s string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// Find returns the browser's path, or fails the test saying how to
// install it.
func Find(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath(Browser)
	if err != nil {
		t.Fatalf("%s not found (%v): install Debian's package %s (apt-get install --no-install-recommends %s, or .ci/deps)", Browser, err, Browser, Browser)
	}
	return bin
}

// DOM renders the page file at path in the headless browser and returns
// the document it built (--dump-dom).
func DOM(t testing.TB, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(Run(t, Find(t), t.TempDir(), "--dump-dom", "file://"+abs))
}

// Run runs the headless browser bin once with args, within a minute, with
// its profile and home in dir, and returns its standard output.
func Run(t testing.TB, bin, dir string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--user-data-dir=" + filepath.Join(dir, "profile")}, args...)
	cmd := exec.CommandContext(ctx, bin, argv...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, argv, err, tail(stderr.Bytes()))
	}
	return stdout.Bytes()
}

// tail is the end of a browser's chatter, enough to see why it failed.
func tail(b []byte) []byte {
	b = regexp.MustCompile(`(?m)^.*dbus.*\n?`).ReplaceAll(b, nil)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return b
}
