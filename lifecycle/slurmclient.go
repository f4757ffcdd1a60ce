package lifecycle

import (
	"context"
	"errors"
	"os"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/slurm"
)

// SlurmConf returns the slurm.conf that scontrol should read and where that
// came from: SLURM_CONF of the environment when set (slurmd passes its own
// to the Prolog), else [prolog] slurm_conf (HealthCheckProgram runs without
// SLURM_CONF), else "" (Slurm's built-in default).
func SlurmConf(p config.Prolog, lookup func(string) (string, bool)) (path, from string) {
	if v, ok := lookup("SLURM_CONF"); ok && v != "" {
		return v, "SLURM_CONF"
	}
	if p.SlurmConf != "" {
		return p.SlurmConf, "[prolog] slurm_conf"
	}
	return "", ""
}

// NewSlurmClient returns the scontrol client of a run: scontrol from
// [prolog] slurm_bin_dir with the [prolog] slurm_timeout, and SLURM_CONF in
// its commands' environment when SlurmConf names a file.
func NewSlurmClient(p config.Prolog, lookup func(string) (string, bool)) *slurm.Client {
	c := &slurm.Client{BinDir: p.SlurmBinDir, Timeout: p.SlurmTimeout}
	if conf, _ := SlurmConf(p, lookup); conf != "" {
		c.Env = []string{"SLURM_CONF=" + conf}
	}
	return c
}

// checkSlurmConf notes and logs at error level a slurm.conf that scontrol
// cannot read: every drain and resume of the run would fail.
func (r *run) checkSlurmConf() {
	conf, from := SlurmConf(r.s.Prolog, r.o.Lookup)
	if conf == "" {
		return
	}
	if _, err := os.Stat(conf); err != nil {
		r.note("slurm.conf from %s: %v: scontrol will fail, so vigil can neither drain nor resume this node; set [prolog] slurm_conf to the cluster's slurm.conf", from, err)
		r.log.WithError(err).WithField("slurm_conf", conf).Error("slurm.conf not readable (from " + from + "): vigil can neither drain nor resume this node; set [prolog] slurm_conf to the cluster's slurm.conf")
	}
}

// loggedSlurm logs every scontrol command that fails at error level, with
// the slurm.conf it was pointed at: a failing scontrol means vigil cannot
// drain or resume, which an admin has to see in slurmd's log.
type loggedSlurm struct {
	Slurm
	log  logrus.FieldLogger
	conf string // slurm.conf passed to scontrol, "" for Slurm's default
}

func (l loggedSlurm) failed(err error, what string) {
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

func (l loggedSlurm) Node(ctx context.Context, name string) (slurm.Node, error) {
	n, err := l.Slurm.Node(ctx, name)
	l.failed(err, "reading the node")
	return n, err
}

func (l loggedSlurm) Drain(ctx context.Context, node, reason string) error {
	err := l.Slurm.Drain(ctx, node, reason)
	l.failed(err, "draining the node")
	return err
}

func (l loggedSlurm) Resume(ctx context.Context, node string) (bool, error) {
	ok, err := l.Slurm.Resume(ctx, node)
	l.failed(err, "resuming the node")
	return ok, err
}

func (l loggedSlurm) Requeue(ctx context.Context, id string, hold bool) error {
	err := l.Slurm.Requeue(ctx, id, hold)
	l.failed(err, "requeueing the job")
	return err
}

func (l loggedSlurm) NodeGresGPUs(ctx context.Context, node string) (int, error) {
	n, err := l.Slurm.NodeGresGPUs(ctx, node)
	l.failed(err, "reading the node's GPU gres")
	return n, err
}
