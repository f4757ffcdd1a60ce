package loop

import (
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// WaitsPoller reads what the job's processes on this node wait on
// (sample.Sampler.Waits: the system call, the file descriptor, the
// socket's peer and its retransmits, the cgroup freezer) while this
// node's detector says suspect or hung, or the job's view says the job may
// be hung: once per sample then, as a trace.StreamWaits record, which the
// loop records and gives to the job's view as evidence for the digest.
type WaitsPoller struct {
	// Read reads the waits; false when the processes cannot be listed.
	Read func() (trace.Waits, bool)

	suspect bool // the detector's latest word on this host is suspect or hung
}

// Poll takes the detector's events for sample s and, while this host or
// the job (job) may be hung, reads the waits: a record of s's host and job
// just after s, or none (no process's wait could be read).
func (p *WaitsPoller) Poll(s trace.Sample, evs []hang.Event, job bool) []trace.Sample {
	for _, ev := range evs {
		switch ev.Event {
		case hang.EventSuspect, hang.EventHung:
			p.suspect = true
		case hang.EventRecovered:
			p.suspect = false
		}
	}
	if p.Read == nil || !p.suspect && !job {
		return nil
	}
	w, ok := p.Read()
	if !ok || w.Procs == 0 {
		return nil // nothing listed, or no process's wait could be read
	}
	return []trace.Sample{trace.WaitsRecord(s.Host, s.Job, s.Time.Add(time.Nanosecond), w)}
}
