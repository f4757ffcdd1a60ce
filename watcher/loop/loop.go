// Package run is vigil-watch's watch loop: every period it takes a sample of
// the job on this node, optionally records it, feeds the hang detector and
// hands the detector's events to the actions. It also holds the [watch]
// settings and the offline replay command.
package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/watcher/coord"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Clock is the loop's time source; tests step a fake one.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives once d has passed.
	After(d time.Duration) <-chan time.Time
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns the current time.
func (RealClock) Now() time.Time { return time.Now() }

// After waits d in real time.
func (RealClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Sampler takes one sample of the job on this node (*sample.Sampler).
type Sampler interface {
	Sample(now time.Time) trace.Sample
}

// Detector turns samples into events (*hang.Detector).
type Detector interface {
	Observe(s trace.Sample) []hang.Event
}

// Handler acts on events (*action.Actor).
type Handler interface {
	Handle(ctx context.Context, ev hang.Event) error
}

// LogSource gives the matched lines of the job's output written since its
// last poll, as log records (*JobLogs).
type LogSource interface {
	Poll(now time.Time) []trace.Sample
}

// JobView sees this node's records and the detector's events, and gives the
// job's own events (digests, stragglers) when they are due: a tracker of
// this node alone on a lone watcher, the job's coordinator otherwise
// (watcher/coord).
type JobView interface {
	Observe(s trace.Sample, evs []hang.Event)
	Due(ctx context.Context, now time.Time) []coord.Out
	// Role is the watcher's part in the job's meeting (trace.Role*), for
	// its end record.
	Role() string
	// End gives the job's events due at the watcher's stop, after its
	// last records: the digest of a job that failed (digest.EventFailed).
	End(ctx context.Context, now time.Time) []coord.Out
}

// FinishTimeout bounds what the watcher does once it stops (the last poll
// of the job's output, the digest of a failed job, its report and
// notifications): Slurm sends SIGKILL KillWait (default 30 s) after the
// SIGTERM that ends the job's steps.
var FinishTimeout = 15 * time.Second

// DigestHandler acts on a digest of the job (*action.Actor): notify says
// this node announces it (the coordinator); otherwise it is recorded only.
// HandleJobRecovered announces the end, at t, of a hang the digest
// announced; since is the digest's (zero: unknown).
type DigestHandler interface {
	HandleDigest(ctx context.Context, d digest.DigestEvent, notify bool) error
	HandleJobRecovered(ctx context.Context, t, digest, since time.Time) error
}

// RankView is a JobView that keeps the job's rank map (*coord.Node,
// *coord.Lone): SetRanks takes the global ranks of the job's processes on
// host, read now; Ranks is the job's map of global rank to host as this
// watcher knows it.
type RankView interface {
	SetRanks(host string, ranks []int)
	Ranks() map[int]string
}

// Viewer keeps this node's readings and the detector's events for the
// hang report's page (*hangview.Recent).
type Viewer interface {
	Observe(s trace.Sample, evs []hang.Event)
}

// ErrJobGone is what Alive returns (wrapped) when the job's cgroup has
// disappeared or the job has ended: the loop then stops without error.
var ErrJobGone = errors.New("the job is gone from this node")

// Loop is the watch loop. Sampler, Detector and Period are required.
type Loop struct {
	Clock    Clock         // nil: RealClock
	Period   time.Duration // time between samples
	Sampler  Sampler
	Detector Detector
	// Alive is asked before each sample; an error wrapping ErrJobGone ends
	// the loop cleanly, any other error is logged and the loop goes on. Nil
	// means always alive.
	Alive func() error
	// Record receives every sample as a trace line; nil records nothing.
	Record *trace.Writer
	// Events receives every event as one JSON line; nil prints nothing.
	Events io.Writer
	// Actions acts on the events; nil acts on nothing.
	Actions Handler
	// Logs gives the job's matched output lines each period; they are
	// recorded and go to Job. Nil follows nothing.
	Logs LogSource
	// RAS asks NCCL's RAS service while this host is suspect or hung;
	// its answers are recorded and go to Job after the sample. Nil asks
	// nothing.
	RAS *RASPoller
	// Waits reads what the job's processes wait on while this host or the
	// job may be hung; its records go with RAS's. Nil reads nothing.
	Waits *WaitsPoller
	// Job turns this node's records into the job's digests and
	// stragglers; nil gives none.
	Job JobView
	// Ranks reads the global ranks of the job's processes on this node
	// (sample.Sampler.Ranks) each period, for Job's rank map (RankView)
	// before Logs is polled; nil reads none.
	Ranks func() []int
	// Early is asked every EarlyCheck between samples (the device
	// library's fault events, DeviceWatch); when it holds evidence that
	// cannot heal, the loop samples at once instead of at the next
	// period, and so gives the digest within seconds. Nil waits for the
	// period.
	Early EarlySource
	// Digests acts on the job's digests; nil acts on nothing.
	Digests DigestHandler
	// View is given each reading and its events before the actions run,
	// so that a hang report's page shows the reading of the verdict; nil
	// keeps none.
	View Viewer
	Log  logrus.FieldLogger // nil: the standard logger

	host, job string    // of the latest sample ("" before the first)
	last      time.Time // the latest sample's time
}

// Run samples every Period until ctx ends (SIGTERM) or the job is gone.
// Both are a clean end and return nil; only a broken setup is an error.
func (l *Loop) Run(ctx context.Context) error {
	if l.Period <= 0 {
		return fmt.Errorf("watch: period %v: must be positive", l.Period)
	}
	clock := l.clock()
	next := clock.Now()
	for {
		if err := ctx.Err(); err != nil {
			l.log().Info("vigil-watch stopping: signalled")
			l.finish(trace.EndSignalled)
			return nil
		}
		if gone, err := l.Step(ctx, clock.Now()); gone {
			l.log().WithError(err).Info("vigil-watch stopping: the job is gone from this node")
			l.finish(trace.EndJobGone)
			return nil
		}
		// Keep to a fixed grid: a slow sample shortens the wait instead of
		// drifting; a sample that overran whole periods skips them; a
		// sample the early source asked for keeps the next one.
		now := clock.Now()
		for !next.After(now) {
			next = next.Add(l.Period)
		}
		if l.wait(ctx, clock, next) {
			l.log().Info("vigil-watch stopping: signalled")
			l.finish(trace.EndSignalled)
			return nil
		}
	}
}

// Step takes one sample at now and acts on its events. It reports gone when
// the job has left this node; the error then says how.
func (l *Loop) Step(ctx context.Context, now time.Time) (gone bool, err error) {
	log := l.log()
	if l.Alive != nil {
		if err := l.Alive(); err != nil {
			if errors.Is(err, ErrJobGone) {
				return true, err
			}
			log.WithError(err).Warn("could not tell whether the job is still here; sampling anyway")
		}
	}
	s := l.Sampler.Sample(now)
	l.host, l.job, l.last = s.Host, s.Job, s.Time
	if len(s.Missing) > 0 {
		log.WithField("missing", s.Missing).Debug("sample incomplete")
	}
	if v, ok := l.Job.(RankView); ok && l.Ranks != nil {
		v.SetRanks(s.Host, l.Ranks())
	}
	var logs []trace.Sample
	if l.Logs != nil {
		logs = l.Logs.Poll(s.Time)
	}
	l.record(append(logs, s))
	evs := l.Detector.Observe(s)
	var ras []trace.Sample
	if v, ok := l.Job.(lostRecorder); ok { // before the waits they make evidence of
		ras = v.LostRecords(s.Host, s.Job, s.Time.Add(time.Nanosecond))
	}
	if l.Waits != nil { // before RAS's, whose records come later
		ras = append(ras, l.Waits.Poll(s, evs, l.jobSuspect())...)
	}
	if l.RAS != nil {
		ras = append(ras, l.RAS.Poll(ctx, s, evs, l.jobSuspect())...)
	}
	l.record(ras)
	if l.View != nil {
		l.View.Observe(s, evs)
	}
	for _, ev := range evs {
		l.print(ev)
		if l.Actions != nil {
			if err := l.Actions.Handle(ctx, ev); err != nil {
				log.WithError(err).WithField("event", ev.Event).Error("some actions failed")
			}
		}
	}
	if l.Job != nil {
		for _, r := range logs {
			l.Job.Observe(r, nil)
		}
		l.Job.Observe(s, evs)
		last := s.Time
		for _, r := range ras {
			l.Job.Observe(r, nil)
			last = r.Time
		}
		due := l.clock().Now()
		if !due.After(last) {
			due = last.Add(time.Nanosecond) // every record up to the sample is in
		}
		l.jobEvents(ctx, l.Job.Due(ctx, due))
	}
	return false, nil
}

// finish is the watcher's last step once it stops (why: trace.End's Why):
// a last poll of the job's output, which holds the job's last words (srun's
// word that a task was killed comes as the job ends), and the end record
// (trace.StreamEnd), recorded and given to the job's view, whose End then
// gives the digest of a job that failed; it is acted on within
// FinishTimeout, the loop's context being done by now.
func (l *Loop) finish(why string) {
	if l.Job == nil || l.host == "" {
		return // no view, or not one sample taken: nothing to end
	}
	ctx, cancel := context.WithTimeout(context.Background(), FinishTimeout)
	defer cancel()
	now := l.clock().Now()
	if !now.After(l.last) {
		now = l.last.Add(time.Nanosecond)
	}
	var recs []trace.Sample
	if l.Logs != nil {
		recs = l.Logs.Poll(now)
	}
	var lost []trace.Sample
	if v, ok := l.Job.(lostRecorder); ok { // a coordinator lost since the last step (a takeover as the job ended)
		lost = v.LostRecords(l.host, l.job, now)
	}
	if v, ok := l.Job.(endRecorder); ok { // a coordinator silent at the end: its loss
		lost = append(lost, v.EndRecords(ctx, l.host, l.job, now)...)
	}
	if len(lost) > 0 {
		recs = append(recs, lost...)
		if l.Waits != nil { // and what the processes still here wait on: data to it in flight
			recs = append(recs, l.Waits.Poll(trace.Sample{Host: l.host, Job: l.job, Time: now}, nil, true)...)
		}
	}
	line, _ := json.Marshal(trace.End{Role: l.Job.Role(), Why: why})
	recs = append(recs, trace.Sample{V: trace.Version, Time: now, Host: l.host, Job: l.job,
		Log: &trace.Log{Stream: trace.StreamEnd, Line: string(line)}})
	l.record(recs)
	end := now
	for _, r := range recs {
		l.Job.Observe(r, nil)
		if r.Time.After(end) {
			end = r.Time // the waits record comes just after now
		}
	}
	// The end is judged after every record it was given: a view does not
	// judge the instant of its latest record, since more may come then.
	l.jobEvents(ctx, l.Job.End(ctx, end.Add(time.Nanosecond)))
}

// record writes the records to the trace.
func (l *Loop) record(recs []trace.Sample) {
	if l.Record == nil {
		return
	}
	for _, r := range recs {
		if err := l.Record.Write(r); err != nil {
			l.log().WithError(err).Warn("could not record the sample")
			return
		}
	}
}

// print writes one event as a JSON line to Events.
func (l *Loop) print(ev any) {
	if l.Events == nil {
		return
	}
	line, err := json.Marshal(ev)
	if err == nil {
		_, err = l.Events.Write(append(line, '\n'))
	}
	if err != nil {
		l.log().WithError(err).Warn("could not print the event")
	}
}

// jobEvents prints the job's own events and acts on its digests.
func (l *Loop) jobEvents(ctx context.Context, outs []coord.Out) {
	if len(outs) == 0 {
		return
	}
	// A digest's actions (the comment, the webhook, the mail) finish even
	// when the loop is told to stop meanwhile: Slurm often ends a job
	// seconds after its verdict (a node cut off: NODE_FAIL), and the
	// webhook of a digest already announced must not die with the watcher's
	// signal. FinishTimeout bounds them.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FinishTimeout)
	defer cancel()
	for _, o := range outs {
		l.print(o.Event)
		if l.Digests == nil {
			continue
		}
		var err error
		switch e := o.Event.(type) {
		case digest.DigestEvent:
			err = l.Digests.HandleDigest(ctx, e, o.Notify)
		case coord.JobRecovered:
			if o.Notify {
				err = l.Digests.HandleJobRecovered(ctx, e.Time, e.Digest, e.Since)
			}
		}
		if err != nil {
			l.log().WithError(err).Error("some actions failed")
		}
	}
}

// lostRecorder is a job's view that says when this node lost the job's
// coordinator (coord.Node): its records (trace.StreamLost) are recorded
// and observed like the waits.
type lostRecorder interface {
	LostRecords(host, job string, at time.Time) []trace.Sample
}

// endRecorder is a job's view that may have records to add at the job's
// end, before its end record (coord.Node: the loss of a coordinator that
// fell silent before the job ended).
type endRecorder interface {
	EndRecords(ctx context.Context, host, job string, at time.Time) []trace.Sample
}

// jobSuspect reports whether the job's view says the job may be hung
// (its pulse silent, strong evidence pending): a view without the word
// says no.
func (l *Loop) jobSuspect() bool {
	v, ok := l.Job.(interface{ Suspect() bool })
	return ok && v.Suspect()
}

func (l *Loop) clock() Clock {
	if l.Clock == nil {
		return RealClock{}
	}
	return l.Clock
}

func (l *Loop) log() logrus.FieldLogger {
	if l.Log == nil {
		return logrus.StandardLogger()
	}
	return l.Log
}
