package slurmtest

import (
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
)

// The TCP port bands of the e2e harnesses, each below the kernel's
// ephemeral range (32768 and up: outgoing connections and listeners on
// port 0, gloo's among them, never take a port from them) and apart from
// one another, so that tests running side by side never draw the same
// port. A port is drawn free at the time and used minutes later, when a
// job starts: only a band of its own keeps it free meanwhile.
//
//	10000-11999  MeetingPorts: the prolog's cross-node meetings
//	12000-19999  JobPorts: the real PyTorch jobs' TCPStore
//	20000-31999  the clusters' daemons (reservePorts), but 29000-29999:
//	             vigil-watch's meetings listen there by default
var (
	MeetingPorts = PortBand{Lo: 10000, Hi: 12000, What: "the prolog's cross-node meeting"}
	JobPorts     = PortBand{Lo: 12000, Hi: 20000, What: "a job's TCPStore"}
	daemonPorts  = PortBand{Lo: 20000, Hi: 32000, What: "a cluster's daemons"}
	watchPorts   = PortBand{Lo: 29000, Hi: 30000, What: "vigil-watch's default meetings"}
)

// PortBand is a band of TCP ports [Lo, Hi) for one use (What).
type PortBand struct {
	Lo, Hi int
	What   string
}

// givenPorts are the ports FreePort gave in this test binary.
var givenPorts = struct {
	sync.Mutex
	used map[int]bool
}{used: map[int]bool{}}

// FreePort returns a port of band b, at random, free right now (a listener
// on every address could bind it) and never given before in this test
// binary; it fails t when none is found.
func FreePort(t testing.TB, b PortBand) int {
	t.Helper()
	givenPorts.Lock()
	defer givenPorts.Unlock()
	for range 1000 {
		p := b.Lo + rand.IntN(b.Hi-b.Lo)
		if givenPorts.used[p] {
			continue
		}
		l, err := net.Listen("tcp", ":"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		l.Close()
		givenPorts.used[p] = true
		return p
	}
	t.Fatalf("no free TCP port for %s in %d-%d", b.What, b.Lo, b.Hi-1)
	return 0
}
