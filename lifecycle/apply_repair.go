package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/internal/osutil"
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/session"
)

// rebooter is the part of slurm.Client that asks for a node's reboot.
type rebooter interface {
	Reboot(ctx context.Context, node string, r slurm.Reboot) error
}

// remedy carries out the plan's remedy once the node is drained: runs the
// reset (and asks for the reboot when it fails and the ladder has one),
// asks Slurm for the reboot, or says the node needs service. What was done
// goes into the report's action and the remedy history; a remedy that
// fails changes neither the drain nor the exit code.
func (r *run) remedy(ctx context.Context, p decide.Plan) {
	m := p.Remedy
	if m == nil {
		return
	}
	rm := r.rep.Action.Remedy
	log := r.log.WithFields(logrus.Fields{"check": m.Entry.Check, "reason": m.Entry.Reason, "gpu": m.Entry.Device,
		"remedy": m.Kind, "attempt": m.Attempt, "max_remedies": r.s.Repair.MaxRemedies})
	switch m.Kind {
	case report.RemedyNeedsService:
		rm.Done = true
		log.Error(r.rep.Node + " needs service: " + m.Note)
		return
	case config.RemedyReset:
		err := r.reset(ctx, m.Argv)
		if err == nil {
			rm.Done = true
			r.remember(m)
			log.WithField("command", strings.Join(m.Argv, " ")).Warn("remedy: device reset; the next run re-tests it before vigil resumes the node")
			return
		}
		rm.Error = err.Error()
		log.WithError(err).Error("remedy: the reset failed")
		if m.Fallback == nil {
			return
		}
		fb := m.Fallback.Report(r.s.Repair, r.o.Now(), r.rep.Node)
		fb.Note = decide.JoinNotes("the reset failed ("+err.Error()+"): reboot instead", fb.Note)
		r.rep.Action.Remedy, rm, m = fb, fb, m.Fallback
	}
	err := r.reboot(ctx, m.Reboot)
	if err != nil {
		rm.Error = err.Error()
		log.WithError(err).Error("remedy: asking Slurm to reboot the node failed")
		return
	}
	rm.Done = true
	r.remember(m)
	log.WithField("nextstate", r.s.Repair.RebootNextState).Warn("remedy: reboot requested (scontrol reboot); the node comes back drained and is re-tested before vigil resumes it")
}

// remember adds a done remedy to the node's history.
func (r *run) remember(m *decide.RemedyPlan) {
	rec := decide.RemedyRecord{At: r.o.Now().UTC(), Kind: m.Kind, Check: m.Entry.Check, Reason: m.Entry.Reason, Device: m.Entry.Device}
	if r.job != nil {
		rec.Job = r.job.ID
	}
	remedies(stateDir(r.o), r.notes, r.log).add(r.rep.Node, rec, r.o.Now(), time.Duration(r.s.Repair.Window))
}

// reset runs the reset command within [repair] reset_timeout and the
// run's budget, in its own process group.
func (r *run) reset(ctx context.Context, argv []string) error {
	cctx, cancel := session.Within(ctx, r.s.Repair.ResetTimeout, r.deadline)
	defer cancel()
	out, err := osutil.Command(cctx, time.Second, argv...).CombinedOutput()
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(string(out))
	if len(msg) > 200 {
		msg = msg[len(msg)-200:]
	}
	if cctx.Err() != nil {
		err = fmt.Errorf("%w after %v", cctx.Err(), r.s.Repair.ResetTimeout)
	}
	if msg != "" {
		return fmt.Errorf("%s: %w: %s", argv[0], err, msg)
	}
	return fmt.Errorf("%s: %w", argv[0], err)
}

// reboot asks Slurm to reboot the node.
func (r *run) reboot(ctx context.Context, req slurm.Reboot) error {
	rb, ok := r.sl.RawClient().(rebooter)
	if !ok {
		return errors.New("the Slurm client cannot ask for reboots")
	}
	cctx, cancel := r.sl.Bound(ctx)
	defer cancel()
	return rb.Reboot(cctx, r.rep.Node, req)
}
