package hang_test

// The corpus of real incidents: testdata/incidents/*.toml, one public report
// each (its URL, its lines verbatim but for hostnames, addresses and times),
// the expected cause and culprits, and look-alikes that must name nobody.
// TestIncidents turns each into a trace as the live watcher records it,
// replays it, and scores the digest against the expectation in
// testdata/incidents/score.golden (refresh: go test ./watcher/hang -update).
// Today's misses do not fail the test: the golden lists them; what fails is
// a stale golden, a malformed incident, or a look-alike that names somebody
// where today's digest names nobody.

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// incident is one file of testdata/incidents.
type incident struct {
	Title     string            `toml:"title"`
	Source    string            `toml:"source"`
	Kind      string            `toml:"kind"` // "incident" or "look-alike"
	Hosts     []string          `toml:"hosts"`
	BatchHost string            `toml:"batch_host"`
	Layout    map[string]string `toml:"layout"` // host -> ranks it holds ("0-7")
	// Addrs are the hosts' addresses as the report's lines show them
	// (host -> address), which the live watcher's layout record holds:
	// lines that name a host only by its address (a transport error's
	// peer, Ray's "ip=", mpirun's "on node ADDR") resolve through them.
	Addrs map[string]string `toml:"addrs"`
	// After says how a host's readings look after the stall: "stuck"
	// (the default: processes there, devices flat at 100% and low power,
	// waiting in a collective), "gone" (processes exited), "idle"
	// (processes there, devices idle), "d-state" (idle, processes in D).
	After  map[string]string `toml:"after"`
	Stall  int               `toml:"stall"` // minute of the stall; 0: incidentStall
	Note   string            `toml:"note"`
	Expect struct {
		Cause    string   `toml:"cause"`
		Culprits []string `toml:"culprits"` // must be named
		MayName  []string `toml:"may_name"` // may be named: the evidence leaves them open
	} `toml:"expect"`
	Lines []struct {
		Host   string `toml:"host"`   // the host that printed (job output) or logged (kmsg) it
		Stream string `toml:"stream"` // stdout, stderr or kmsg
		Minute int    `toml:"minute"` // 0: the stall
		Text   string `toml:"text"`   // one or more lines, verbatim
	} `toml:"lines"`
}

const (
	incidentSamples = 50 // minutes of readings per host
	incidentStall   = 30 // the minute the readings go flat
	incidentDevs    = 2
)

var incidentT0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// kmsgPrefix is what a quoted kernel line carries beyond the message that
// /dev/kmsg gives the live watcher: a syslog prefix ("Dec  2 10:43:35 host
// kernel: ", "messages:" of a grep), a bare "kernel: ", dmesg's timestamp
// (since boot, or -H's time since the previous line, "[  +0.000316] ",
// or -T's wall-clock time, "[Fri Mar  3 04:44:24 2023] ", with one space
// where a web page collapsed two), or Talos's talosctl dmesg prefix
// ("10.0.0.2: kern: warning: [2026-04-22T21:26:20.599488292Z]: ",
// siderolabs/talos cmd/talosctl/cmd/talos/dmesg.go), and the "host: "
// a collecting shell (pdsh, clush) puts before dmesg's timestamp.
var kmsgPrefix = regexp.MustCompile(`^(?:messages:)?(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ kernel: |kernel: |\S+: kern: +[a-z]+: \[\d{4}-\d\d-\d\dT[\d:.]+Z\]: )?` +
	`(?:(?:[A-Za-z][A-Za-z0-9._-]*: )?(?:\[\s*\+?\d+\.\d+\] |\[[A-Z][a-z]{2} [A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d \d{4}\] ))?`)

// incidentTrace turns in into the trace the live watchers would have
// recorded: each host's readings (training until the stall, then flat as
// in.After says), and the report's lines that joblog.Line matches (only
// those are recorded), at their minute. Job output is read by the batch
// host's watcher, and recorded for it, as live; the step's layout (the
// incident's ranks by host) is the first record, as the live watcher
// writes it. A kernel line is its own host's, without the syslog or dmesg
// prefix.
func incidentTrace(in incident) []trace.Sample {
	stall := in.Stall
	if stall == 0 {
		stall = incidentStall
	}
	var out []trace.Sample
	for hi, h := range in.Hosts {
		seed := uint64(hi*7919 + 17)
		jit := func(x float64) float64 { // deterministic ±x
			seed = seed*6364136223846793005 + 1442695040888963407
			return (float64(seed>>11)/float64(1<<53)*2 - 1) * x
		}
		var io trace.IO
		var cpu float64
		for m := 0; m < incidentSamples; m++ {
			s := trace.Sample{V: trace.Version, Time: incidentT0.Add(time.Duration(m) * time.Minute), Host: h, Job: "4242", Procs: 12}
			util, power, cores := 88+jit(12), 520+jit(90), 10+jit(2)
			if m < stall {
				io.WChar += 2 << 20
				io.WriteBytes += 2 << 20
				io.RChar += 200 << 20
			} else {
				switch in.After[h] {
				case "gone":
					util, power, cores, s.Procs = 0, 58+jit(1), 0, 0
				case "idle":
					util, power, cores = 0, 62+jit(2), 0.02
				case "d-state":
					util, power, cores, s.ProcsD = 0, 62+jit(2), 0.02, 4
				default: // stuck in a collective
					util, power, cores = 100, 140+jit(3), 8+jit(0.05)
				}
			}
			cpu += max(0, cores) * 60
			s.IO, s.CPUUsec = io, uint64(cpu*1e6)
			for d := range incidentDevs {
				s.Accel = append(s.Accel, trace.Accel{ID: fmt.Sprint(d), MemUsedMiB: 70000,
					Util: float64(int(min(100, max(0, util)))), PowerW: float64(int(max(0, power)*10)) / 10})
			}
			out = append(out, s)
		}
	}
	var logs []trace.Sample
	for _, b := range in.Lines {
		m := b.Minute
		if m == 0 {
			m = stall
		}
		for _, line := range strings.Split(b.Text, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			host := b.Host
			if b.Stream == trace.StreamKmsg {
				line = strings.TrimLeft(kmsgPrefix.ReplaceAllString(line, ""), " ")
			} else {
				host = in.BatchHost
			}
			if _, ok := joblog.LineIn(b.Stream, line); !ok {
				continue
			}
			logs = append(logs, trace.Sample{V: trace.Version, Time: incidentT0.Add(time.Duration(m) * time.Minute),
				Host: host, Job: "4242", Log: &trace.Log{Stream: b.Stream, Line: line}})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	out = append([]trace.Sample{incidentLayout(in)}, out...)
	out = append(out, logs...) // at the same minute, readings first
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// incidentLayout is the layout record of the incident's step: its hosts,
// and the ranks each holds ("0-7", "3", "0,2").
func incidentLayout(in incident) trace.Sample {
	l := joblog.Layout{Nodes: in.Hosts, Ranks: map[int]string{}, Addrs: in.Addrs}
	for h, spec := range in.Layout {
		for _, part := range strings.Split(spec, ",") {
			lo, hi, found := strings.Cut(strings.TrimSpace(part), "-")
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if !found {
				b, err2 = a, err1
			}
			for r := a; err1 == nil && err2 == nil && r <= b; r++ {
				l.Ranks[r] = h
			}
		}
	}
	js, _ := json.Marshal(l)
	return trace.Sample{V: trace.Version, Time: incidentT0, Host: in.BatchHost, Job: "4242",
		Log: &trace.Log{Stream: trace.StreamLayout, Line: string(js)}}
}

// incidentConfig is the golden traces' configuration: a 10-minute window,
// 1-minute period, 5-minute grace.
func incidentConfig() hang.Config {
	c := watchcfg.DefaultHang()
	c.Window, c.Period, c.Grace = 10*time.Minute, time.Minute, 5*time.Minute
	return c
}

// verdict is what today's replay says of an incident.
type verdict struct {
	Digest   bool
	Cause    string
	Culprits []digest.DigestCulprit
	Recorded []trace.Sample // the log records of the trace
}

func replayIncident(t *testing.T, in incident) verdict {
	t.Helper()
	ss := incidentTrace(in)
	var buf bytes.Buffer
	w := trace.NewWriter(&buf)
	var v verdict
	for _, s := range ss {
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
		if s.IsLog() && s.Log.Stream != trace.StreamLayout {
			v.Recorded = append(v.Recorded, s)
		}
	}
	var out bytes.Buffer
	if err := hang.Replay(&buf, incidentConfig(), &out); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.Contains(line, `"event":"digest"`) {
			continue
		}
		var d digest.DigestEvent
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatal(err)
		}
		if v.Digest && d.Revises.IsZero() {
			break // the next episode's digest
		}
		v.Digest, v.Cause, v.Culprits = true, d.Cause, d.Culprits // the first episode's, or its update
	}
	return v
}

// score is an incident's result.
type score struct {
	Name            string
	Hit, CauseRight bool
	CulpritsRight   bool     // every required culprit named, and nobody else than those that may be
	Blamed          []string // named without evidence: neither required nor may_name
	Why             string   // for a miss
}

func judge(name string, in incident, v verdict) score {
	s := score{Name: name, CauseRight: v.Cause == in.Expect.Cause}
	got := make([]string, 0, len(v.Culprits))
	for _, c := range v.Culprits {
		got = append(got, c.Host)
	}
	allowed := append(slices.Clone(in.Expect.Culprits), in.Expect.MayName...)
	var missing []string
	for _, h := range in.Expect.Culprits {
		if !slices.Contains(got, h) {
			missing = append(missing, h)
		}
	}
	for _, h := range got {
		if !slices.Contains(allowed, h) {
			s.Blamed = append(s.Blamed, h)
		}
	}
	s.CulpritsRight = len(missing) == 0 && len(s.Blamed) == 0
	s.Hit = s.CauseRight && s.CulpritsRight
	if s.Hit {
		return s
	}
	var why []string
	if !v.Digest {
		why = append(why, "no digest")
	}
	if len(v.Recorded) == 0 {
		why = append(why, "joblog matches none of the report's lines")
	} else if !s.CauseRight {
		kinds := map[string]bool{}
		for _, r := range v.Recorded {
			m, _ := joblog.LineIn(r.Log.Stream, r.Log.Line)
			kinds[string(m.Kind)] = true
		}
		why = append(why, fmt.Sprintf("the matched lines (%s) lead to %s", strings.Join(sortedSet(kinds), ", "), v.Cause))
	}
	for _, h := range s.Blamed {
		w := "names " + h + " without evidence"
		if h == in.BatchHost && printedElsewhere(in, v, h) {
			w = "names the batch host " + h + ", which only read lines other hosts printed (no host prefix)"
		}
		why = append(why, w)
	}
	if len(missing) > 0 {
		why = append(why, "does not name "+strings.Join(missing, ","))
		for _, h := range missing {
			if n := stampedElsewhere(in, v, h); n > 0 {
				why = append(why, fmt.Sprintf("%d matched line(s) %s printed are recorded for the batch host %s (no host prefix)", n, h, in.BatchHost))
			}
			if a := in.After[h]; a != "" && len(in.Hosts) == 2 {
				why = append(why, "its readings ("+a+") cannot name it: telemetry rules name a minority, none of two hosts")
			}
		}
	}
	s.Why = strings.Join(why, "; ")
	return s
}

// printedElsewhere reports whether a log record stamped host holds a line
// the incident says another host printed.
func printedElsewhere(in incident, v verdict, host string) bool {
	for _, r := range v.Recorded {
		if r.Host != host {
			continue
		}
		for _, b := range in.Lines {
			if b.Host != host && strings.Contains(b.Text, r.Log.Line) {
				return true
			}
		}
	}
	return false
}

// stampedElsewhere counts the log records of lines host printed that are
// recorded for another host.
func stampedElsewhere(in incident, v verdict, host string) int {
	n := 0
	for _, r := range v.Recorded {
		if r.Host == host {
			continue
		}
		for _, b := range in.Lines {
			if b.Host == host && strings.Contains(b.Text, r.Log.Line) {
				n++
				break
			}
		}
	}
	return n
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// lookAlikesNamingNobodyToday are the look-alikes whose digest names
// nobody today: TestIncidents fails if one of them starts naming a host.
// (Look-alikes not listed name somebody today; score.golden lists them as
// MISS with the host wrongly blamed.)
var lookAlikesNamingNobodyToday = []string{
	"accelerate-2246-ib-init-info-three-nodes",
	"basicsr-737-every-rank-times-out",
	"cleanrl-338-jax-disconnect-deadline-at-exit",
	"cuhksz-51-srun-tasks-killed-run-too-long",
	"desitarget-628-step-time-limit-all-tasks",
	"detectron2-4730-libibverbs-warn-slow",
	"diffusers-12422-every-rank-blocking-wait-seq2521",
	"dmlcloud-61-pg-not-destroyed-at-exit",
	"funasr-2006-service-thread-closed-info",
	"internlm-290-ranks0-3-seq316",
	"jax-19596-grpc-socket-closed-at-exit",
	"lightning-20434-plugin-info-broadcast-timeout",
	"llamafactory-5071-ei0006-ppo",
	"llamafactory-5417-video-ranks-timeout-work2",
	"llamafactory-6269-reduce-scatter-every-rank",
	"llamafactory-7396-every-rank-times-out",
	"llamafactory-9496-all-ranks-joined-730",
	"llamafactory-975-ei0002-notify-wait",
	"nccl-1029-pdsh-prefixed-info",
	"nccl-1111-reduce-scatter-no-nccl-error",
	"nccl-1537-gdr-disabled-info",
	"nccl-447-hang-after-launch-mode-info",
	"ofa-271-every-rank-allreduce-seq469508",
	"openr1-620-grpo-broadcast-seq4",
	"opensloth-17-destroy-pg-not-called-at-exit",
	"pytorch-131781-bootstrap-socket-info",
	"sqlr1-18-ray-every-rank-seqnum1-repeated",
	"submitit-1613-preemption-cancel",
	"submitit-1708-requeue-tasks-exit1",
	"verl-849-tcpstore-retrying",
	"vllm-1957-every-worker-seqnum1",
	"vllm-ascend-486-ei0006-victim",
	"zetta-671-job-time-limit",
	"megatron-bridge-1656-time-limit-after-training",
	"pytorch-150916-elastic-peer-killed-by-user",
	"pytorch-67742-elastic-rendezvous-host-ctrl-c",
	"sglang-3752-scheduler-watchdog-every-tp",
	"slurm-parlai-3084-tasks-exit1-both-nodes",
	"vllm-13437-sigterm-at-ray-teardown",
	"ascend-pytorch-54-hccl-exec-timeout-idle-service",
	"gpu-fuser-2497-driver-shutting-down-at-exit",
	"nccl-653-collnet-no-algorithm-every-rank",
	"mce-rasdaemon-95-corrected-events-healthy-host",
	"jax-grain-802-worker-reinit-different-incarnation",
	"mpich-libfabric-11307-ofi-canceled-sigterm",
	"sglang-3932-rank3-timeout-dist-timeout",
	"nccl-sharp-151-streaming-tree-lock-fallback",
	"pytorch-147064-elastic-peer-agent-restarted",
	"slurm-dagster-slurm-72-ray-worker-step-cancelled-teardown",
	"tcpx-1-rx-ctrl-timeout-slow-init",
}

func loadIncidents(t *testing.T) (names []string, incs map[string]incident) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "incidents", "*.toml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no incidents: %v", err)
	}
	incs = map[string]incident{}
	for _, p := range paths {
		var in incident
		md, err := toml.DecodeFile(p, &in)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if und := md.Undecoded(); len(und) > 0 {
			t.Errorf("%s: unknown keys %v", p, und)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".toml")
		checkIncident(t, name, in)
		names = append(names, name)
		incs[name] = in
	}
	sort.Strings(names)
	return names, incs
}

// checkIncident holds an incident file to the corpus's format.
func checkIncident(t *testing.T, name string, in incident) {
	t.Helper()
	bad := func(f string, a ...any) { t.Errorf("incident %s: %s", name, fmt.Sprintf(f, a...)) }
	if !strings.HasPrefix(in.Source, "https://") || in.Title == "" || in.Note == "" {
		bad("needs a title, a note and an https source URL")
	}
	if in.Kind != "incident" && in.Kind != "look-alike" {
		bad("kind %q: incident or look-alike", in.Kind)
	}
	if len(in.Hosts) < 2 || !slices.Contains(in.Hosts, in.BatchHost) {
		bad("needs at least two hosts, the batch host among them")
	}
	for _, h := range append(append(slices.Clone(in.Expect.Culprits), in.Expect.MayName...), sortedKeys(in.After)...) {
		if !slices.Contains(in.Hosts, h) {
			bad("host %s is not one of the job's hosts", h)
		}
	}
	for h := range in.Layout {
		if !slices.Contains(in.Hosts, h) {
			bad("layout host %s is not one of the job's hosts", h)
		}
	}
	for h := range in.Addrs {
		if !slices.Contains(in.Hosts, h) {
			bad("addrs host %s is not one of the job's hosts", h)
		}
	}
	if in.Kind == "look-alike" && (in.Expect.Cause != digest.CauseUnknown || len(in.Expect.Culprits)+len(in.Expect.MayName) > 0) {
		bad("a look-alike expects cause unknown and names nobody")
	}
	if len(in.Lines) == 0 {
		bad("no lines")
	}
	for _, b := range in.Lines {
		if !slices.Contains(in.Hosts, b.Host) || (b.Stream != trace.StreamStdout && b.Stream != trace.StreamStderr && b.Stream != trace.StreamKmsg) {
			bad("lines need a host of the job and a stream (stdout, stderr, kmsg)")
		}
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestIncidents replays the corpus of real incidents and compares the score
// with testdata/incidents/score.golden.
func TestIncidents(t *testing.T) {
	names, incs := loadIncidents(t)
	var b strings.Builder
	var hits, causes, culprits, blamed, blamedIn, looks, looksSafe int
	byCause := map[string]int{}
	var rows []string
	for _, name := range names {
		in := incs[name]
		v := replayIncident(t, in)
		s := judge(name, in, v)
		if in.Kind == "look-alike" {
			looks++
			byCause["look-alike"]++
			if len(v.Culprits) == 0 {
				looksSafe++
			} else if slices.Contains(lookAlikesNamingNobodyToday, name) {
				t.Errorf("look-alike %s names %v: it named nobody before", name, v.Culprits)
			}
		} else {
			byCause[in.Expect.Cause]++
		}
		if s.Hit {
			hits++
		}
		if s.CauseRight {
			causes++
		}
		if s.CulpritsRight {
			culprits++
		}
		if len(s.Blamed) > 0 {
			blamed += len(s.Blamed)
			blamedIn++
		}
		got := make([]string, 0, len(v.Culprits))
		for _, c := range v.Culprits {
			got = append(got, c.Host+":"+c.Reason)
		}
		cause := v.Cause
		if !v.Digest {
			cause = "(no digest)"
		}
		res := "HIT"
		if !s.Hit {
			res = "MISS"
		}
		row := fmt.Sprintf("%s %s (%s)\n  expect: %s [%s] may [%s]\n  got:    %s [%s]\n",
			res, name, in.Kind, in.Expect.Cause, strings.Join(in.Expect.Culprits, ","), strings.Join(in.Expect.MayName, ","),
			cause, strings.Join(got, ","))
		if !s.Hit {
			row += "  why:    " + s.Why + "\n"
		}
		rows = append(rows, row)
	}
	fmt.Fprintf(&b, "# Real incidents: today's digests (go test ./watcher/hang -run TestIncidents -update)\n")
	fmt.Fprintf(&b, "incidents: %d (%s)\n", len(names), causeCounts(byCause))
	fmt.Fprintf(&b, "hits: %d/%d\ncause right: %d/%d\nculprits right: %d/%d\n", hits, len(names), causes, len(names), culprits, len(names))
	fmt.Fprintf(&b, "healthy hosts wrongly blamed: %d (in %d incidents)\nlook-alikes naming nobody: %d/%d\n\n", blamed, blamedIn, looksSafe, looks)
	for _, r := range rows {
		b.WriteString(r)
	}
	t.Logf("real incidents: %d hits of %d; cause right %d, culprits right %d; %d healthy hosts wrongly blamed in %d incidents; look-alikes naming nobody %d/%d",
		hits, len(names), causes, culprits, blamed, blamedIn, looksSafe, looks)

	golden := filepath.Join("testdata", "incidents", "score.golden")
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (create it with -update)", err)
	}
	if string(want) != b.String() {
		t.Errorf("%s is stale (refresh with: go test ./watcher/hang -run TestIncidents -update); now:\n%s", golden, b.String())
	}
}

func causeCounts(m map[string]int) string {
	var out []string
	for _, k := range sortedSet(func() map[string]bool {
		s := map[string]bool{}
		for k := range m {
			s[k] = true
		}
		return s
	}()) {
		out = append(out, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(out, ", ")
}

// TestIncidentTraceAsRecorded checks the converter's placement on one
// incident: job output counts for the host its NCCL prefix names, else for
// the batch host; kernel lines for their own host, without their prefix;
// unmatched lines are not recorded.
func TestIncidentTraceAsRecorded(t *testing.T) {
	in := incident{Hosts: []string{"gpu01", "gpu02"}, BatchHost: "gpu01"}
	in.Lines = append(in.Lines,
		struct {
			Host   string `toml:"host"`
			Stream string `toml:"stream"`
			Minute int    `toml:"minute"`
			Text   string `toml:"text"`
		}{"gpu02", trace.StreamStderr, 0, "gpu02:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.1<1> with error 12\n" +
			"gpu02:1:2 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer 10.0.0.1<1> with error 12\n" +
			"[rank9]: Traceback (most recent call last):\nnothing to match here"},
		struct {
			Host   string `toml:"host"`
			Stream string `toml:"stream"`
			Minute int    `toml:"minute"`
			Text   string `toml:"text"`
		}{"gpu02", trace.StreamKmsg, 31, "Dec  2 10:43:35 gpu02 kernel: [240314.528856] NVRM: Xid (PCI:0000:07:00): 79, pid=1, name=python, GPU has fallen off the bus."},
	)
	var got []string
	for _, s := range incidentTrace(in) {
		if s.IsLog() {
			got = append(got, fmt.Sprintf("%d %s %s %.20s", int(s.Time.Sub(incidentT0)/time.Minute), s.Host, s.Log.Stream, s.Log.Line))
		}
	}
	// Job output is recorded for the node that read it (the batch host);
	// the digest attributes each line from its text.
	want := []string{
		"0 gpu01 layout {\"nodes\":[\"gpu01\",\"g",
		"30 gpu01 stderr gpu02:1:2 [0] NCCL W",
		"30 gpu01 stderr gpu02:1:2 [0] transp",
		"30 gpu01 stderr [rank9]: Traceback (",
		"31 gpu02 kmsg NVRM: Xid (PCI:0000:",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("log records %q, want %q", got, want)
	}
}
