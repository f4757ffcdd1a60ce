package rendezvous

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/cgo/munge"
	"github.com/vigil-hpc/vigil/cgo/munge/mungetest"
)

// mungeAuth starts a private munged and returns an Authenticator over it.
func mungeAuth(t *testing.T) (Munge, *mungetest.Daemon) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a private munged (not started under -short)")
	}
	d := mungetest.Start(t)
	c, err := munge.Open(munge.Config{Socket: d.Socket})
	if err != nil {
		t.Fatalf("libmunge: %v", err)
	}
	return Munge{Client: c}, d
}

// TestMungeRendezvous runs a job of three nodes sealed with real MUNGE
// credentials (one munged stands for the nodes' daemons, which share a key
// on a real cluster): meet, gather, broadcast.
func TestMungeRendezvous(t *testing.T) {
	auth, _ := mungeAuth(t)
	s := newSim(t, 3, 3*time.Second)
	res := s.run(nil, func(_ int, c *Config) { c.Auth = auth })
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("%s: %v", s.names[i], r.err)
		}
	}
	got := gatherAll(t, res, "measure")
	if len(got) != 3 {
		t.Fatalf("gathered %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	errs := make(chan error, 3)
	for _, r := range res {
		go func() {
			p, err := r.s.Broadcast(ctx, "verdicts", []byte("all pass"))
			if err == nil && string(p) != "all pass" {
				err = errors.New("broadcast payload " + string(p))
			}
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if l := s.logged(); len(l) != 0 {
		t.Errorf("warnings: %q", l)
	}
}

// TestMungeUserCredentialAndReplay: a credential made by uid 65534 with
// munge(1), over a correct binding, is refused because of its uid; a
// root credential decoded twice is refused by munged as a replay.
func TestMungeUserCredentialAndReplay(t *testing.T) {
	auth, d := mungeAuth(t)
	s := bare(t, "n1", []string{"n1", "n2"}, auth)
	want := expect{kind: KindGather, round: 3, label: "measure"}

	e := sealed(t, auth, nil)
	if err := s.verify(e, want); err != nil {
		t.Fatalf("root credential rejected: %v", err)
	}
	err := s.verify(e, want)
	if !errors.Is(err, ErrAuth) || !errors.Is(err, munge.ErrCredReplayed) {
		t.Fatalf("replay: err = %v, want ErrAuth with EMUNGE_CRED_REPLAYED", err)
	}

	bin, err := exec.LookPath("munge")
	if err != nil {
		t.Fatalf("munge(1) not found: install the Debian package munge (%v)", err)
	}
	u := sealed(t, auth, nil) // the binding is what matters; reseal it as a user
	cmd := exec.Command(bin, "--socket="+d.Socket)
	cmd.Stdin = bytes.NewReader(u.Binding())
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("munge as nobody: %v", err)
	}
	u.Token = bytes.TrimSpace(out)
	err = s.verify(u, want)
	if !errors.Is(err, ErrAuth) || !strings.Contains(err.Error(), "uid 65534") {
		t.Fatalf("user credential: err = %v, want ErrAuth naming uid 65534", err)
	}
}
