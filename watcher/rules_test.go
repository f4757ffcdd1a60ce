package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/internal/kmsg/kmsgtest"
)

const siteRule = `
[[watch.rules]]
name = "mycorp-fabric"
kind = "nccl-net"
match = 'mycorp fabric: link down'
examples = ["gpu02:1:2 [0] NCCL WARN mycorp fabric: link down on mlx5_2"]
`

// TestRulesTest: "vigil-watch rules test" says what each line means, with
// the site's [[watch.rules]] of --config in force; a rule that does not
// match its own example is a config error naming the key and the line.
func TestRulesTest(t *testing.T) {
	dir := t.TempDir()
	logf := filepath.Join(dir, "job.log")
	os.WriteFile(logf, []byte("gpu02:1:2 [0] NCCL WARN mycorp fabric: link down on mlx5_2\nhello\nsrun: error: gpu03: task 2: Exited with exit code 1\n"), 0o644)
	conf := filepath.Join(dir, "vigil.toml")
	os.WriteFile(conf, []byte(siteRule), 0o644)
	var out, errb bytes.Buffer
	if code := realMain(context.Background(), []string{"rules", "test", "--nodes", "gpu01,gpu02,gpu03", logf}, env(), &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "job.log:1: nccl-warn host=gpu02") || !strings.Contains(out.String(), "job.log:3: task-exit rule=srun-task-exit host=gpu03 (srun-error)") ||
		strings.Contains(out.String(), ":2:") {
		t.Errorf("without the site's rules:\n%s", out.String())
	}
	out.Reset()
	if code := realMain(context.Background(), []string{"rules", "test", "--config", conf, "--nodes", "gpu01,gpu02,gpu03", "--all", logf}, env(), &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "job.log:1: nccl-net rule=mycorp-fabric host=gpu02") || !strings.Contains(out.String(), "job.log:2: -  | hello") {
		t.Errorf("with the site's rule:\n%s", out.String())
	}
	os.WriteFile(conf, []byte(strings.Replace(siteRule, "link down on", "link up on", 1)), 0o644)
	errb.Reset()
	if code := realMain(context.Background(), []string{"rules", "test", "--config", conf, logf}, env(), &out, &errb); code != exitUsage ||
		!strings.Contains(errb.String(), "watch.rules") || !strings.Contains(errb.String(), "does not match its example") {
		t.Errorf("a bad site rule: exit %d: %s", code, errb.String())
	}
}

// TestSiteRuleChangesTheVerdict: the same trace replayed with and without
// a site rule: a line the shipped rules keep as a plain NCCL warning is,
// for the site, a transport error, and the digest names its host.
func TestSiteRuleChangesTheVerdict(t *testing.T) {
	dir := t.TempDir()
	trace, err := os.ReadFile(filepath.Join("hang", "testdata", "digest-unknown.trace"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := 0; i < 3; i++ {
		lines = append(lines, `{"v":1,"time":"2026-11-29T10:30:00Z","host":"gpu01","job":"4242","log":{"stream":"stderr","line":"gpu02:1:2 [0] NCCL WARN mycorp fabric: link down on mlx5_2"}}`)
	}
	// In time order: after the readings of 10:30.
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(trace)), "\n") {
		out = append(out, l)
		if strings.Contains(l, `"time":"2026-11-29T10:30:00Z","host":"gpu02"`) {
			out = append(out, lines...)
		}
	}
	if len(out) != strings.Count(string(trace), "\n")+len(lines) {
		t.Fatalf("no reading of gpu02 at 10:30 in the trace")
	}
	p := filepath.Join(dir, "t.trace")
	os.WriteFile(p, []byte(strings.Join(out, "\n")+"\n"), 0o644)
	conf := filepath.Join(dir, "vigil.toml")
	os.WriteFile(conf, []byte("[watch]\nwindow = \"10m\"\nperiod = \"1m\"\ngrace = \"5m\"\n"+siteRule), 0o644)
	digest := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := realMain(context.Background(), append(args, "replay", p), env(), &out, &errb); code != exitOK {
			t.Fatalf("replay %v: exit %d: %s", args, code, errb.String())
		}
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, `"event":"digest"`) {
				return l
			}
		}
		t.Fatalf("no digest: %s", out.String())
		return ""
	}
	plain := filepath.Join(dir, "plain.toml")
	os.WriteFile(plain, []byte("[watch]\nwindow = \"10m\"\nperiod = \"1m\"\ngrace = \"5m\"\n"), 0o644)
	if d := digest("--config", plain); !strings.Contains(d, `"cause":"unknown"`) {
		t.Errorf("without the site rule: %s", d)
	}
	if d := digest("--config", conf); !strings.Contains(d, `"cause":"network"`) || !strings.Contains(d, `"host":"gpu02"`) {
		t.Errorf("with the site rule: %s", d)
	}
}

// TestRulesTestKmsg: "vigil-watch rules test --kmsg" reads each kernel
// log line as the watcher does, from the start of its message: the
// kernel's own XID and NFS lines count, in each form a log takes; a line
// a user made the kernel print (a real segfault of a program run as
// nobody, named like an XID line, where this kernel logs segfaults) and
// lines written from user space mean nothing.
func TestRulesTestKmsg(t *testing.T) {
	const xid79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus"
	lines := []string{
		"4,2107,733100001,-;NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
		" SUBSYSTEM=pci",
		"Nov 29 14:55:40 n7 kernel: [ 3240.118812] NVRM: Xid (PCI:0000:3b:00): 119, pid=1582259, name=nvc:[driver], Timeout after 6s of waiting for RPC response from GPU1 GSP!",
		"[ 3241.0] nfs: server 10.0.0.9 not responding, still trying",
		"6,2108,733100002,-;crash[32060]: segfault at 0 ip 0000 sp 0000 error 4 in " + xid79 + "[400000+1000]",
		"6,2109,733100003,-;NVRM: Xid (PCI:[8953]: segfault at 0 ip 0 sp 0 error 4 in " + xid79 + "[1139,561f513e1000+1000]",
		"6,2110,733100004,-;crash[1]: segfault at 0 ip 0 sp 0 error 4 in uncorrectable ECC error encountered[400000+1000]",
		"6,2111,733100005,-;crash[1]: segfault at 0 ip 0 sp 0 error 4 in dcmi: npu2 (PCI:0000:c3:00.0) error code 0x80e18005, major alarm (fault)",
		"6,2112,733100006,-;crash[1]: segfault at 0 ip 0 sp 0 error 4 in pcieport 0000:00:01.0: AER: Uncorrected (Fatal) error received[1+1]",
		"12,2113,733100007,-;" + xid79 + ".",
		"Nov 29 14:55:41 n7 logger: " + xid79 + ".",
		"Nov 29 14:55:42 n7 kernel: crash[1]: segfault at 0 ip 0 sp 0 error 4 in kernel: " + xid79 + "[1+1]",
	}
	if raw, _ := realSegfault(t, xid79); raw != "" {
		lines = append(lines, raw)
	}
	dir := t.TempDir()
	logf := filepath.Join(dir, "kern.log")
	os.WriteFile(logf, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	var out, errb bytes.Buffer
	if code := realMain(context.Background(), []string{"rules", "test", "--kmsg", logf}, env(), &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := []string{logf + ":1: xid fault | ", logf + ":3: xid fault | ", logf + ":4: nfs rule=nfs-not-responding | "}
	got := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(got) != len(want) {
		t.Fatalf("read %d lines as evidence, want %d:\n%s", len(got), len(want), out.String())
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("line %d: %q, want %q...", i+1, got[i], w)
		}
	}
}

// realSegfault is the /dev/kmsg record of a real segfault of a program
// named name run as nobody; "" where this machine cannot make one
// (kmsgtest skips its subtest, and the test goes on with its injected
// records).
func realSegfault(t *testing.T, name string) (raw string, ok bool) {
	t.Helper()
	t.Run("real segfault", func(t *testing.T) {
		raw, _ = kmsgtest.Segfault(t, name)
		t.Logf("the kernel logged: %s", raw)
	})
	return raw, raw != ""
}
