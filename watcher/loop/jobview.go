package loop

import (
	"context"
	"fmt"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/munge"
	"github.com/vigil-hpc/vigil/rendezvous"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/watcher/coord"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// jobView sets up how this watcher shares what it sees with the job's other
// watchers: a coordination session (watcher/coord) when the job has
// several nodes, [watch] port is set and MUNGE can seal messages; else a
// lone view of this node, and the log says why.
// On the coordinator, seen is given every host's readings (coord.Config.Seen).
func jobView(ctx context.Context, o Options, s Settings, job *slurm.Job, seen func(trace.Sample, []hang.Event), log logrus.FieldLogger) (JobView, func()) {
	lone := func(why string, err error) (JobView, func()) {
		l := log.WithField("why", why)
		if err != nil {
			l = l.WithError(err)
		}
		l.Info("this watcher acts for its own node alone (no coordinator)")
		return coord.NewLone(s.Hang), func() {}
	}
	cfg, err := rendezvous.ForJob(job)
	switch {
	case err != nil:
		return lone("the job's node list is unknown", err)
	case len(cfg.Nodes) < 2:
		return lone("a one-node job", nil)
	case s.Port == 0:
		return lone("[watch] port = 0", nil)
	case job.UID < 0:
		return lone("the job's uid is unknown", nil)
	}
	m, err := munge.Open(munge.Config{Socket: s.MungeSocket, Lib: dl.Options{}})
	if err != nil {
		return lone("MUNGE is not available to seal the watchers' messages", err)
	}
	if _, err := m.Encode([]byte("vigil-watch")); err != nil { // munged answers on its socket
		m.Close()
		return lone("MUNGE is not available to seal the watchers' messages", err)
	}
	n := coord.Start(ctx, coord.Config{
		Job: cfg.Job, Restart: cfg.Restart, Self: cfg.Self, Nodes: cfg.Nodes, UID: uint32(job.UID),
		Port: s.JobPort(job.ID), Addrs: o.NodeAddrs, Auth: rendezvous.Munge{Client: m},
		Hang: s.Hang, Takeover: s.TakeoverPeriods, Log: log, Seen: seen,
	})
	return n, func() { n.Close(); m.Close() }
}

// ParseNodeAddrs reads "node=addr,node=addr" (the --node-addrs flag).
func ParseNodeAddrs(v string) (map[string]string, error) {
	if v == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || name == "" || addr == "" {
			return nil, fmt.Errorf("--node-addrs %q: want node=address,...", kv)
		}
		out[name] = addr
	}
	return out, nil
}
