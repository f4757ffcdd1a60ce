package munge

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/munge/mungetest"
)

func TestOpenMissingLibraryIsAnError(t *testing.T) {
	_, err := Open(Config{Lib: dl.Options{Names: []string{"libmunge.so.vigil-missing"}, Dirs: []string{t.TempDir()}}})
	if !errors.Is(err, dl.ErrNotFound) {
		t.Fatalf("err = %v, want dl.ErrNotFound", err)
	}
}

func TestOpenLibraryWithoutSymbolsIsAnError(t *testing.T) {
	// libm is present everywhere and has none of munge's symbols.
	_, err := Open(Config{Lib: dl.Options{Names: []string{"libm.so.6"}}})
	if !errors.Is(err, dl.ErrSymbol) || !strings.Contains(err.Error(), "munge_decode") {
		t.Fatalf("err = %v, want dl.ErrSymbol naming munge_decode", err)
	}
}

func TestEncodeWithoutDaemonGivesMungesText(t *testing.T) {
	c, err := Open(Config{Socket: t.TempDir() + "/no-such-socket"})
	if err != nil {
		t.Fatalf("Open: %v (libmunge.so.2 comes with Debian's libmunge2)", err)
	}
	_, err = c.Encode([]byte("x"))
	var me *Error
	if !errors.As(err, &me) || me.Code != ErrSocket {
		t.Fatalf("err = %v, want an *Error with EMUNGE_SOCKET", err)
	}
	if me.Text == "" || !strings.Contains(err.Error(), "munge_encode") {
		t.Errorf("error %q lacks munge's text or the operation", err)
	}
	if errors.Is(err, ErrCredential) {
		t.Errorf("a missing daemon is not a rejected credential: %v", err)
	}
}

func TestErrorIs(t *testing.T) {
	e := &Error{Op: "munge_decode", Code: ErrCredReplayed, Text: "Replayed credential"}
	if !errors.Is(e, ErrCredReplayed) || !errors.Is(e, ErrCredential) || errors.Is(e, ErrCredExpired) {
		t.Errorf("Is: replayed=%v credential=%v expired=%v", errors.Is(e, ErrCredReplayed), errors.Is(e, ErrCredential), errors.Is(e, ErrCredExpired))
	}
}

func daemonClient(t *testing.T) (*Client, *mungetest.Daemon) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a private munged (not started under -short)")
	}
	d := mungetest.Start(t)
	c, err := Open(Config{Socket: d.Socket})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return c, d
}

func TestRoundTripReplayAndTamper(t *testing.T) {
	c, _ := daemonClient(t)
	payload := []byte("job=42 node=n1 \x00 binary ok")
	cred, err := c.Encode(payload)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if !strings.HasPrefix(cred, "MUNGE:") {
		t.Errorf("credential %q does not look like one", cred)
	}
	d, err := c.Decode(cred)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if string(d.Payload) != string(payload) {
		t.Errorf("payload = %q, want %q", d.Payload, payload)
	}
	if d.UID != uint32(os.Getuid()) || d.GID != uint32(os.Getgid()) {
		t.Errorf("uid/gid = %d/%d, want %d/%d", d.UID, d.GID, os.Getuid(), os.Getgid())
	}

	// munged remembers what it decoded: the same credential again is a replay.
	_, err = c.Decode(cred)
	if !errors.Is(err, ErrCredReplayed) || !errors.Is(err, ErrCredential) {
		t.Fatalf("second Decode: err = %v, want EMUNGE_CRED_REPLAYED", err)
	}
	if !strings.Contains(strings.ToLower(err.Error()), "replay") {
		t.Errorf("error %q does not carry munge's text", err)
	}

	// Flip one character in the middle of a fresh credential.
	cred2, err := c.Encode(payload)
	if err != nil {
		t.Fatal(err)
	}
	b := []byte(cred2)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	if _, err := c.Decode(string(b)); !errors.Is(err, ErrCredential) {
		t.Fatalf("tampered Decode: err = %v, want a rejected credential", err)
	}
	if _, err := c.Decode("garbage"); err == nil {
		t.Fatal("Decode(garbage) succeeded")
	}
	// Empty payloads are allowed and come back empty.
	cred3, err := c.Encode(nil)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := c.Decode(cred3); err != nil || len(d.Payload) != 0 {
		t.Errorf("empty payload: %v, %q", err, d.Payload)
	}
}

func TestCredentialOfAnotherKeyRejected(t *testing.T) {
	c1, _ := daemonClient(t)
	d2 := mungetest.Start(t)
	c2, err := Open(Config{Socket: d2.Socket})
	if err != nil {
		t.Fatal(err)
	}
	cred, err := c2.Encode([]byte("from another realm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c1.Decode(cred); !errors.Is(err, ErrCredential) {
		t.Fatalf("err = %v, want a rejected credential", err)
	}
}

// TestUIDOfAnotherUser makes a credential as uid 65534 with munge(1) and
// checks that Decode reports that uid, not root's.
func TestUIDOfAnotherUser(t *testing.T) {
	c, d := daemonClient(t)
	if os.Getuid() != 0 {
		t.Fatal("needs root to run munge(1) as another user (the test cluster's tests run as root)")
	}
	bin, err := exec.LookPath("munge")
	if err != nil {
		t.Fatalf("munge(1) not found: install the Debian package munge (%v)", err)
	}
	cmd := exec.Command(bin, "--socket="+d.Socket, "--string=as nobody")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("munge as nobody: %v", err)
	}
	got, err := c.Decode(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != 65534 || got.GID != 65534 || string(got.Payload) != "as nobody" {
		t.Errorf("decoded %+v, want uid/gid 65534 and the payload", got)
	}
}
