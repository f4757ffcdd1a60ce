package hang

import (
	"time"

	"github.com/vigil-hpc/vigil/internal/xid"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Evidence that cannot heal: what the job cannot recover from by waiting,
// so that the evidence rule gives its verdict at once, without
// Config.ConfirmPeriods of flat readings:
//
//   - a device event of one of the job's own GPUs (the device library's
//     report, trace.StreamDevice) whose XID is Unhealable in NVIDIA's
//     catalogue (internal/xid: the device must be reset, its node rebooted
//     or its links repaired: XID 79, 74, 95, 119, 154 naming a reset or a
//     reboot, ...);
//   - NCCL's RAS service naming ranks dead (its processes are gone, not
//     merely slow to answer);
//   - every process of the job gone from a host while a peer still has
//     some (noteTelemetry).
//
// Everything else keeps its confirmation: a transport error, a collective
// timeout, an XID whose remedy is to restart the application (13, 31, 94),
// an uncorrectable ECC error the device reports without its XID (whether
// its row remap failed is the XID's to say: 64, 95, 48), stopped processes
// (SIGCONT resumes them), and every line of the job's output, which the
// job's own code can print. A kernel log XID line keeps it too: the kernel
// log is the node's, and on a shared node the GPU it names may be another
// job's; the same fault from the job's own GPU comes as a device event.

// UnhealableDevice reports whether a device event is evidence that cannot
// heal: an XID that no job recovers from.
func UnhealableDevice(e trace.DeviceEvent) bool {
	return e.Kind == trace.DeviceXID && xid.Event{Code: e.XID, PCI: e.PCI}.Unhealable()
}

// unhealable reports whether a matched log record (a strong one, isStrong)
// is evidence that cannot heal.
func unhealable(stream, line string, m joblog.Match) bool {
	switch stream {
	case trace.StreamDevice:
		e, ok := trace.ParseDeviceEvent(line)
		return ok && UnhealableDevice(e)
	case trace.StreamRAS:
		if m.Kind != joblog.KindRASFailed {
			return false
		}
		st, ok := trace.ParseRAS(line)
		return ok && (st.DeadCount > 0 || len(st.Dead) > 0)
	}
	return false
}

// unhealableVerdict is the evidence rule's verdict on j's evidence that
// cannot heal: at once, at the first round that has it. A host whose
// processes are all gone is one only while no peer made I/O progress
// from one period before it: a job whose nodes end one after the other
// (rank 0 writing the final checkpoint after its peers left) is not
// hung, and keeps its confirmation (nil, and the evidence may heal).
//
// A host's processes gone also waits teardownHold after it was seen: a
// rank that died is usually followed within seconds by the launcher
// ending the job (srun, torchrun), and that job failed, which its end's
// digest says; it did not hang.
func (e *Episodes) unhealableVerdict(id string, j *jobTrack) *digest.Detection {
	ev := j.strong
	if ev.telem && e.movedSince(id, j, ev.at.Add(-e.c.Period), j.last) {
		j.strong.final = false
		return nil
	}
	if ev.telem && j.last.Sub(ev.at) < teardownHold(e.c) {
		return nil // seen again at the next round
	}
	det := &digest.Detection{By: ev.by, Evidence: ev.what, EvidenceAt: ev.at, Unhealable: true,
		AfterEvidenceS: max(j.last.Sub(ev.at), 0).Seconds()}
	if p := &j.pulse; p.beats > 0 {
		det.LastProgress, det.AfterProgressS, det.Beats = p.lastLine, j.last.Sub(p.lastLine).Seconds(), p.beats
	}
	return det
}

// maxTeardownHold bounds teardownHold: how long a launcher takes to end a
// job once one of its ranks died (srun's kill-on-bad-exit, torchrun's
// agent), with room for a loaded node.
const maxTeardownHold = 15 * time.Second

// teardownHold is how long a host's processes must stay gone before that
// alone calls the job hung: the confirmation, at most maxTeardownHold.
func teardownHold(c Config) time.Duration {
	return min(time.Duration(c.ConfirmPeriods)*c.Period, maxTeardownHold)
}
