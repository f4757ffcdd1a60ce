// Package promtest runs the real Prometheus tools against vigil's outputs
// in tests: promtool (Debian package prometheus) checks textfiles and
// alert rules, and a private prometheus-node-exporter (Debian package
// prometheus-node-exporter) serves a textfile directory on loopback. A
// missing tool fails the test and names the package to install; only
// StartNodeExporter, which starts a daemon, skips under -short.
package promtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Tool returns the path of one of the Prometheus programs, failing the
// test with the Debian package to install when it is missing.
func Tool(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s not found (%v): apt-get install -y --no-install-recommends %s (or make deps)", name, err, pkg)
	}
	return p
}

// Promtool returns promtool's path.
func Promtool(t testing.TB) string { return Tool(t, "promtool", "prometheus") }

// CheckMetrics runs `promtool check metrics` over a textfile's contents
// and fails the test with promtool's complaints.
func CheckMetrics(t testing.TB, what string, textfile []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, Promtool(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(textfile)
	if out, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("promtool check metrics on %s: %v\n%s\n--- textfile\n%s", what, err, out, textfile)
	}
}

// CheckRules runs `promtool check rules` over rule files.
func CheckRules(t testing.TB, files ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, Promtool(t), append([]string{"check", "rules"}, files...)...).CombinedOutput()
	if err != nil {
		t.Errorf("promtool check rules %s: %v\n%s", strings.Join(files, " "), err, out)
	}
}

// NodeExporter is a private prometheus-node-exporter with only the
// textfile collector, listening on loopback.
type NodeExporter struct {
	// URL is its /metrics endpoint.
	URL string
	cmd *exec.Cmd
	log bytes.Buffer
}

// StartNodeExporter starts node_exporter's textfile collector on dir, on a
// free loopback port, and stops it when the test ends. It skips under
// -short.
func StartNodeExporter(t testing.TB, dir string) *NodeExporter {
	t.Helper()
	if testing.Short() {
		t.Skip("starts prometheus-node-exporter (skipped under -short)")
	}
	bin := Tool(t, "prometheus-node-exporter", "prometheus-node-exporter")
	var last string
	for try := 0; try < 3; try++ {
		n := &NodeExporter{}
		addr := freeAddr(t)
		n.URL = "http://" + addr + "/metrics"
		n.cmd = exec.Command(bin, "--web.listen-address="+addr, "--collector.disable-defaults",
			"--collector.textfile", "--collector.textfile.directory="+dir)
		n.cmd.Stdout, n.cmd.Stderr = &n.log, &n.log
		n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := n.cmd.Start(); err != nil {
			t.Fatalf("starting %s: %v", bin, err)
		}
		exited := make(chan struct{})
		go func() { n.cmd.Wait(); close(exited) }()
		t.Cleanup(func() { n.stop(exited) })
		if n.waitUp(exited, 10*time.Second) {
			return n
		}
		n.stop(exited)
		last = n.log.String()
	}
	t.Fatalf("prometheus-node-exporter did not come up on loopback:\n%s", last)
	return nil
}

// freeAddr returns a loopback address with a port nobody listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (n *NodeExporter) waitUp(exited chan struct{}, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if resp, err := http.Get(n.URL); err == nil {
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// stop sends SIGTERM, then SIGKILL to its process group after 5 s.
func (n *NodeExporter) stop(exited chan struct{}) {
	select {
	case <-exited:
		return
	default:
	}
	n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

// Scrape reads the exporter's /metrics and returns its samples.
func (n *NodeExporter) Scrape(t testing.TB) []Sample {
	t.Helper()
	resp, err := http.Get(n.URL)
	if err != nil {
		t.Fatalf("scraping %s: %v\n%s", n.URL, err, n.log.String())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scraping %s: %s %v\n%s", n.URL, resp.Status, err, b)
	}
	s, err := Parse(b)
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	return s
}

// Log is what the exporter wrote so far, for failure messages.
func (n *NodeExporter) Log() string { return n.log.String() }

// Sample is one sample line of the text exposition format.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// String renders the sample with its labels sorted, as node_exporter does.
func (s Sample) String() string {
	return fmt.Sprintf("%s%v %g", s.Name, s.Labels, s.Value)
}

// Find returns the samples named name whose labels include kv's pairs.
func Find(samples []Sample, name string, kv ...string) []Sample {
	var out []Sample
next:
	for _, s := range samples {
		if s.Name != name {
			continue
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if v, ok := s.Labels[kv[i]]; !ok || v != kv[i+1] {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// Parse reads the sample lines of a text exposition (comments skipped,
// no timestamps).
func Parse(b []byte) ([]Sample, error) {
	var out []Sample
	for i, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		s, err := parseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d %q: %w", i+1, line, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func parseLine(line string) (Sample, error) {
	s := Sample{Labels: map[string]string{}}
	sp := strings.LastIndexByte(line, ' ')
	if sp < 0 {
		return s, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(line[sp+1:], 64)
	if err != nil {
		return s, err
	}
	s.Value = v
	head := line[:sp]
	brace := strings.IndexByte(head, '{')
	if brace < 0 {
		s.Name = head
		return s, nil
	}
	s.Name = head[:brace]
	rest := strings.TrimSuffix(head[brace+1:], "}")
	for rest != "" {
		eq := strings.Index(rest, `="`)
		if eq < 0 {
			return s, fmt.Errorf("bad labels")
		}
		name := rest[:eq]
		val, n, err := unquote(rest[eq+2:])
		if err != nil {
			return s, err
		}
		s.Labels[name] = val
		rest = strings.TrimPrefix(rest[eq+2+n:], ",")
	}
	return s, nil
}

// unquote reads an escaped label value up to its closing quote and returns
// the value and how many bytes it took, the quote included.
func unquote(s string) (string, int, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			if i+1 == len(s) {
				return "", 0, fmt.Errorf("bad escape")
			}
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, fmt.Errorf("unterminated label value")
}

// RuleTests runs `promtool test rules` (alert rule unit tests).
func RuleTests(t testing.TB, files ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, Promtool(t), append([]string{"test", "rules"}, files...)...).CombinedOutput()
	if err != nil {
		t.Errorf("promtool test rules %s: %v\n%s", strings.Join(files, " "), err, out)
	}
}
