package realjob

import (
	"encoding/json"
	"fmt"
	"github.com/vigil-hpc/vigil/config/watchcfg"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/notify/notifytest"
	"github.com/vigil-hpc/vigil/slurm/slurmtest"
)

// observed is what a job showed: the answer the table's row asserts.
type observed struct {
	state    string
	verdict  *event            // the first hung event of any watcher, or the first digest of a hang
	digest   []notifytest.Hook // the webhooks with a digest
	hooks    int
	cause    string
	culprits []int
	event    string // the digest's event: "digest" (a hang) or "failed"
	hint     string
	// stragglers are the nodes named by the watchers' straggler events,
	// sorted; straggler is the first such event.
	stragglers []int
	straggler  *event
}

func observe(j *job, state string, hooks []notifytest.Hook) observed {
	o := observed{state: state, hooks: len(hooks)}
	for _, e := range events(j.dir, j.logs) {
		if (e.Event == "hung" || e.Event == "digest") && (o.verdict == nil || e.Time.Before(o.verdict.Time)) {
			e := e
			o.verdict = &e
		}
		if e.Event == "straggler" {
			if n := slices.Index(j.hosts, e.Host); !slices.Contains(o.stragglers, n) {
				o.stragglers = append(o.stragglers, n)
			}
			if o.straggler == nil || e.Time.Before(o.straggler.Time) {
				e := e
				o.straggler = &e
			}
		}
	}
	slices.Sort(o.stragglers)
	for _, h := range hooks {
		dg, _ := h.Body["digest"].(map[string]any)
		if dg == nil {
			continue
		}
		o.digest = append(o.digest, h)
		o.cause, _ = dg["cause"].(string)
		o.event, _ = h.Body["event"].(string)
		o.hint, _ = dg["hint"].(string)
		cs, _ := dg["culprits"].([]any)
		for _, c := range cs {
			host, _ := c.(map[string]any)["host"].(string)
			o.culprits = append(o.culprits, slices.Index(j.hosts, host))
		}
	}
	return o
}

// check asserts the job's row and prints the measured times from the
// fault to the first verdict and to the digest.
func check(t *testing.T, c *slurmtest.Cluster, j *job, state, comment string, hooks []notifytest.Hook) {
	o := observe(j, state, hooks)
	at, faulted := faultTime(j.dir)
	measure := "no fault noted"
	if faulted {
		measure = "fault→verdict " + since(at, o.verdict != nil, func() time.Time { return o.verdict.Time }) +
			", fault→digest " + since(at, len(o.digest) > 0, func() time.Time { return o.digest[0].At })
		if !j.ended.IsZero() {
			measure += fmt.Sprintf(", fault→end %.0fs, end→digest %s", j.ended.Sub(at).Seconds(),
				since(j.ended, len(o.digest) > 0, func() time.Time { return o.digest[0].At }))
		}
		if o.straggler != nil {
			measure += ", fault→straggler " + since(at, true, func() time.Time { return o.straggler.Time }) + " (" + o.straggler.Reason + ")"
		}
	}
	line := fmt.Sprintf("MEASURED %s (job %s, %s launch, %d/node): %s; ended %s; observed row: state %q verdict %v digest %v (%s) cause %q culprits %v stragglers %v",
		j.name, j.id, j.fault.launch, j.per, measure, state, o.state, o.verdict != nil, len(o.digest) > 0, o.event, o.cause, o.culprits, o.stragglers)
	t.Log(line)
	measured(t, line)
	defer func() {
		if t.Failed() {
			dump(t, c, j)
		}
	}()
	w := j.want
	if !faulted {
		t.Errorf("the job never reached its fault (no %s/fault)", j.dir)
	}
	if w.state != "" && o.state != w.state { // "": Slurm's end of a job whose node stopped answering varies (NODE_FAIL, requeued)
		t.Errorf("job state %s, want %s", o.state, w.state)
	}
	if (o.verdict != nil) != w.verdict {
		t.Errorf("hung verdict %v, want %v", o.verdict, w.verdict)
	}
	switch {
	case w.digest && (len(o.digest) != 1 || o.hooks != 1):
		t.Errorf("%d webhooks (%d with a digest), want exactly one, with the digest", o.hooks, len(o.digest))
	case w.digest && (o.cause != w.cause || !slices.Equal(o.culprits, w.culprits)):
		t.Errorf("digest cause %q culprits %v (of %v), want %q %v", o.cause, o.culprits, j.hosts, w.cause, w.culprits)
	case w.digest && !w.eitherEnd && w.failed != (o.event == "failed"):
		t.Errorf("the digest's report is of event %q, want a failed job's: %v", o.event, w.failed)
	case w.digest && !w.failed && o.event != "failed" && !strings.Contains(comment, "vigil: hung since"):
		t.Errorf("job comment %q, want vigil's hang note", comment)
	case !w.digest && o.hooks != 0:
		t.Errorf("%d webhooks, want none", o.hooks)
	}
	switch took := o.digestAfter(at); {
	case w.fromEnd && w.within > 0 && j.ended.IsZero():
		t.Errorf("the job's end time is unknown (Slurm's EndTime)")
	case w.fromEnd && w.within > 0 && len(o.digest) > 0 && o.digestAfter(j.ended) > w.within:
		t.Errorf("the digest came %.1fs after the job's end, want within %v", o.digestAfter(j.ended).Seconds(), w.within)
	case !w.fromEnd && w.within > 0 && faulted && len(o.digest) > 0 && took > w.within:
		t.Errorf("the digest came %.1fs after the fault, want within %v", took.Seconds(), w.within)
	}
	if !slices.Equal(o.stragglers, w.straggler) {
		t.Errorf("straggler events name nodes %v (of %v), want %v", o.stragglers, j.hosts, w.straggler)
	}
	if o.straggler != nil && w.within > 0 && faulted && len(w.straggler) > 0 && o.straggler.Time.Sub(at) > w.within {
		t.Errorf("the straggler event came %.1fs after the fault, want within %v", o.straggler.Time.Sub(at).Seconds(), w.within)
	}
	if w.hintNot != "" && strings.Contains(o.hint, w.hintNot) {
		t.Errorf("the digest's hint %q says %q", o.hint, w.hintNot)
	}
	if out := c.JobOutput(j.id); !strings.Contains(out, w.output) {
		t.Errorf("the job's output lacks %q", w.output)
	}
	reps, _ := filepath.Glob(filepath.Join(j.dir, "vigil-hang-*.json"))
	if w.digest != (len(reps) > 0) {
		t.Errorf("hang reports %v, want some: %v", reps, w.digest)
	}
	if w.gap != "" {
		t.Logf("known gap %s (docs/testing.md): this answer is what vigil gives today, not the right one", w.gap)
	}
}

// digestAfter is the time from at to the first digest's webhook.
func (o observed) digestAfter(at time.Time) time.Duration {
	if len(o.digest) == 0 {
		return 0
	}
	return o.digest[0].At.Sub(at)
}

func since(at time.Time, ok bool, then func() time.Time) string {
	if !ok {
		return "none"
	}
	return fmt.Sprintf("%.1fs", then().Sub(at).Seconds())
}

func dump(t *testing.T, c *slurmtest.Cluster, j *job) {
	t.Logf("job %s output:\n%s", j.id, tail(c.JobOutput(j.id), 4000))
	files, _ := filepath.Glob(filepath.Join(j.dir, "watch-*"))
	if j.logs != "" {
		more, _ := filepath.Glob(j.logs)
		files = append(files, more...)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		t.Logf("%s:\n%s", f, tail(string(b), 3000))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// meta describes a recorded fixture.
type meta struct {
	Fault  string   `json:"fault"`
	Torch  string   `json:"torch"`
	Slurm  string   `json:"slurm"`
	Cgroup string   `json:"cgroup"`
	Job    string   `json:"job"`
	Hosts  []string `json:"hosts"`
	Window string   `json:"window"`
	// Period and PulseFloor are the watchers' --period and [watch]
	// pulse_floor ("" in fixtures recorded before the pulse).
	Period     string `json:"period,omitempty"`
	PulseFloor string `json:"pulse_floor,omitempty"`
	PulseBeats int    `json:"pulse_beats,omitempty"`
	FaultAt    string `json:"fault_at,omitempty"`
}

// record copies what the job printed (its output: PyTorch's, gloo's and
// the launcher's own lines), its watchers' events and their traces.
func record(t *testing.T, c *slurmtest.Cluster, j *job, dir, torch string) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m := meta{Fault: j.name, Torch: torch, Slurm: c.Version, Cgroup: c.CgroupPlugin, Job: j.id, Hosts: j.hosts, Window: j.window,
		Period: watchPeriod, PulseFloor: watchPulseFloor, PulseBeats: watchPulseBeats}
	if j.auto { // the shipped settings, the period as vigil-watch derives it from the job's window
		s := watchcfg.Default()
		s.Window = replayConfig(meta{Window: j.window}).Window
		s = s.Final()
		m.Period, m.PulseFloor, m.PulseBeats = s.Period.String(), s.PulseFloor.String(), s.PulseBeats
	}
	if at, ok := faultTime(j.dir); ok {
		m.FaultAt = at.UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	files := map[string][]byte{"meta.json": append(b, '\n'), "job.out": []byte(c.JobOutput(j.id))}
	srcs, _ := filepath.Glob(filepath.Join(j.dir, "rec-*.jsonl"))
	for i, f := range srcs {
		b, _ := os.ReadFile(f)
		files[fmt.Sprintf("trace-%d.jsonl", i)] = b
	}
	srcs, _ = filepath.Glob(filepath.Join(j.dir, "watch-*.out"))
	for _, f := range srcs {
		b, _ := os.ReadFile(f)
		files["events-"+strings.TrimPrefix(filepath.Base(f), "watch-")] = b
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// measured appends line, with the test's name, to the file that
// VIGIL_MEASURED names (CI sets it and prints the file at its end: go test
// shows a passing test's log only with -v).
func measured(t *testing.T, line string) {
	p := os.Getenv("VIGIL_MEASURED")
	if p == "" {
		return
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Errorf("VIGIL_MEASURED: %v", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(t.Name() + ": " + line + "\n"); err != nil {
		t.Errorf("VIGIL_MEASURED: %v", err)
	}
}
