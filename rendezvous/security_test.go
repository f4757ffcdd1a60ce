package rendezvous

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
)

// bare is a session that has met nobody, for verify's checks.
func bare(t *testing.T, self string, nodes []string, auth Authenticator) *Session {
	t.Helper()
	c := Config{Job: "4242", Restart: 1, Self: self, Nodes: nodes, Port: 1, Auth: auth}
	c.defaults()
	logger, _ := logtest.NewNullLogger()
	c.Log = logger
	ns, err := c.validate()
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{cfg: c, nodes: ns, coord: ns[0], member: map[string]bool{}, log: logger}
	for _, n := range ns {
		s.member[n] = true
	}
	return s
}

// sealed returns a message from n2 to n1 sealed by auth, after change
// altered it (before sealing).
func sealed(t *testing.T, auth Authenticator, change func(*Envelope)) *Envelope {
	t.Helper()
	e := &Envelope{Kind: KindGather, Round: 3, Job: "4242", Restart: 1, From: "n2", To: "n1",
		Label: "measure", Payload: []byte(`{"gbps":190}`)}
	if change != nil {
		change(e)
	}
	tok, err := auth.Seal(e.Binding())
	if err != nil {
		t.Fatal(err)
	}
	e.Token = tok
	return e
}

func TestVerifyRejects(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	want := expect{kind: KindGather, round: 3, label: "measure"}
	peer := rdvtest.New(testKey, 0)
	cases := []struct {
		name string
		msg  func() *Envelope
		is   error
	}{
		{"another job", func() *Envelope { return sealed(t, peer, func(e *Envelope) { e.Job = "4243" }) }, ErrWrongJob},
		{"an earlier run of the job", func() *Envelope { return sealed(t, peer, func(e *Envelope) { e.Restart = 0 }) }, ErrWrongJob},
		{"for another node", func() *Envelope { return sealed(t, peer, func(e *Envelope) { e.To = "n3" }) }, ErrUnexpected},
		{"from outside the job", func() *Envelope { return sealed(t, peer, func(e *Envelope) { e.From = "n9" }) }, ErrUnexpected},
		{"from itself", func() *Envelope { return sealed(t, peer, func(e *Envelope) { e.From = "n1" }) }, ErrUnexpected},
		{"wrong kind", func() *Envelope { return sealed(t, peer, func(e *Envelope) { e.Kind = KindHello }) }, ErrUnexpected},
		{"old round", func() *Envelope { return sealed(t, peer, func(e *Envelope) { e.Round = 2 }) }, ErrUnexpected},
		{"other label", func() *Envelope { return sealed(t, peer, func(e *Envelope) { e.Label = "links" }) }, ErrUnexpected},
		{"a user's credential", func() *Envelope { return sealed(t, rdvtest.New(testKey, 1000), nil) }, ErrAuth},
		{"another key", func() *Envelope { return sealed(t, rdvtest.New([]byte("guess"), 0), nil) }, ErrAuth},
		{"payload changed after sealing", func() *Envelope {
			e := sealed(t, peer, nil)
			e.Payload = []byte(`{"gbps":1}`)
			return e
		}, ErrAuth},
		{"sender changed after sealing", func() *Envelope {
			e := sealed(t, peer, nil)
			e.From = "n3"
			return e
		}, ErrAuth},
		{"restart changed after sealing", func() *Envelope {
			e := sealed(t, peer, func(e *Envelope) { e.Restart = 0 })
			e.Restart = 1
			return e
		}, ErrAuth},
		{"seal of another message", func() *Envelope {
			other := sealed(t, peer, func(e *Envelope) { e.Payload = []byte("other") })
			e := sealed(t, peer, nil)
			e.Token = other.Token
			return e
		}, ErrAuth},
		{"seal of something else entirely", func() *Envelope {
			e := sealed(t, peer, nil)
			tok, _ := peer.Seal(e.Payload) // the payload, not the binding
			e.Token = tok
			return e
		}, ErrAuth},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := bare(t, "n1", nodes, rdvtest.New(testKey, 0))
			err := s.verify(c.msg(), want)
			if !errors.Is(err, c.is) {
				t.Fatalf("err = %v, want %v", err, c.is)
			}
		})
	}
	t.Run("valid, then replayed", func(t *testing.T) {
		s := bare(t, "n1", nodes, rdvtest.New(testKey, 0))
		e := sealed(t, peer, nil)
		if err := s.verify(e, want); err != nil {
			t.Fatalf("valid message rejected: %v", err)
		}
		if err := s.verify(e, want); !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "replay") {
			t.Fatalf("replay: err = %v, want ErrAuth for a replay", err)
		}
	})
	t.Run("watcher uid", func(t *testing.T) {
		s := bare(t, "n1", nodes, rdvtest.New(testKey, 0))
		s.cfg.UID = 1000
		if err := s.verify(sealed(t, rdvtest.New(testKey, 1000), nil), want); err != nil {
			t.Fatalf("job uid rejected where it is the expected one: %v", err)
		}
		if err := s.verify(sealed(t, peer, nil), want); !errors.Is(err, ErrAuth) {
			t.Fatalf("root credential where uid 1000 is expected: %v", err)
		}
	})
}

// frame encodes e with its length prefix.
func frame(t *testing.T, e *Envelope) []byte {
	t.Helper()
	body, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	return append(b, body...)
}

// hit connects to addr, writes b, and reads until the peer closes or 3s
// pass; it returns what came back.
func hit(t *testing.T, addr string, b []byte, closeWrite bool) []byte {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	c.Write(b)
	if closeWrite {
		c.(*net.TCPConn).CloseWrite()
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	var out []byte
	buf := make([]byte, 4096)
	for range 100 {
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err != nil {
			break
		}
	}
	return out
}

// TestPortAbuseChangesNothing plays a user's process on the coordinator's
// port while the job's nodes meet, one of them absent: garbage, a short
// read, an oversized frame, another job's hello, a hello for the absent
// node sealed with a user's credential or another key, and a replay of a
// node's real hello. Each is rejected with a log line, none gets an
// answer, and the roster is what it would have been without them.
func TestPortAbuseChangesNothing(t *testing.T) {
	s := newSim(t, 4, 2*time.Second)
	absent := s.names[3]
	// Capture node 2's hello on its way (as a network tap would) to replay
	// it: its Auth records what it seals.
	tap := &tapAuth{Authenticator: rdvtest.New(testKey, 0)}
	done := make(chan []result, 1)
	go func() {
		done <- s.run(map[int]bool{3: true}, func(i int, c *Config) {
			if i == 2 {
				c.Auth = tap
			}
		})
	}()
	addr := s.coordAddr()
	waitListening(t, addr)
	asHello := func(e *Envelope) {
		e.Kind, e.Round, e.Label, e.To, e.Payload = KindHello, 0, "", s.names[0], []byte(`{"addr":"127.66.6.6"}`)
	}
	attacks := map[string][]byte{
		"garbage":       []byte("GET / HTTP/1.0\r\n\r\n"),
		"short read":    {0, 0, 1, 0, Version, byte(KindHello)},
		"oversized":     {0xff, 0xff, 0xff, 0xff, Version},
		"wrong version": append([]byte{0, 0, 0, minBody}, make([]byte, minBody)...),
		"another job": frame(t, sealed(t, rdvtest.New(testKey, 0), func(e *Envelope) {
			asHello(e)
			e.Job, e.Restart, e.From = "9999", 0, absent
		})),
		"user credential for the absent node": frame(t, sealed(t, rdvtest.New(testKey, 1000), func(e *Envelope) {
			asHello(e)
			e.Job, e.Restart, e.From = s.job, 0, absent
		})),
		"another key for the absent node": frame(t, sealed(t, rdvtest.New([]byte("guess"), 0), func(e *Envelope) {
			asHello(e)
			e.Job, e.Restart, e.From = s.job, 0, absent
		})),
	}
	for name, b := range attacks {
		if got := hit(t, addr, b, true); len(got) != 0 {
			t.Errorf("%s: the coordinator answered %d bytes", name, len(got))
		}
	}
	// A connection that says nothing is cut after IOTimeout (2s here).
	start := time.Now()
	hit(t, addr, nil, false)
	if d := time.Since(start); d > 2500*time.Millisecond {
		t.Errorf("silent connection held %s", d)
	}
	res := <-done
	// Replay node 2's real hello after the join: a late hello would get
	// the roster; a replay gets nothing.
	if tap.hello == nil {
		t.Fatal("no hello captured")
	}
	// The tap saw the binding, which holds the payload's digest; put back
	// the payload node 2 sent, and check it is the one sealed.
	tap.hello.Payload, _ = json.Marshal(hello{Addr: s.addrs[s.names[2]], Offer: []byte("offer-" + s.names[2])})
	if sum := sha256.Sum256(tap.hello.Payload); !bytes.Equal(sum[:], tap.binding[len(tap.binding)-32:]) {
		t.Fatal("the rebuilt hello is not the one node 2 sealed")
	}
	if got := hit(t, addr, frame(t, tap.hello), true); len(got) != 0 {
		t.Errorf("replayed hello answered with %d bytes", len(got))
	}
	for i, r := range res {
		if i == 3 {
			continue
		}
		if r.err != nil {
			t.Fatalf("%s: %v", s.names[i], r.err)
		}
		if got := r.s.Roster().Absent(); !reflect.DeepEqual(got, []string{absent}) {
			t.Errorf("%s: absent %v, want [%s]", s.names[i], got, absent)
		}
		for _, m := range r.s.Roster().Members {
			if m.Addr == "127.66.6.6" {
				t.Errorf("roster carries the attacker's address: %+v", m)
			}
		}
	}
	waitFor(t, func() bool { return res[0].s.Stats().Rejected >= len(attacks)+2 })
	log := strings.Join(s.logged(), "\n")
	for _, want := range []string{"malformed", "too large", "version", "another job", "uid 1000", "bad MAC", "replay", "timeout"} {
		if !strings.Contains(log, want) {
			t.Errorf("no log line says %q:\n%s", want, log)
		}
	}
	for _, e := range s.hook.AllEntries() {
		if e.Message == "rendezvous: rejected" && e.Data["peer"] == nil {
			t.Errorf("rejection without the peer's address: %v", e.Data)
		}
	}
	if st := res[0].s.Stats(); st.Links != 2 {
		t.Errorf("coordinator links %d, want the 2 real members", st.Links)
	}
}

// tapAuth records the first binding it seals (a member's hello) and its
// token, as a tap on the wire would see them.
type tapAuth struct {
	Authenticator
	hello   *Envelope
	binding []byte
}

func (a *tapAuth) Seal(p []byte) ([]byte, error) {
	tok, err := a.Authenticator.Seal(p)
	if a.hello == nil && err == nil {
		if e, perr := parseBinding(p); perr == nil {
			e.Token = tok
			a.hello, a.binding = e, append([]byte(nil), p...)
		}
	}
	return tok, err
}

// parseBinding reads the header fields back from a binding (the payload
// is left empty: the binding holds only its digest).
func parseBinding(b []byte) (*Envelope, error) {
	if !strings.HasPrefix(string(b), bindingTag) {
		return nil, errors.New("no tag")
	}
	b = b[len(bindingTag):]
	// The header has the body's layout without payload and token: append
	// an empty payload and a one-byte token to decode it.
	hdr := append(append([]byte(nil), b[:len(b)-32]...), 0, 0, 0, 0, 0, 1, 'x')
	return Decode(hdr)
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	waitFor(t, func() bool {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// waitFor polls cond every 10ms for up to 5s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 5s")
}

// TestSquatterCannotHandARoster plays a user's process that bound the
// coordinator's port before the prolog did: it answers every hello with
// a roster sealed by the user's credential. The member accepts nothing
// from it and ends unknown.
func TestSquatterCannotHandARoster(t *testing.T) {
	s := newSim(t, 2, 800*time.Millisecond)
	ln, err := net.Listen("tcp", s.coordAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	user := rdvtest.New(testKey, 1000)
	go func() {
		for range 50 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			body, err := ReadFrame(c, DefaultMaxMessage)
			if err == nil {
				in, _ := Decode(body)
				r := encodeRoster(Roster{Coordinator: s.names[0], Members: []Member{
					{Name: s.names[0], Present: true}, {Name: s.names[1], Present: true}}})
				e := &Envelope{Kind: KindRoster, Job: in.Job, Restart: in.Restart, From: s.names[0], To: in.From, Payload: r}
				e.Token, _ = user.Seal(e.Binding())
				b, _ := e.Encode()
				WriteFrame(c, b)
			}
			c.Close()
		}
	}()
	start := time.Now()
	_, err = Meet(context.Background(), s.config(1))
	if !errors.Is(err, ErrCoordinatorLost) {
		t.Fatalf("err = %v, want ErrCoordinatorLost", err)
	}
	if !strings.Contains(err.Error(), "uid 1000") {
		t.Errorf("error %q does not say why", err)
	}
	if d := time.Since(start); d > 800*time.Millisecond+time.Second {
		t.Errorf("gave up after %s", d)
	}
	if !strings.Contains(strings.Join(s.logged(), "\n"), "uid 1000") {
		t.Errorf("no log line for the squatter's roster: %q", s.logged())
	}
}

func TestFrameIsLengthAndBody(t *testing.T) {
	e := sealed(t, rdvtest.New(testKey, 0), nil)
	body, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f, err := e.Frame()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadFrame(bytes.NewReader(f), DefaultMaxMessage)
	if err != nil || !bytes.Equal(got, body) || len(f) != 4+len(body) {
		t.Fatalf("frame does not read back as the body: %v", err)
	}
	back, err := Decode(body)
	if err != nil || !reflect.DeepEqual(back, e) {
		t.Fatalf("Decode(Encode(e)) = %+v, %v; want %+v", back, err, e)
	}
	if _, err := ReadFrame(bytes.NewReader(f[:len(f)-1]), DefaultMaxMessage); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("short frame: err = %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := ReadFrame(bytes.NewReader(f), len(body)-1); !errors.Is(err, ErrTooLarge) {
		t.Errorf("frame over the limit: err = %v, want ErrTooLarge", err)
	}
}

func TestRosterEncoding(t *testing.T) {
	nodes := []string{"n1", "n2", "n3"}
	r := Roster{Coordinator: "n1", Members: []Member{
		{Name: "n1", Present: true, Addr: "10.0.0.1", Offer: []byte("o1")},
		{Name: "n2"},
		{Name: "n3", Present: true, Addr: "10.0.0.3"}}}
	got, err := decodeRoster(encodeRoster(r), nodes, 0)
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := decodeRoster(encodeRoster(r), nodes[:2], 0); !errors.Is(err, ErrUnexpected) {
		t.Errorf("roster of another node list: err = %v", err)
	}
	r.Members[0].Present = false
	if _, err := decodeRoster(encodeRoster(r), nodes, 0); !errors.Is(err, ErrUnexpected) {
		t.Errorf("roster without its coordinator: err = %v", err)
	}
}

// WriteFrame writes body with its 4-byte big-endian length prefix in one
// write.
func WriteFrame(w io.Writer, body []byte) error {
	b := make([]byte, 4, 4+len(body))
	binary.BigEndian.PutUint32(b, uint32(len(body)))
	_, err := w.Write(append(b, body...))
	return err
}
