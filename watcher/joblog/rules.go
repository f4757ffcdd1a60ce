package joblog

import (
	_ "embed"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/BurntSushi/toml"

	"github.com/vigil-hpc/vigil/internal/linerules"
)

// Kinds of lines the shipped rules name, beside those of match.go.
const (
	// KindOOMKill: the kernel's OOM killer killed a process of the host.
	KindOOMKill Kind = "oom-kill"
	// KindHungTask: the kernel reports a task blocked for minutes (I/O).
	KindHungTask Kind = "hung-task"
	// KindNFS: an NFS server stopped answering the host.
	KindNFS Kind = "nfs"
	// KindPeerClosed: a rank's connection to a peer (Peer: its address)
	// was closed or reset by the other end, as gloo says when the peer's
	// process is gone: evidence that the peer left first.
	KindPeerClosed Kind = "peer-closed"
	// KindMismatch: ranks disagree on a collective or did not reach it
	// (PyTorch's "Detected mismatch between collectives", "Ranks 1, 2
	// failed to pass monitoredBarrier", NCCL's "Mismatched collective
	// detected", Horovod's "[missing ranks: 0]"); Ranks are the ranks the
	// line names as the odd ones out.
	KindMismatch Kind = "collective-mismatch"
	// KindHostBanner: a launcher's line that names the host (Peer) of the
	// line it prints next (MPICH Hydra's "=   PID P RUNNING AT HOST" before
	// "=   EXIT CODE: 9"): no evidence by itself, it only places that line.
	KindHostBanner Kind = "host-banner"
	// KindRendezvous: a rank could not reach the job's rendezvous (the
	// TCPStore at MASTER_ADDR:MASTER_PORT) to meet its peers: the job
	// never started; its exit follows from that, and no line of it shows
	// whose fault it is (a wrong address, the master gone, a route).
	KindRendezvous Kind = "rendezvous"
)

// RuleKinds are the evidence kinds a line rule may name (linerules.Kinds:
// a test keeps it equal to this package's kinds).
func RuleKinds() []string { return linerules.Kinds }

//go:embed rules.toml
var shippedRules string

// shippedSpec is a rule of rules.toml: a linerules.Spec and its origin,
// the emitter's source file and line (or its official documentation)
// that prints the wording.
type shippedSpec struct {
	linerules.Spec
	Origin string `toml:"origin"`
}

var (
	shippedOnce sync.Once
	shipped     linerules.Set
	origins     map[string]string // rule name -> origin
	shippedErr  error
	// active are the rules Line uses: the shipped ones, overridden by the
	// site's (SetSiteRules) once the program has read its config.
	active atomic.Pointer[linerules.Set]
)

// ShippedRules are the rules of rules.toml, compiled.
func ShippedRules() (linerules.Set, error) {
	shippedOnce.Do(func() {
		var f struct {
			Rule []shippedSpec `toml:"rule"`
		}
		md, err := toml.Decode(shippedRules, &f)
		if err == nil && len(md.Undecoded()) > 0 {
			err = fmt.Errorf("unknown keys %v", md.Undecoded())
		}
		if err == nil {
			specs := make([]linerules.Spec, 0, len(f.Rule))
			origins = map[string]string{}
			for _, r := range f.Rule {
				specs = append(specs, r.Spec)
				origins[r.Name] = r.Origin
			}
			shipped, err = linerules.Compile(specs, RuleKinds())
		}
		if err != nil {
			shippedErr = fmt.Errorf("joblog: the shipped rules.toml: %w", err)
		}
	})
	return shipped, shippedErr
}

// RuleOrigin is where the wording of the shipped rule name comes from:
// the emitter's source file and line, or its documentation ("" for a rule
// without one, or a site's rule).
func RuleOrigin(name string) string {
	if _, err := ShippedRules(); err != nil {
		return ""
	}
	return origins[name]
}

// SetSiteRules makes Line use the shipped rules overridden by site's (a
// site rule of a shipped rule's name replaces it; the others come first).
// Programs call it once, after reading [[watch.rules]], before matching.
func SetSiteRules(site linerules.Set) {
	s, _ := ShippedRules()
	all := s.Override(site)
	active.Store(&all)
}

// ActiveRules are the rules in force (ShippedRules, overridden by the
// site's after SetSiteRules).
func ActiveRules() linerules.Set { return rules() }

// rules are the rules in force.
func rules() linerules.Set {
	if r := active.Load(); r != nil {
		return *r
	}
	s, _ := ShippedRules()
	return s
}

// byRule applies the first rule that matches line, if any: ok reports a
// match, keep whether the line is evidence (false for a rule of kind
// ignore).
func byRule(line, stream string, m *Match) (ok, keep bool) {
	s := linerules.StreamOutput
	if stream == "kmsg" {
		s = linerules.StreamKmsg
	}
	r, peer, found := rules().Match(line, s)
	if !found {
		return false, false
	}
	if r.Kind == linerules.KindIgnore {
		return true, false
	}
	m.Kind, m.Fault, m.Peer = Kind(r.Kind), r.Fault, peer
	m.Rule = r.Name
	if m.Kind == KindMismatch {
		m.Ranks, m.Ready, m.Stuck = accusedRanks(line), readyRanks(line), reStuck.MatchString(line)
	}
	m.GDR = m.Kind == KindNCCLNet && (strings.Contains(line, "GDR") || containsFold(line, "GPUDirect"))
	if m.Kind == KindNCCLNet {
		m.Status = int(num(reStatus, line, 1<<16))
		m.PortDown, m.Socket = rePortDown.MatchString(line), reSocket.MatchString(line)
	}
	return true, true
}
