package coord

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/rendezvous"
)

// The job's meeting is on the first of the job's candidate ports
// (Config.Ports, watchcfg.Settings.JobPorts) that the coordinator can
// bind. The watchers run as the job's user, so the ports are 1024 or
// above, and any user on the coordinator's node can bind one first.
//
// The coordinator skips a candidate another process holds. A member looks
// for the coordinator on every candidate at once: only the job's
// coordinator can answer its hello with a roster sealed by MUNGE for the
// job's uid and this job, so whatever else answers on a candidate (a
// forged roster, garbage, another job's coordinator) is rejected, and the
// member meets the coordinator on the next candidate. The candidates
// cannot be tried one after the other: the roster comes only once the
// job's nodes have joined, so a squatter that accepts and says nothing
// looks, to a member, like a coordinator still waiting for the others.
// A squatter costs at most a meeting: with every candidate held, the
// watchers act for their own nodes and the log says why; it never makes a
// digest.

// errNoPorts is a meeting without candidate ports.
var errNoPorts = errors.New("no port for the job's meeting")

// meetOn holds one meeting of cfg's nodes on the job's candidate ports:
// the coordinator leads it on the first free one, a member joins it on
// whichever candidate answers with the job's sealed roster.
func (n *Node) meetOn(ctx context.Context, cfg rendezvous.Config) (*rendezvous.Session, error) {
	if len(n.cfg.Ports) == 0 {
		return nil, errNoPorts
	}
	if rendezvous.Coordinator(cfg.Nodes) == n.cfg.Self {
		return n.leadOn(ctx, cfg)
	}
	return n.joinOn(ctx, cfg)
}

// leadOn is the coordinator's meeting on the first candidate port no
// other process holds.
func (n *Node) leadOn(ctx context.Context, cfg rendezvous.Config) (*rendezvous.Session, error) {
	var held []string
	for _, p := range n.cfg.Ports {
		cfg.Port = p
		cfg.Log = n.log.WithField("port", p)
		s, err := rendezvous.Meet(ctx, cfg)
		if err == nil {
			if len(held) > 0 {
				n.log.WithFields(logrus.Fields{"port": p, "held": strings.Join(held, ",")}).
					Warn("the job's meeting is on a later candidate port: other processes hold the earlier ones")
			}
			return s, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, err
		}
		held = append(held, strconv.Itoa(p))
		n.log.WithError(err).WithField("port", p).
			Warn("another process holds a candidate port of the job's meeting; trying the next")
	}
	return nil, fmt.Errorf("unknown: other processes hold every candidate port of the job's meeting (%s): "+
		"free one, or set [watch] port to another base", strings.Join(held, ", "))
}

type portResult struct {
	i   int
	s   *rendezvous.Session
	err error
}

// joinOn is a member's meeting: a join on every candidate port at once.
// The first session with the job's roster wins; an error that is not
// the coordinator's absence or loss (the node came late) ends the
// meeting too. The other joins are cancelled, and their sessions closed
// as they end.
func (n *Node) joinOn(ctx context.Context, cfg rendezvous.Config) (*rendezvous.Session, error) {
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ports := n.cfg.Ports
	results := make(chan portResult, len(ports))
	for i, p := range ports {
		c := cfg
		c.Port = p
		c.Log = n.log.WithField("port", p)
		go func() {
			s, err := rendezvous.Meet(jctx, c)
			results <- portResult{i: i, s: s, err: err}
		}()
	}
	errs := make([]error, len(ports))
	var ce *rendezvous.CoordinatorError
	for k := range ports {
		r := <-results
		if r.err != nil && errors.As(r.err, &ce) {
			errs[r.i] = r.err
			continue
		}
		go closeRest(results, len(ports)-k-1)
		return r.s, r.err
	}
	return nil, &portsError{ports: ports, errs: errs}
}

// closeRest closes the sessions of the joins still to end.
func closeRest(results <-chan portResult, left int) {
	for range left {
		if r := <-results; r.s != nil {
			r.s.Close()
		}
	}
}

// portsError is a member's meeting that met no coordinator on any of the
// job's candidate ports. It matches rendezvous.ErrCoordinatorAbsent when
// the coordinator was not reached on some port, and ErrCoordinatorLost
// when something answered on a port without the job's sealed roster.
type portsError struct {
	ports []int
	errs  []error
}

func (e *portsError) Error() string {
	var b strings.Builder
	b.WriteString("unknown: the job's coordinator answered on none of the job's ports")
	for i, err := range e.errs {
		msg := strings.TrimPrefix(err.Error(), "unknown: ")
		if errors.Is(err, rendezvous.ErrCoordinatorLost) {
			msg = "answered without the job's sealed roster (another process may hold the port): " + msg
		}
		fmt.Fprintf(&b, "; port %d: %s", e.ports[i], msg)
	}
	return b.String()
}

// Unwrap returns each port's error.
func (e *portsError) Unwrap() []error { return e.errs }
