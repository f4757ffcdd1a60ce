package procnet

import (
	"os"
	"testing"
)

// testdata/tcp is a real /proc/PID/net/tcp, captured while iptables dropped
// the packets of two connections to 127.0.0.2 (one on OUTPUT, one on INPUT).
func TestParseTCP(t *testing.T) {
	b, err := os.ReadFile("testdata/tcp")
	if err != nil {
		t.Fatal(err)
	}
	socks, err := ParseTCP(b)
	if err != nil {
		t.Fatal(err)
	}
	byInode := map[uint64]Socket{}
	for _, s := range socks {
		byInode[s.Inode] = s
	}
	for ino, want := range map[uint64]struct {
		peer    string
		retrans bool
	}{1366254: {"127.0.0.2", true}, 1377356: {"127.0.0.2", true}, 1376792: {"127.0.0.1", false}, 1376791: {"0.0.0.0", false}} {
		s, ok := byInode[ino]
		if !ok || s.Remote.Addr().String() != want.peer || s.Retransmitting() != want.retrans {
			t.Errorf("socket %d: %+v (found %v), want peer %s retransmitting %v", ino, s, ok, want.peer, want.retrans)
		}
	}
	if s := byInode[1377356]; s.Timer != 1 || s.Retrans == 0 || s.TxQueue != 3000 {
		t.Errorf("the INPUT-dropped socket: %+v, want retransmit timer, retransmits, 3000 bytes queued", s)
	}
	if s := byInode[1376791]; s.State != 10 || !s.Local.Addr().IsValid() || s.Local.Port() == 0 {
		t.Errorf("the listener: %+v, want state LISTEN with its local address and port", s)
	}
	if _, err := ParseTCP([]byte("garbage\n")); err == nil {
		t.Error("a file without the header: no error")
	}
}

func TestParseAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"0000000000000000FFFF00000100007F:0050": "127.0.0.1:80",
		"00000000000000000000000001000000:0016": "[::1]:22",
	} {
		if got, ok := parseAddr(in); !ok || got.String() != want {
			t.Errorf("parseAddr(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:", "XYZ0007F:0050", "0100:0050"} {
		if _, ok := parseAddr(bad); ok {
			t.Errorf("parseAddr(%q): want not ok", bad)
		}
	}
}
