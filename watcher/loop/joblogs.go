package loop

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-hpc/vigil/internal/kmsg"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/watcher/joblog"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// MaxLogLinesPerPoll bounds the matched lines a JobLogs poll keeps: a job
// that prints thousands of NCCL warnings a second costs the digest a few
// hundred lines a period, the first ones (the earliest errors tell most).
const MaxLogLinesPerPoll = 256

// JobLogs follows the job's output files (scontrol's StdOut and StdErr)
// and, where this process may read it, the kernel log, and turns the lines
// joblog.Line matches into log records. The job's user cannot read
// /dev/kmsg where dmesg_restrict is 1 (the default of most distributions):
// then the kernel's XID and ECC lines are not collected, and JobLogs says
// so once; the device library's fault events (Device) still give them.
//
// The job's output files hold the lines of every rank of the job, and
// exist on the batch host (or on a shared file system, where every node
// sees them): only the watcher on the batch host follows them. Each record
// is stamped with this node, the one that read it; which host printed a
// line is told from its own text and the step's layout by the digest
// (joblog.Attribute), live and in replay alike, so a line that names no
// host is never charged to the batch host. The first poll writes the
// layout record (trace.StreamLayout), and a poll after which the job's
// rank map (Ranks) has changed writes a new one, whole: the latest layout
// record is the one that attributes lines, live and in replay. Kernel log
// lines are this node's.
//
// Device adds the faults the device library reports itself (NVML's XID
// and ECC events; DCMI's error codes and uncorrectable ECC counts, read
// once a period; none needs root) as typed device records of this node
// (trace.StreamDevice). Where /dev/kmsg is readable as well, an XID seen
// by both counts once (see xidPairs).
type JobLogs struct {
	Host, Job string
	Nodes     []string // the job's nodes, recorded in the layout record
	// Layout is the step's layout (tasks and ranks by host) where known;
	// its Nodes default to Nodes.
	Layout joblog.Layout
	// Ranks gives the job's rank map (global rank → host) as this watcher
	// knows it now (RankView.Ranks), the layout's Ranks; nil keeps
	// Layout's.
	Ranks   func() map[int]string
	laidOut bool           // the layout record was written
	wrote   map[int]string // the Ranks of the latest layout record
	// Device gives the device library's fault events; nil reads none.
	Device    DeviceEvents
	streams   []logStream
	kmsg      int // /dev/kmsg's descriptor, read without the runtime's poller; -1 when not open
	pairs     xidPairs
	log       logrus.FieldLogger
	deviceErr bool // a failed Device poll has been logged
	// beats learns the heartbeat of the job's output lines.
	beats joblog.Heartbeat
}

// DeviceEvents gives the device faults reported since its last call
// (sample.DeviceEvents: *sample.NVMLEvents, *sample.DCMIFaults). It never
// waits on events.
type DeviceEvents interface {
	Poll() ([]trace.DeviceEvent, error)
}

type logStream struct {
	name string // trace.StreamStdout or StreamStderr
	f    *joblog.Follower
}

// JobOutputs is the part of the job's record JobLogs needs (scontrol show
// job's StdOut, StdErr and BatchHost).
type JobOutputs func(ctx context.Context) (stdout, stderr, batchHost string, err error)

// OpenJobLogs finds the job's output files and opens the kernel log under
// root where readable. Nothing here fails the watcher: an unknown output
// path or an unreadable kernel log only means fewer lines, and is logged.
func OpenJobLogs(ctx context.Context, outputs JobOutputs, root, host, job string, nodes []string, log logrus.FieldLogger) *JobLogs {
	j := &JobLogs{Host: host, Job: job, Nodes: nodes, kmsg: -1, log: log}
	if outputs != nil {
		stdout, stderr, batch, err := outputs(ctx)
		if err != nil {
			log.WithError(err).Warn("could not find the job's output files; its lines are not followed")
		}
		if batch != "" && batch != host {
			log.WithField("batch_host", batch).Info("the job's output files are followed by the watcher on the batch host")
			stdout, stderr = "", ""
		}
		for _, s := range []struct{ name, path string }{{trace.StreamStdout, stdout}, {trace.StreamStderr, stderr}} {
			if s.path == "" || s.path == "/dev/null" || (s.name == trace.StreamStderr && s.path == stdout) {
				continue
			}
			j.streams = append(j.streams, logStream{name: s.name, f: &joblog.Follower{Path: s.path}})
		}
	}
	paths := make([]string, 0, len(j.streams))
	for _, s := range j.streams {
		paths = append(paths, s.f.Path)
	}
	// A raw descriptor: through os.File, the runtime's poller would park a
	// read of /dev/kmsg until the kernel logs something.
	kmsgPath := filepath.Join(root, "dev", "kmsg")
	fd, err := kmsg.Open(kmsgPath)
	if err == nil {
		if _, err = syscall.Seek(fd, 0, io.SeekEnd); err != nil { // only what the kernel says from now on
			syscall.Close(fd)
		}
	}
	if err != nil {
		log.WithError(err).Info("the kernel log is not readable by the job's user " +
			"(dmesg_restrict=1 restricts /dev/kmsg to root): its XID and ECC lines are not collected; " +
			"NVML's fault events (or DCMI's error codes) still are where the devices give them, and the epilog's re-check still sees the node's devices")
	} else {
		j.kmsg = fd
	}
	log.WithFields(logrus.Fields{"outputs": strings.Join(paths, ","), "kmsg": j.kmsg >= 0}).Info("following the job's output for evidence")
	return j
}

// FollowsOutput reports whether this watcher follows the job's output
// files (it runs on the batch host, or they are on a shared file system).
func (j *JobLogs) FollowsOutput() bool { return j != nil && len(j.streams) > 0 }

// Close closes the kernel log.
func (j *JobLogs) Close() {
	if j != nil && j.kmsg >= 0 {
		syscall.Close(j.kmsg)
		j.kmsg = -1
	}
}

// Poll returns the matched lines written since the last poll, as log
// records stamped now, at most MaxLogLinesPerPoll.
func (j *JobLogs) Poll(now time.Time) []trace.Sample {
	if j == nil {
		return nil
	}
	return inOrder(j.poll(now), now)
}

// inOrder stamps the records of one poll a nanosecond apart, the last a
// nanosecond before now, so that the digest's "earliest anomaly" sees the
// order in which a stream's lines were written (an NCCL error, then the
// exits it caused, read in one poll): the layout record first, then the
// kernel log's lines and the device events (a device fault is never taken
// for the effect of lines the job printed in the same period), then the
// job's output, each in the order read.
func inOrder(recs []trace.Sample, now time.Time) []trace.Sample {
	place := func(r trace.Sample) int {
		switch r.Log.Stream {
		case trace.StreamLayout:
			return 0
		case trace.StreamKmsg, trace.StreamDevice:
			return 1
		}
		return 2
	}
	sort.SliceStable(recs, func(a, b int) bool { return place(recs[a]) < place(recs[b]) })
	for i := range recs {
		recs[i].Time = now.Add(-time.Duration(len(recs)-i) * time.Nanosecond)
	}
	return recs
}

// poll is Poll's reading, every record stamped now.
func (j *JobLogs) poll(now time.Time) []trace.Sample {
	var out []trace.Sample
	if rec, ok := j.layoutRecord(now); ok {
		out = append(out, rec)
	}
	keep := func(stream, line string) {
		if len(out) < MaxLogLinesPerPoll {
			if _, ok := joblog.LineIn(stream, line); ok {
				out = append(out, trace.Sample{V: trace.Version, Time: now, Host: j.Host, Job: j.Job,
					Log: &trace.Log{Stream: stream, Line: line}})
			}
		}
	}
	for _, s := range j.streams {
		lines, err := s.f.Poll()
		if err != nil {
			continue // unreadable for now: fewer lines, never a verdict
		}
		for _, l := range lines {
			if stream, ok := j.beats.Keep(now, s.name, l); ok && len(out) < MaxLogLinesPerPoll {
				out = append(out, trace.Sample{V: trace.Version, Time: now, Host: j.Host, Job: j.Job,
					Log: &trace.Log{Stream: stream, Line: l}})
			}
		}
	}
	both := j.kmsg >= 0 && j.Device != nil
	if both {
		j.pairs.next()
	}
	if j.kmsg >= 0 {
		for _, l := range readKmsg(j.kmsg) {
			if !both || j.pairs.keep(fromKmsg, l) {
				keep(trace.StreamKmsg, l)
			}
		}
	}
	for _, e := range j.deviceEvents() {
		if (!both || j.pairs.keepEvent(e)) && len(out) < MaxLogLinesPerPoll {
			out = append(out, trace.DeviceRecord(j.Host, j.Job, now, e))
		}
	}
	return out
}

// layoutRecord is the layout record due at now: the first poll's, and a
// new one whenever the job's rank map has changed since the latest.
func (j *JobLogs) layoutRecord(now time.Time) (trace.Sample, bool) {
	if len(j.streams) == 0 {
		return trace.Sample{}, false
	}
	l := j.Layout
	if len(l.Nodes) == 0 {
		l.Nodes = j.Nodes
	}
	if j.Ranks != nil {
		if m := j.Ranks(); len(m) > 0 {
			l.Ranks = m
		}
	}
	if j.laidOut && maps.Equal(l.Ranks, j.wrote) {
		return trace.Sample{}, false
	}
	b, err := json.Marshal(l)
	if err != nil {
		return trace.Sample{}, false
	}
	j.laidOut, j.wrote = true, l.Ranks
	return trace.Sample{V: trace.Version, Time: now, Host: j.Host, Job: j.Job,
		Log: &trace.Log{Stream: trace.StreamLayout, Line: string(b)}}, true
}

// deviceEvents polls Device; its first failure is logged, once.
func (j *JobLogs) deviceEvents() []trace.DeviceEvent {
	if j.Device == nil {
		return nil
	}
	evs, err := j.Device.Poll()
	if err != nil && !j.deviceErr {
		j.deviceErr = true
		log := j.log
		if log == nil {
			log = logrus.StandardLogger()
		}
		log.WithError(err).Warn("could not read the devices' fault events; said once, the watcher goes on")
	}
	return evs
}

// readKmsg reads the kernel log records available now from /dev/kmsg
// (kmsg.ReadAvailable, the one reader of the kernel log), their messages
// only, at most 4096 a poll.
func readKmsg(fd int) []string {
	recs, _, _ := kmsg.ReadAvailable(fd, 0, true, 4096)
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Text
	}
	return out
}
