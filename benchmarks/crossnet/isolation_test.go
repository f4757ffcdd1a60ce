package crossnet

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/crossnet/judge"
	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
)

// memRelay is the job's AdminComment for in-process phases.
type memRelay struct {
	mu   sync.Mutex
	text string
}

func (r *memRelay) Publish(_ context.Context, word string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.text = MergeWord(r.text, word)
	return nil
}

func (r *memRelay) Read(context.Context) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.text, nil
}

// fabric runs the phase on n in-process nodes whose connects from one
// node to another hang (like a dropped SYN) when blocked says so, every
// connect of the rendezvous and of the measurements alike; each node
// drains only itself, so the results are each node's own.
func fabric(t *testing.T, n int, blocked func(from, to string) bool, relay Relay, limit time.Duration) (names []string, got map[string][]benchmarks.Result, took map[string]time.Duration) {
	t.Helper()
	names, addrs := rdvtest.Cluster(n)
	byAddr := map[string]string{}
	for _, name := range names {
		byAddr[addrs[name]] = name
	}
	l, err := net.Listen("tcp", net.JoinHostPort(addrs[names[0]], "0"))
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	conn := *DefaultConnect()
	conn.Port, conn.Join, conn.ConnectTimeout, conn.Tries = port, time.Second, 250*time.Millisecond, 1
	logger, _ := logtest.NewNullLogger()
	logger.SetLevel(logrus.DebugLevel)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	got, took = map[string][]benchmarks.Result{}, map[string]time.Duration{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for _, name := range names {
		p := Phase{Job: "81", Self: name, Nodes: names, Addrs: addrs, Checks: []string{Connect}, Connect: conn,
			Bandwidth: *DefaultBandwidth(), Auth: rdvtest.New(testKey, 0), Log: logger, Relay: relay,
			Dial: func(ctx context.Context, local, remote string) (net.Conn, error) {
				host, _, _ := net.SplitHostPort(remote)
				if to, ok := byAddr[host]; ok && blocked(name, to) {
					<-ctx.Done()
					return nil, fmt.Errorf("dial %s: %w", remote, ctx.Err())
				}
				return dialTCP(ctx, local, remote)
			}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := p.RunJob(ctx).Results
			mu.Lock()
			got[name], took[name] = r, time.Since(start)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return names, got, took
}

func isolated(nodes ...string) func(from, to string) bool {
	return func(from, to string) bool {
		for _, n := range nodes {
			if from == n || to == n {
				return true
			}
		}
		return false
	}
}

func oneBadLink(a, b string) func(from, to string) bool {
	return func(from, to string) bool { return (from == a && to == b) || (from == b && to == a) }
}

// TestIsolationDecisions: the whole phase on 2, 3, 4 and 64 nodes over a
// fabric with faults, every connect real (loopback) or hanging. Each
// node's own outcome must be: fail for an isolated node (NetIsolated, the
// peers it could not reach as the device), whether or not it is the
// coordinator; pass for every other node, whose message names each
// isolated node as cut off and from where; unknown on both ends of a
// 2-node job cut in two; nobody drained for one bad link or when every
// node is cut off from every other (no meeting vouches for anyone).
func TestIsolationDecisions(t *testing.T) {
	type want map[int]string // node index → "fail NetIsolated", "unknown NetPairCutOff"...; others pass
	tests := []struct {
		name    string
		n       int
		blocked func(names []string) func(from, to string) bool
		relay   bool
		want    want
	}{
		{"2 nodes healthy", 2, nil, true, want{}},
		{"2 nodes cut in two: neither drained", 2, func(ns []string) func(string, string) bool { return oneBadLink(ns[0], ns[1]) }, true,
			want{0: "unknown NetPairCutOff", 1: "unknown NetPairCutOff"}},
		{"3 nodes healthy", 3, nil, true, want{}},
		{"3 nodes, one isolated", 3, func(ns []string) func(string, string) bool { return isolated(ns[2]) }, true,
			want{2: "fail NetIsolated"}},
		{"3 nodes, the coordinator isolated", 3, func(ns []string) func(string, string) bool { return isolated(ns[0]) }, true,
			want{0: "fail NetIsolated"}},
		{"3 nodes, one bad link: re-tested with the third, nobody drained", 3, func(ns []string) func(string, string) bool { return oneBadLink(ns[1], ns[2]) }, true,
			want{}},
		{"4 nodes healthy", 4, nil, true, want{}},
		{"4 nodes, one isolated", 4, func(ns []string) func(string, string) bool { return isolated(ns[2]) }, true,
			want{2: "fail NetIsolated"}},
		{"4 nodes, one isolated, no relay: unknown, never a drain", 4, func(ns []string) func(string, string) bool { return isolated(ns[2]) }, false,
			want{2: "unknown NetRendezvousFailed"}},
		{"4 nodes, the coordinator isolated", 4, func(ns []string) func(string, string) bool { return isolated(ns[0]) }, true,
			want{0: "fail NetIsolated"}},
		{"4 nodes, two isolated", 4, func(ns []string) func(string, string) bool { return isolated(ns[1], ns[3]) }, true,
			want{1: "fail NetIsolated", 3: "fail NetIsolated"}},
		{"4 nodes, one bad link: the link named, nobody drained", 4, func(ns []string) func(string, string) bool { return oneBadLink(ns[1], ns[2]) }, true,
			want{}},
		{"4 nodes, every node cut off from every other: nobody drained", 4, func([]string) func(string, string) bool {
			return func(string, string) bool { return true }
		}, true, want{0: "unknown NetRendezvousFailed", 1: "unknown NetRendezvousFailed", 2: "unknown NetRendezvousFailed", 3: "unknown NetRendezvousFailed"}},
		{"64 nodes healthy", 64, nil, true, want{}},
		{"64 nodes, one isolated", 64, func(ns []string) func(string, string) bool { return isolated(ns[40]) }, true,
			want{40: "fail NetIsolated"}},
		{"64 nodes, the coordinator isolated", 64, func(ns []string) func(string, string) bool { return isolated(ns[0]) }, true,
			want{0: "fail NetIsolated"}},
		{"64 nodes, two isolated", 64, func(ns []string) func(string, string) bool { return isolated(ns[7], ns[50]) }, true,
			want{7: "fail NetIsolated", 50: "fail NetIsolated"}},
		{"64 nodes, one bad link", 64, func(ns []string) func(string, string) bool { return oneBadLink(ns[10], ns[11]) }, true,
			want{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.n > 8 && testing.Short() {
				t.Skip("64 in-process nodes: not under -short")
			}
			// Each case waits its deadlines out on its own port: they wait
			// side by side.
			t.Parallel()
			names, _ := rdvtest.Cluster(tt.n)
			blocked := func(string, string) bool { return false }
			if tt.blocked != nil {
				blocked = tt.blocked(names)
			}
			var relay Relay
			if tt.relay {
				relay = &memRelay{}
			}
			limit := 15 * time.Second
			if strings.Contains(tt.name, "every node cut off") || strings.Contains(tt.name, "no relay") {
				limit = 6 * time.Second // they wait for a word until the deadline
			}
			names, got, took := fabric(t, tt.n, blocked, relay, limit)
			var cut []string // the isolated nodes, which the others name
			for i, w := range tt.want {
				if w == "fail NetIsolated" {
					cut = append(cut, names[i])
				}
			}
			var slowest time.Duration
			for i, n := range names {
				r := status(got[n], Connect)
				w := tt.want[i]
				if w == "" {
					w = "pass"
				}
				if g := strings.TrimSpace(string(r.Status) + " " + r.Reason); g != w {
					t.Errorf("%s: %s, want %s: %s", n, g, w, r.Message)
				}
				// The nodes that met say whom none of them reached, and
				// from where.
				for _, c := range cut {
					if w != "pass" {
						break
					}
					if !strings.Contains(r.Message, "cut off, never met: ") || !strings.Contains(r.Message, c+" (unreachable from ") {
						t.Errorf("%s: message %q does not name %s as cut off and from where", n, r.Message, c)
					}
				}
				if w == "fail NetIsolated" {
					d := benchmarks.FormatDrain([]benchmarks.DrainEntry{benchmarks.EntryOf(r)})
					if !strings.HasPrefix(d, "vigil: net-connect NetIsolated to:") {
						t.Errorf("%s: drain reason %q", n, d)
					}
					if !strings.Contains(r.Message, "met without it") {
						t.Errorf("%s: message %q", n, r.Message)
					}
				}
				slowest = max(slowest, took[n])
			}
			t.Logf("every node had its outcome after %s", slowest.Round(10*time.Millisecond))
		})
	}
}

// TestBadLinkNamedByTheOthers: n2-n3 blocked among 4; both ends pass
// (each works with the rest) and their messages name the link.
func TestBadLinkNamedByTheOthers(t *testing.T) {
	names, _ := rdvtest.Cluster(4)
	_, got, _ := fabric(t, 4, oneBadLink(names[1], names[2]), &memRelay{}, 15*time.Second)
	for _, n := range names[1:3] {
		r := status(got[n], Connect)
		if r.Status != benchmarks.StatusPass || !strings.Contains(r.Message, "bad link "+names[1]+"-"+names[2]+" (link-fault)") {
			t.Errorf("%s: %+v", n, r)
		}
	}
}

func TestWordsRoundTrip(t *testing.T) {
	w := judge.Word{By: "gpu001", Met: 62, CutOff: []string{"gpu007", "gpu008", "gpu050"}}
	text := FormatWord(3, w)
	if text != "vigil-net:3:gpu001:62:gpu[007-008,050]" {
		t.Errorf("word %q", text)
	}
	merged := MergeWord("site note vigil-net:2:gpu001:9:gpu009 vigil-net:3:gpu001:60:gpu007", text)
	merged = MergeWord(merged, FormatWord(3, judge.Word{By: "gpu002", Met: 2, CutOff: []string{"gpu100"}}))
	if merged != "site note vigil-net:3:gpu001:62:gpu[007-008,050] vigil-net:3:gpu002:2:gpu100" {
		t.Errorf("merged %q", merged)
	}
	got := ParseWords(merged+" vigil-net:3:x:notanumber:n1 vigil-net:3::2:n1", 3)
	if len(got) != 2 || got[0].Met != 62 || len(got[0].CutOff) != 3 || got[1].By != "gpu002" {
		t.Errorf("parsed %+v", got)
	}
	if len(ParseWords(merged, 4)) != 0 {
		t.Error("words of another run were read")
	}
}
