// Package session is a run's one way to Slurm: the scontrol client built
// from [prolog], the logged drains and resumes, each call bounded by the
// run's budget, and the cluster's nodes and Slurm's settings read at most
// once per run. Its errors and notes speak of [prolog] slurm_conf and
// slurm_bin_dir and of the drains vigil could not make; slurm keeps the
// client itself.
package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/notify"
	"github.com/vigil-hpc/vigil/slurm"
)

// Conf returns the slurm.conf that scontrol should read and where that
// came from: SLURM_CONF of the environment when set (slurmd passes its own
// to the Prolog), else [prolog] slurm_conf (HealthCheckProgram runs without
// SLURM_CONF), else "" (Slurm's built-in default).
func Conf(p config.Prolog, lookup func(string) (string, bool)) (path, from string) {
	if v, ok := lookup("SLURM_CONF"); ok && v != "" {
		return v, "SLURM_CONF"
	}
	if p.SlurmConf != "" {
		return p.SlurmConf, "[prolog] slurm_conf"
	}
	return "", ""
}

// NewClient returns the scontrol client of a run: scontrol from
// [prolog] slurm_bin_dir with the [prolog] slurm_timeout, and SLURM_CONF in
// its commands' environment when SlurmConf names a file.
func NewClient(p config.Prolog, lookup func(string) (string, bool)) *slurm.Client {
	c := &slurm.Client{BinDir: p.SlurmBinDir, Timeout: p.SlurmTimeout}
	if conf, _ := Conf(p, lookup); conf != "" {
		c.Env = []string{"SLURM_CONF=" + conf}
	}
	return c
}

// Slurm is the part of slurm.Client a run uses.
type Slurm interface {
	Node(ctx context.Context, name string) (slurm.Node, error)
	Drain(ctx context.Context, node, reason string) error
	Resume(ctx context.Context, node string) (bool, error)
	Requeue(ctx context.Context, id string, hold bool) error
	NodeGresGPUs(ctx context.Context, node string) (int, error)
}

// Access is a run's one way to Slurm, built once the run's settings
// and budget are final: the logged client of the drains and resumes, the
// raw client under it (one per run, so that a slurmctld found unreachable
// once is not tried again by every later call: slurm.Client's latch), the
// bound of each call, the cluster's nodes and Slurm's settings, each read
// at most once. In a dry run Client and FleetClient are nil.
type Access struct {
	prolog config.Prolog
	lookup func(string) (string, bool)
	// given is the caller's client; nil means a slurm.Client built from prolog.
	given Slurm
	// DryRun is set for a run that changes nothing and asks slurmctld nothing.
	DryRun bool
	// Deadline is when the run's budget ends; every call is bounded by it.
	Deadline time.Time
	log      logrus.FieldLogger
	note     func(format string, args ...any)

	raw      Slurm
	cli      Slurm
	conf     map[string]string
	fleetSet bool
	fleet    []slurm.Node
}

// New is the Slurm access of a run: [prolog] p, the run's environment
// lookup, the caller's client (nil: a slurm.Client built from p), whether
// it is a dry run, the budget's deadline, the run's log and the function
// that adds a note to the run's report (formatted as by fmt.Sprintf).
func New(p config.Prolog, lookup func(string) (string, bool), given Slurm, dryRun bool, deadline time.Time, log logrus.FieldLogger, note func(format string, args ...any)) *Access {
	return &Access{prolog: p, lookup: lookup, given: given, DryRun: dryRun, Deadline: deadline, log: log, note: note}
}

// Client returns the logged Slurm client, nil in a dry run. The first call
// checks the slurm.conf scontrol is pointed at.
func (a *Access) Client() Slurm {
	if a.DryRun {
		return nil
	}
	if a.cli == nil {
		cli := a.RawClient()
		if a.given == nil {
			a.checkConf()
		}
		conf, _ := Conf(a.prolog, a.lookup)
		a.cli = logged{Slurm: cli, log: a.log, conf: conf}
	}
	return a.cli
}

// RawClient is the Slurm client without the logging wrapper.
func (a *Access) RawClient() Slurm {
	if a.given != nil {
		return a.given
	}
	if a.raw == nil {
		a.raw = NewClient(a.prolog, a.lookup)
	}
	return a.raw
}

// Bound bounds a Slurm call by [prolog] slurm_timeout and the budget.
func (a *Access) Bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return Within(ctx, a.prolog.SlurmTimeout, a.Deadline)
}

// Within bounds ctx by d, cut to what is left before deadline (at least a
// second).
func Within(ctx context.Context, d time.Duration, deadline time.Time) (context.Context, context.CancelFunc) {
	if left := time.Until(deadline); left < d {
		d = max(left, time.Second)
	}
	return context.WithTimeout(ctx, d)
}

// checkConf notes and logs at error level a slurm.conf that scontrol
// cannot read: every drain and resume of the run would fail.
func (a *Access) checkConf() {
	conf, from := Conf(a.prolog, a.lookup)
	if conf == "" {
		return
	}
	if _, err := os.Stat(conf); err != nil {
		a.note("slurm.conf from %s: %v: scontrol will fail, so vigil can neither drain nor resume this node; set [prolog] slurm_conf to the cluster's slurm.conf", from, err)
		a.log.WithError(err).WithField("slurm_conf", conf).Error("slurm.conf not readable (from " + from + "): vigil can neither drain nor resume this node; set [prolog] slurm_conf to the cluster's slurm.conf")
	}
}

// Fleet is the part of slurm.Client the guard and the notifications
// use beyond Slurm.
type Fleet interface {
	Nodes(ctx context.Context) ([]slurm.Node, error)
	SetNodeComment(ctx context.Context, node, comment string) error
	Config(ctx context.Context) (map[string]string, error)
}

// FleetClient is the fleet-wide Slurm client: nil in a dry run, and for a
// given client that has no fleet calls.
func (a *Access) FleetClient() Fleet {
	if a.DryRun {
		return nil
	}
	f, _ := a.RawClient().(Fleet)
	return f
}

// ReadFleet reads every node once per run (nil in a dry run, without the
// scontrol calls, or when scontrol failed: then the guard does not act and
// notifications are not rate limited).
func (a *Access) ReadFleet(ctx context.Context) []slurm.Node {
	if a.fleetSet {
		return a.fleet
	}
	a.fleetSet = true
	cli := a.FleetClient()
	if cli == nil {
		return nil
	}
	cctx, cancel := a.Bound(ctx)
	defer cancel()
	fleet, err := cli.Nodes(cctx)
	if err != nil {
		a.note("reading the cluster's nodes: %v: the guard did not act and notifications are not rate limited", err)
		hint := "check [prolog] slurm_bin_dir and slurm_conf"
		if slurm.ControllerDown(err) {
			hint = "slurmctld cannot be reached"
		}
		a.log.WithError(err).Error("reading the cluster's nodes with scontrol: the guard ([guard]) cannot act this run; " + hint)
		return nil
	}
	a.fleet = fleet
	return fleet
}

// FleetRead is what ReadFleet read: nil before it, in a dry run, or when
// scontrol failed.
func (a *Access) FleetRead() []slurm.Node { return a.fleet }

// Settings reads slurm.conf as scontrol would find it (no slurmctld
// query); only when that file cannot be read does it ask slurmctld
// (`scontrol show config`), e.g. on a configless site. Read once per run.
func (a *Access) Settings(ctx context.Context) map[string]string {
	if a.conf != nil {
		return a.conf
	}
	path, _ := Conf(a.prolog, a.lookup)
	if path == "" {
		path = "/etc/slurm/slurm.conf"
	}
	conf, err := slurm.ReadConfFile(path)
	if err != nil {
		a.note("reading %s: %v; asking slurmctld", path, err)
		conf = map[string]string{}
		if cr, ok := a.RawClient().(configReader); ok {
			cctx, cancel := a.Bound(ctx)
			defer cancel()
			if c, err := cr.Config(cctx); err == nil {
				conf = c
			} else {
				a.log.WithError(err).Warn("could not read Slurm's settings from slurm.conf or slurmctld")
			}
		}
	}
	a.conf = conf
	return conf
}

// RebootProgram is slurm.conf's RebootProgram ("" when none) and whether
// Slurm's settings could be read. A dry run reads slurm.conf only, never
// slurmctld.
func (a *Access) RebootProgram(ctx context.Context) (string, bool) {
	var conf map[string]string
	if a.DryRun {
		path, _ := Conf(a.prolog, a.lookup)
		if path == "" {
			path = "/etc/slurm/slurm.conf"
		}
		c, err := slurm.ReadConfFile(path)
		if err != nil {
			return "", false
		}
		conf = c
	} else if conf = a.Settings(ctx); len(conf) == 0 {
		return "", false
	}
	p, _ := slurm.RebootProgram(conf)
	return p, true
}

// configReader reads `scontrol show config`.
type configReader interface {
	Config(ctx context.Context) (map[string]string, error)
}

// MailProg is Slurm's MailProg (settings), else notify.DefaultMailProg.
func (a *Access) MailProg(ctx context.Context) string {
	if p, ok := slurm.MailProg(a.Settings(ctx)); ok {
		return p
	}
	return notify.DefaultMailProg
}

// nodeAddresser is the part of slurm.Client that reads the job's node
// addresses in one call.
type nodeAddresser interface {
	NodeAddrs(ctx context.Context, nodes []string) (map[string]string, error)
}

// NodeAddrs reads the job's node addresses with one scontrol call.
func (a *Access) NodeAddrs(ctx context.Context, nodes []string) (map[string]string, error) {
	na, ok := a.RawClient().(nodeAddresser)
	if !ok {
		return nil, fmt.Errorf("the Slurm client cannot read node addresses")
	}
	cctx, cancel := a.Bound(ctx)
	defer cancel()
	addrs, err := na.NodeAddrs(cctx, nodes)
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

// logged logs every scontrol command that fails at error level, with
// the slurm.conf it was pointed at: a failing scontrol means vigil cannot
// drain or resume, which an admin has to see in slurmd's log.
type logged struct {
	Slurm
	log  logrus.FieldLogger
	conf string // slurm.conf passed to scontrol, "" for Slurm's default
}

func (l logged) failed(err error, what string) {
	if slurm.ControllerDown(err) {
		l.log.WithError(err).Error("scontrol failed " + what + ": slurmctld cannot be reached (\"Unable to contact slurm controller\", or no answer within [prolog] slurm_timeout); " +
			"later scontrol calls of this run are not tried. If this prolog fails, Slurm drains the node with \"Prolog error\"; " +
			"vigil remembers its failed drain and lifts that drain on the node's next passing run")
		return
	}
	var ce *slurm.CommandError
	if !errors.As(err, &ce) {
		return // not a failing command: a foreign drain, an unknown node
	}
	conf := l.conf
	if conf == "" {
		conf = "Slurm's default (no SLURM_CONF, no [prolog] slurm_conf)"
	}
	l.log.WithError(err).WithField("slurm_conf", conf).Error("scontrol failed " + what + ": check [prolog] slurm_bin_dir and slurm_conf")
}

func (l logged) Node(ctx context.Context, name string) (slurm.Node, error) {
	n, err := l.Slurm.Node(ctx, name)
	l.failed(err, "reading the node")
	return n, err
}

func (l logged) Drain(ctx context.Context, node, reason string) error {
	err := l.Slurm.Drain(ctx, node, reason)
	l.failed(err, "draining the node")
	return err
}

func (l logged) Resume(ctx context.Context, node string) (bool, error) {
	ok, err := l.Slurm.Resume(ctx, node)
	l.failed(err, "resuming the node")
	return ok, err
}

func (l logged) Requeue(ctx context.Context, id string, hold bool) error {
	err := l.Slurm.Requeue(ctx, id, hold)
	l.failed(err, "requeueing the job")
	return err
}

func (l logged) NodeGresGPUs(ctx context.Context, node string) (int, error) {
	n, err := l.Slurm.NodeGresGPUs(ctx, node)
	l.failed(err, "reading the node's GPU gres")
	return n, err
}
