package loop

import (
	"context"
	"errors"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/ncclras"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// RASPoller asks NCCL's RAS service of the job (package ncclras) how the
// job stands, while this node's detector says suspect or hung, at most
// once per Period: its answers are trace.StreamRAS records, which the
// loop records and gives to the job's view as evidence for the digest.
// A port that turns out not to be NCCL's is not asked again for the job
// (said once in the log); a query that fails otherwise (no NCCL process
// on the node yet, or one that did not answer in time) is tried again in
// the next period. RAS polled in a tight loop has crashed NCCL processes
// (NVIDIA/nccl#1669, #1718): hence only while suspect, and never more
// often than Period.
type RASPoller struct {
	Addr    string        // the service's address, ncclras.Addr; "" asks nothing
	Period  time.Duration // the least time between two queries
	Timeout time.Duration // bound of one query; 0 is ncclras.DefaultTimeout
	// Query asks addr; nil is ncclras.Query (tests put a fake).
	Query func(ctx context.Context, addr string, timeout time.Duration) (ncclras.Status, error)
	Clock Clock              // the time of the answers; nil is RealClock
	Log   logrus.FieldLogger // nil: the standard logger

	suspect bool      // the detector's latest word on this host is suspect or hung
	last    time.Time // when the latest query began
	off     bool      // the port is not NCCL's: asked no more
}

// Poll takes the detector's events for sample s and, while this host is
// suspect or hung or the job's view says the job may be hung (job, from
// its pulse or strong evidence: JobView's Suspect), asks RAS when Period
// has passed since the last query: the answer as a record of s's host and
// job, or none.
func (p *RASPoller) Poll(ctx context.Context, s trace.Sample, evs []hang.Event, job bool) []trace.Sample {
	for _, ev := range evs {
		switch ev.Event {
		case hang.EventSuspect, hang.EventHung:
			p.suspect = true
		case hang.EventRecovered:
			p.suspect = false
		}
	}
	if p.Addr == "" || p.off || !p.suspect && !job || !p.last.IsZero() && s.Time.Sub(p.last) < p.Period {
		return nil
	}
	p.last = s.Time
	query := p.Query
	if query == nil {
		query = ncclras.Query
	}
	log := p.log().WithField("ras", p.Addr)
	st, err := query(ctx, p.Addr, p.Timeout)
	switch {
	case errors.Is(err, ncclras.ErrNotRAS):
		p.off = true
		log.WithError(err).Warn("the NCCL RAS port answers as something else: not asking it again for this job")
		return nil
	case err != nil:
		log.WithError(err).Debug("could not ask NCCL's RAS service")
		return nil
	}
	clock := p.Clock
	if clock == nil {
		clock = RealClock{}
	}
	now := clock.Now()
	if !now.After(s.Time) {
		now = s.Time.Add(time.Nanosecond) // after the sample whose verdict asked
	}
	return []trace.Sample{trace.RASRecord(s.Host, s.Job, now, st)}
}

func (p *RASPoller) log() logrus.FieldLogger {
	if p.Log == nil {
		return logrus.StandardLogger()
	}
	return p.Log
}
