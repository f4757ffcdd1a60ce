package coord

import (
	"bufio"
	"context"
	"fmt"
	"github.com/vigil-hpc/vigil/internal/ostest"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/config/watchcfg"
	"github.com/vigil-hpc/vigil/rendezvous"
	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

// squatEnv makes the test binary a squatter: it listens on the addresses
// the variable lists (comma-separated host:port), prints "ready", and
// serves until its stdin ends. squatModeEnv "forge" answers every hello
// with a roster sealed by the squatter's own uid; "silent" accepts and
// says nothing.
const (
	squatEnv     = "VIGIL_TEST_SQUAT_ADDRS"
	squatModeEnv = "VIGIL_TEST_SQUAT_MODE"
)

// squatKey is the test cluster's MUNGE key (rdvtest's stand-in): the
// squatter's seals are genuine, of its own uid.
var squatKey = []byte("the cluster's key")

// TestSquatterProcess is the squatter's body when squatEnv is set;
// otherwise it does nothing.
func TestSquatterProcess(t *testing.T) {
	addrs := os.Getenv(squatEnv)
	if addrs == "" {
		return
	}
	user := rdvtest.New(squatKey, uint32(os.Getuid()))
	for _, a := range strings.Split(addrs, ",") {
		ln, err := net.Listen("tcp", a)
		if err != nil {
			fmt.Println("listen:", err)
			return
		}
		go squat(ln, os.Getenv(squatModeEnv) == "forge", user)
	}
	fmt.Println("ready")
	bufio.NewScanner(os.Stdin).Scan()
}

// squat serves a squatter's listener: a forged roster for every hello,
// or silence.
func squat(ln net.Listener, forge bool, user *rdvtest.HMAC) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !forge {
			continue // held open, never answered
		}
		go func() {
			defer c.Close()
			body, err := rendezvous.ReadFrame(c, rendezvous.MaxHello)
			if err != nil {
				return
			}
			in, err := rendezvous.Decode(body)
			if err != nil {
				return
			}
			e := &rendezvous.Envelope{Kind: rendezvous.KindRoster, Job: in.Job, Restart: in.Restart, From: in.To,
				To: in.From, Label: in.Label, Payload: []byte("a roster of the squatter's choosing")}
			e.Token, _ = user.Seal(e.Binding())
			if f, err := e.Frame(); err == nil {
				c.Write(f)
			}
		}()
	}
}

// startSquatter runs the squatter as nobody (uid 65534), a real process
// of another user, on addrs; it is stopped at the test's end.
func startSquatter(t *testing.T, mode string, addrs []string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("starting a process of another uid needs root")
	}
	cmd := ostest.AsNobody(t, "TestSquatterProcess", squatEnv+"="+strings.Join(addrs, ","), squatModeEnv+"="+mode)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the squatter as nobody: %v", err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatalf("the squatter did not take %v: %q", addrs, sc.Text())
	}
}

// startOn starts the watchers of job 42 on names, meeting on ports, and
// returns them with their log.
// squatJoin is the meeting's deadline in these tests: the members try
// every candidate port of the squatted node, reject what answers there,
// and meet on the next node's within it, on a loaded 2-core machine too.
const squatJoin = 6 * time.Second

func startOn(t *testing.T, names []string, addrs map[string]string, ports []int) ([]*Node, *test.Hook) {
	logger, hook := test.NewNullLogger()
	nodes := make([]*Node, len(names))
	var wg sync.WaitGroup
	for i := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i] = Start(context.Background(), Config{Job: "42", Self: names[i], Nodes: names, UID: 1000, Ports: ports,
				Addrs: addrs, Auth: rdvtest.New(squatKey, 1000), Hang: testHang(), Join: squatJoin,
				Log: logger.WithField("node", names[i])})
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, n := range nodes {
			n.Close()
		}
	})
	return nodes, hook
}

func logText(h *test.Hook) string {
	var b strings.Builder
	for _, e := range h.AllEntries() {
		b.WriteString(e.Message)
		for k, v := range e.Data {
			fmt.Fprintf(&b, " %s=%v", k, v)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// A process of another user (nobody) holds the first of job 42's ports on
// the coordinator's node, answering with a forged roster or not at all.
// The job's watchers still meet, on the next port, and the hang's digest
// is the job's own, announced once.
func TestSquatterOnTheFirstPortDoesNotStopTheMeeting(t *testing.T) {
	if testing.Short() {
		t.Skip("meets watchers over loopback")
	}
	ports := watchcfg.Default().JobPorts("42")
	for _, mode := range []string{"forge", "silent"} {
		t.Run(mode, func(t *testing.T) {
			names, addrs := rdvtest.Cluster(3)
			startSquatter(t, mode, []string{net.JoinHostPort(addrs[names[0]], strconv.Itoa(ports[0]))})
			nodes, hook := startOn(t, names, addrs, ports)
			if !nodes[0].Coordinator() {
				t.Fatalf("%s does not coordinate; log:\n%s", names[0], logText(hook))
			}
			for _, n := range nodes[1:] {
				if !n.Coordinated() || n.Coordinator() {
					t.Fatalf("%s: coordinated %v, coordinator %v; log:\n%s", n.cfg.Self, n.Coordinated(), n.Coordinator(), logText(hook))
				}
			}
			log := logText(hook)
			if !strings.Contains(log, "another process holds a candidate port of the job's meeting") ||
				!strings.Contains(log, "port="+strconv.Itoa(ports[0])) {
				t.Errorf("the log does not say port %d is held:\n%s", ports[0], log)
			}
			s := &sim{t: t, names: names, nodes: nodes, hook: hook}
			live := []int{0, 1, 2}
			var all []Out
			for k := range 9 {
				all = append(all, s.period(k, live, func(i int) hostState {
					st := hostState{procs: 4}
					if i == 2 && k >= 3 {
						st.procs = 0
					}
					if k >= 4 {
						st.event = hang.EventHung
					}
					return st
				})...)
			}
			all = append(all, s.settle(live)...)
			n, r := digests(all)
			if len(n) != 1 || n[0].Cause != digest.CauseRankFailed || n[0].Culprits[0].Host != names[2] || len(r) != 2 {
				t.Fatalf("announced %+v, recorded %d; want one rank-failed digest naming %s, recorded by both members", n, len(r), names[2])
			}
		})
	}
}

// Every port of job 42 is held on the first node by another user's
// process: that node's watcher acts for its own node and its log says
// why; the others meet without it, on the next node's ports.
func TestSquatterOnEveryPortLeavesTheNodeAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("meets watchers over loopback")
	}
	ports := watchcfg.Default().JobPorts("42")
	names, addrs := rdvtest.Cluster(3)
	var held []string
	for _, p := range ports {
		held = append(held, net.JoinHostPort(addrs[names[0]], strconv.Itoa(p)))
	}
	startSquatter(t, "forge", held)
	nodes, hook := startOn(t, names, addrs, ports)
	log := logText(hook)
	if nodes[0].Coordinated() {
		t.Fatalf("%s meets with all its ports held; log:\n%s", names[0], log)
	}
	if !strings.Contains(log, "other processes hold every candidate port of the job's meeting") {
		t.Errorf("the log does not say why %s acts alone:\n%s", names[0], log)
	}
	if !nodes[1].Coordinator() || !nodes[2].Coordinated() || nodes[2].Coordinator() {
		t.Errorf("%s and %s did not meet without %s; log:\n%s", names[1], names[2], names[0], log)
	}
	if !strings.Contains(log, "sealed by uid 65534") {
		t.Errorf("no member rejected the squatter's roster for its uid:\n%s", log)
	}
}
