package crossnet

import (
	"bufio"
	"context"
	"fmt"
	"github.com/vigil-hpc/vigil/internal/ostest"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/crossnet/judge"
	"github.com/vigil-hpc/vigil/rendezvous"
	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
)

// floodEnv makes the test binary a flooder: it reads "SRC N" lines on
// stdin, opens N connections from address SRC to the address in the
// variable, holds them silently, and answers "ok" once they are open.
const floodEnv = "VIGIL_TEST_FLOOD_TARGET"

// TestFlooder is the flooder's body when floodEnv is set; otherwise it
// does nothing.
func TestFlooder(t *testing.T) {
	target := os.Getenv(floodEnv)
	if target == "" {
		return
	}
	var held []net.Conn
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var src string
		var n int
		if _, err := fmt.Sscan(in.Text(), &src, &n); err != nil {
			fmt.Println("bad command:", err)
			continue
		}
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 2 * time.Second}
		opened := 0
		for range n {
			if c, err := d.Dial("tcp", target); err == nil {
				held = append(held, c)
				opened++
			}
		}
		fmt.Println("ok", opened, os.Getuid())
	}
	for _, c := range held {
		c.Close()
	}
}

// flooder runs this test binary as nobody (a process of another user than
// the prologs' root), flooding target.
type flooder struct {
	in  io.WriteCloser
	out *bufio.Scanner
	cmd *exec.Cmd
}

func startFlooder(t *testing.T, target string) *flooder {
	t.Helper()
	cmd := ostest.AsNobody(t, "TestFlooder", floodEnv+"="+target)
	f := &flooder{cmd: cmd}
	var err error
	if f.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	f.out = bufio.NewScanner(out)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the flooder as nobody: %v", err)
	}
	t.Cleanup(func() { f.in.Close(); cmd.Wait() })
	return f
}

// open has the flooder open n connections from src and waits until it
// has.
func (f *flooder) open(t *testing.T, src string, n int) {
	t.Helper()
	fmt.Fprintln(f.in, src, n)
	if !f.out.Scan() {
		t.Fatalf("the flooder stopped: %v", f.out.Err())
	}
	if got := f.out.Text(); got != fmt.Sprintf("ok %d 65534", n) {
		t.Fatalf("flooder: %q, want %d connections opened by uid 65534", got, n)
	}
}

// testEndpoint serves an endpoint of node n1 of job 77 on n1's address.
func testEndpoint(t *testing.T) (*endpoint, string, map[string]string) {
	t.Helper()
	names, addrs := rdvtest.Cluster(3)
	ln, err := net.Listen("tcp", net.JoinHostPort(addrs[names[0]], "0"))
	if err != nil {
		t.Fatal(err)
	}
	nodes := map[string]bool{}
	for _, n := range names {
		nodes[n] = true
	}
	e := serve(ln, gate{job: "77", restart: 1, self: names[0], nodes: nodes, auth: rdvtest.New(testKey, 0)})
	t.Cleanup(e.Close)
	return e, net.JoinHostPort(addrs[names[0]], strconv.Itoa(e.Port())), addrs
}

func testProber(addrs map[string]string, self string, auth rendezvous.Authenticator) *prober {
	return &prober{self: self, local: addrs[self], dial: dialTCP, job: "77", restart: 1, auth: auth,
		conn: ConnectSettings{ConnectTimeout: 2 * time.Second, Tries: 1, Pings: 3}}
}

// TestEndpointFloodedByAnotherUser has a process of uid nobody open 260
// silent connections to a node's measurement endpoint, from ten addresses
// and from the address of one of the job's nodes (a user on that node).
// The job's peer on that node is still measured, and a user's seal is
// never admitted.
func TestEndpointFloodedByAnotherUser(t *testing.T) {
	e, target, addrs := testEndpoint(t)
	f := startFlooder(t, target)
	for i := 1; i <= 10; i++ {
		f.open(t, fmt.Sprintf("127.0.9.%d", i), 24)
	}
	f.open(t, addrs["sim0002"], 20)
	waitUntil(t, func() bool { busy, _, _ := e.Stats(); return busy >= 260-maxPending })

	pr := testProber(addrs, "sim0002", rdvtest.New(testKey, 0))
	for i := range 5 {
		if m := pr.ping(context.Background(), "sim0001", target); m.Status != judge.OK {
			t.Fatalf("ping %d of the job's peer through the flood: %v %s", i, m.Status, m.Detail)
		}
	}
	user := testProber(addrs, "sim0002", rdvtest.New(testKey, 1000))
	if m := user.ping(context.Background(), "sim0001", target); m.Status == judge.OK {
		t.Fatalf("a hello sealed by uid 1000 was admitted")
	}
	_, rejected, first := e.Stats()
	if rejected == 0 || !strings.Contains(fmt.Sprint(first), "uid 1000") {
		t.Errorf("rejected %d, first %v: want the uid 1000 hello rejected", rejected, first)
	}
}

// slowSeal lets a stranger act while the peer seals its hello.
type slowSeal struct {
	rendezvous.Authenticator
	during func()
}

func (s slowSeal) Seal(p []byte) ([]byte, error) {
	s.during()
	return s.Authenticator.Seal(p)
}

// TestEndpointFullOfStrangersIsUnknown has a user's process on the peer's
// node push the peer's connection out of the endpoint's pending places
// before it says hello: the peer records the endpoint as busy, and the
// verdict leaves that node unknown with a reason that says so, never a
// failed link.
func TestEndpointFullOfStrangersIsUnknown(t *testing.T) {
	e, target, addrs := testEndpoint(t)
	f := startFlooder(t, target)
	pr := testProber(addrs, "sim0002", slowSeal{rdvtest.New(testKey, 0), func() {
		f.open(t, addrs["sim0002"], maxPendingPerSource)
		waitUntil(t, func() bool { busy, _, _ := e.Stats(); return busy >= 1 })
	}})
	m := pr.ping(context.Background(), "sim0001", target)
	if m.Status != judge.Busy {
		t.Fatalf("the pushed-out peer measured %v (%s), want busy", m.Status, m.Detail)
	}
	ok := func(from, to string) judge.Measurement {
		return judge.Measurement{From: from, To: to, Status: judge.OK, RTT: time.Millisecond}
	}
	v, err := judge.Decide(judge.Input{Nodes: []string{"sim0001", "sim0002", "sim0003"}, Measurements: []judge.Measurement{
		m, ok("sim0001", "sim0002"), ok("sim0001", "sim0003"), ok("sim0003", "sim0001"), ok("sim0002", "sim0003"), ok("sim0003", "sim0002")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Culprits) != 0 || len(v.BadLinks) != 0 {
		t.Fatalf("a busy endpoint blamed: culprits %v, bad links %v", v.Culprits, v.BadLinks)
	}
	got := outcomeOf(v, "sim0001", Connect)
	if got.Status != benchmarks.StatusUnknown || got.Reason != benchmarks.ReasonEndpointBusy || !strings.Contains(got.Message, "not the job's") {
		t.Fatalf("sim0001: %+v, want unknown %s", got, benchmarks.ReasonEndpointBusy)
	}
	if other := outcomeOf(v, "sim0002", Connect); other.Status != benchmarks.StatusPass {
		t.Errorf("sim0002: %+v, want pass", other)
	}
}

// waitUntil polls cond every 10ms for up to 5s.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 5s")
}

// TestPortWarning: the shipped ports need no warning; a port any user can
// bind gets one that names the key and what to do.
func TestPortWarning(t *testing.T) {
	def := *DefaultConnect()
	if w := def.PortWarning(); w != "" || def.Port >= 1024 {
		t.Fatalf("defaults (port %d): warning %q", def.Port, w)
	}
	def.Port = 7421
	if w := def.PortWarning(); !strings.Contains(w, "port = 7421") || !strings.Contains(w, "below 1024") {
		t.Errorf("port 7421: %q", w)
	}
	def.Port, def.DataPort = DefaultPort, 40000
	if w := def.PortWarning(); !strings.Contains(w, "data_port = 40000") {
		t.Errorf("data_port 40000: %q", w)
	}
}
