package loop

import (
	"context"
	"errors"
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
// lone view of this node, and the log says why: at info level where the
// site or the job chose it (one node, port 0), as a warning where the
// meeting was wanted and failed (no addresses, no MUNGE).
// The job's nodes are met at the addresses Slurm has for them (NodeAddr,
// as the prolog meets them), and MUNGE at [watch] munge_socket, else
// slurm.conf's AuthInfo socket=, else libmunge's default.
// On the coordinator, seen is given every host's readings (coord.Config.Seen).
//
// logs are the job's output this watcher follows: where it follows the
// output (the batch host), acting alone, it announces the digest of a
// failed job, which the job's own words make; where the watchers meet,
// the step's layout record carries the nodes' addresses (a line naming a
// peer by address names a node) and the job's rank map.
func jobView(ctx context.Context, o Options, s Settings, job *slurm.Job, logs *JobLogs, seen func(trace.Sample, []hang.Event), log logrus.FieldLogger) (JobView, func()) {
	readsOutput := logs.FollowsOutput()
	lone := func(why string, err error) (JobView, func()) {
		l := log.WithField("why", why)
		if err != nil {
			l.WithError(err).Warn("the job's watchers cannot meet: this watcher acts for its own node alone (no coordinator, no digest)")
		} else {
			l.Info("this watcher acts for its own node alone (no coordinator)")
		}
		v := coord.NewLone(s.Hang)
		v.AnnounceFailures = readsOutput
		if logs != nil {
			logs.Ranks = v.Ranks // the layout record's rank map: this node's
		}
		return v, func() {}
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
		return lone("the job's uid is unknown", errors.New("SLURM_JOB_UID is not set"))
	}
	addrs, err := meetingAddrs(ctx, o, s, cfg.Nodes)
	if err != nil {
		return lone("the job's node addresses are unknown", err)
	}
	socket := mungeSocket(ctx, o, s, log)
	m, err := munge.Open(munge.Config{Socket: socket, Lib: dl.Options{}})
	if err == nil {
		if _, err = m.Encode([]byte("vigil-watch")); err != nil { // munged answers on its socket
			m.Close()
		}
	}
	if err != nil {
		return lone("MUNGE is not available to seal the watchers' messages", fmt.Errorf("munge socket %q: %w", socket, err))
	}
	n := coord.Start(ctx, coord.Config{
		Job: cfg.Job, Restart: cfg.Restart, Self: cfg.Self, Nodes: cfg.Nodes, UID: uint32(job.UID),
		Ports: s.JobPorts(job.ID), Addrs: addrs, Auth: rendezvous.Munge{Client: m},
		Hang: s.Hang, Takeover: s.TakeoverPeriods, Log: log, Seen: seen, AnnounceFailures: readsOutput,
	})
	if logs != nil {
		logs.Layout.Addrs = addrs
		logs.Ranks = n.Ranks // the job's rank map, as the coordinator gathers it
	}
	return n, func() { n.Close(); m.Close() }
}

// meetingAddrs is the job's nodes' addresses: --node-addrs where given,
// else Slurm's NodeAddr of each node (one scontrol show node call), as the
// prolog meets them; names need not resolve.
func meetingAddrs(ctx context.Context, o Options, s Settings, nodes []string) (map[string]string, error) {
	if o.NodeAddrs != nil {
		return o.NodeAddrs, nil
	}
	addrs, err := slurmClient(o, s).NodeAddrs(ctx, nodes)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if addrs[n] == "" {
			return nil, fmt.Errorf("no address for %s in scontrol's answer", n)
		}
	}
	return addrs, nil
}

// mungeSocket is [watch] munge_socket, else the socket= of slurm.conf's
// AuthInfo (the file SLURM_CONF names, else /etc/slurm/slurm.conf; where it
// cannot be read, scontrol show config), else "" (libmunge's default).
func mungeSocket(ctx context.Context, o Options, s Settings, log logrus.FieldLogger) string {
	if s.MungeSocket != "" {
		return s.MungeSocket
	}
	path, ok := o.lookup()("SLURM_CONF")
	if !ok || path == "" {
		path = DefaultSlurmConf
	}
	conf, err := slurm.ReadConfFile(path)
	if err != nil {
		if conf, err = slurmClient(o, s).Config(ctx); err != nil {
			log.WithError(err).Debug("could not read Slurm's AuthInfo; using libmunge's default socket")
			return ""
		}
	}
	info, _ := slurm.ConfValue(conf, "AuthInfo")
	return slurm.AuthSocket(info)
}

// DefaultSlurmConf is where slurm.conf is when SLURM_CONF does not say.
const DefaultSlurmConf = "/etc/slurm/slurm.conf"

// ParseNodeAddrs reads "node=addr,node=addr" (the --node-addrs flag).
func ParseNodeAddrs(v string) (map[string]string, error) {
	if v == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(v, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || name == "" || addr == "" {
			return nil, fmt.Errorf("--node-addrs %q: want node=address, comma-separated", kv)
		}
		out[name] = addr
	}
	return out, nil
}
