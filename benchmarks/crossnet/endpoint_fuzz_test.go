package crossnet

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
)

// FuzzEndpoint feeds arbitrary bytes to the measurement endpoint as one
// connection would send them. It must never panic, end within its
// handshake deadline, and never answer or serve a connection: the seeds
// are sealed with a key the endpoint does not hold, so no input carries a
// valid seal.
func FuzzEndpoint(f *testing.F) {
	fuzzer := rdvtest.New([]byte("the fuzzer's key"), 0)
	for _, op := range []byte{opPing, opBulk} {
		tok, _ := fuzzer.Seal(binding("77", 1, "sim0002", "sim0001", op))
		f.Add(append(hello(op, "sim0002", tok), 0, 0, 0, 0, 0, 0, 0, 1))
	}
	f.Add(hello(opPing, "sim0002", []byte("x")))
	f.Add([]byte{opPing, 0xff, 0xff})
	f.Add([]byte{opBulk, 0, 7, 's', 'i', 'm', '0', '0', '0', '2', 0xff, 0xff})
	f.Add([]byte("GET / HTTP/1.0\r\n\r\n"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, in []byte) {
		e := &endpoint{gate: gate{job: "77", restart: 1, self: "sim0001",
			nodes: map[string]bool{"sim0001": true, "sim0002": true}, auth: rdvtest.New(testKey, 0)},
			open: map[net.Conn]struct{}{}, bySource: map[string]int{}, servedBy: map[string]int{}}
		server, client := net.Pipe()
		e.pend(server)
		got := make(chan []byte, 1)
		go func() {
			_ = client.SetDeadline(time.Now().Add(authLimit + time.Second))
			go func() { client.Write(in); client.Close() }()
			b, _ := io.ReadAll(client)
			got <- b
		}()
		start := time.Now()
		if op, ok := e.handshake(server); ok {
			t.Fatalf("admitted op %q without a valid seal", op)
		}
		server.Close()
		if d := time.Since(start); d > authLimit+500*time.Millisecond {
			t.Fatalf("handshake held %s", d)
		}
		if b := <-got; len(b) != 0 && !bytes.Equal(b, []byte{replyBusy}) {
			t.Fatalf("answered %q to a stranger", b)
		}
		if _, rejected, _ := e.Stats(); rejected != 1 {
			t.Fatalf("rejected %d, want 1", rejected)
		}
	})
}

// FuzzReadHello reads arbitrary bytes as a hello: it never panics and
// never returns more than it read.
func FuzzReadHello(f *testing.F) {
	f.Add(hello(opPing, "sim0002", []byte("token")))
	f.Add([]byte{opBulk, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		_, from, tok, err := readHello(bytes.NewReader(in))
		if err == nil && len(from)+len(tok)+5 > len(in) {
			t.Fatalf("read %d+%d bytes from %d", len(from), len(tok), len(in))
		}
	})
}
