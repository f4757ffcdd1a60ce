package ncclras

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// FakeServer is a RAS service on a loopback port that speaks as NCCL's
// src/ras/client_support.cc does (rasClientRunInit, rasClientRunComms):
// commands are lines, case-insensitive; CLIENT PROTOCOL gets SERVER
// PROTOCOL 2, TIMEOUT gets OK, STATUS and VERBOSE STATUS get the answer in
// pieces (the version lines, the job summary, the communicators), after
// which it closes the connection; anything else gets "ERROR: Unknown
// command".
type fakeServer struct {
	ln       net.Listener
	answer   string
	commands chan string
}

func newFakeServer(t *testing.T, answer string) *fakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeServer{ln: ln, answer: answer, commands: make(chan string, 16)}
	t.Cleanup(func() { ln.Close() })
	go s.serve()
	return s
}

func (s *fakeServer) addr() string { return s.ln.Addr().String() }

func (s *fakeServer) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.client(c)
	}
}

func (s *fakeServer) client(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.TrimRight(line, "\r\n")
		select {
		case s.commands <- cmd:
		default:
		}
		switch low := strings.ToLower(cmd); {
		case strings.HasPrefix(low, "client protocol "):
			io.WriteString(c, "SERVER PROTOCOL 2\n")
		case strings.HasPrefix(low, "timeout "):
			io.WriteString(c, "OK\n")
		case low == "status" || low == "verbose status":
			for _, piece := range strings.SplitAfter(s.answer, "\nCommunicators...") {
				io.WriteString(c, piece)
				time.Sleep(5 * time.Millisecond)
			}
			return
		default:
			io.WriteString(c, "ERROR: Unknown command "+cmd+"\n")
		}
	}
}

func TestQuery(t *testing.T) {
	s := newFakeServer(t, fixture(t, "built-2.26-hang.txt"))
	st, err := Query(context.Background(), s.addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != "2.26.6" || st.DeadCount != 1 || len(st.Comms) != 2 {
		t.Errorf("Query: %s", js(st))
	}
	var cmds []string
	for len(s.commands) > 0 {
		cmds = append(cmds, <-s.commands)
	}
	if want := "CLIENT PROTOCOL 2,TIMEOUT 2,VERBOSE STATUS"; strings.Join(cmds, ",") != want {
		t.Errorf("commands %q, want %s", cmds, want)
	}
}

// TestQuerySilent: a server that accepts and never answers does not hold
// Query past its timeout.
func TestQuerySilent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	defer close(done)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			<-done
			c.Close()
		}
	}()
	start := time.Now()
	_, err = Query(context.Background(), ln.Addr().String(), 300*time.Millisecond)
	if err == nil || errors.Is(err, ErrNotRAS) {
		t.Fatalf("Query = %v, want a timeout", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("Query = %v, want a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Query took %v", d)
	}
}

// TestQueryCancelled: ctx ends the query too.
func TestQueryCancelled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			time.Sleep(3 * time.Second)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Query(ctx, ln.Addr().String(), 5*time.Second); err == nil {
		t.Fatal("Query = nil error")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Query took %v", d)
	}
}

// TestQueryNotRAS: a port that speaks something else (a web server, an
// SSH server's banner, one that closes at once) is not RAS's.
func TestQueryNotRAS(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(c net.Conn)
	}{
		{"http", func(c net.Conn) {
			bufio.NewReader(c).ReadString('\n')
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
		}},
		{"banner", func(c net.Conn) { io.WriteString(c, "SSH-2.0-OpenSSH_9.6\r\n") }},
		{"closes", func(c net.Conn) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err == nil {
					tc.serve(c)
					c.Close()
				}
			}()
			if _, err := Query(context.Background(), ln.Addr().String(), 2*time.Second); !errors.Is(err, ErrNotRAS) {
				t.Errorf("Query = %v, want ErrNotRAS", err)
			}
		})
	}
}

// TestQueryRefused: nothing listens.
func TestQueryRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Query(context.Background(), addr, time.Second)
	if err == nil || errors.Is(err, ErrNotRAS) || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Query = %v, want connection refused", err)
	}
}

// TestQueryTooLong: an answer over MaxAnswer is refused, not read on.
func TestQueryTooLong(t *testing.T) {
	s := newFakeServer(t, "NCCL version 2.26.6\n"+strings.Repeat("x", MaxAnswer+10))
	if _, err := Query(context.Background(), s.addr(), 5*time.Second); !errors.Is(err, ErrTooLong) {
		t.Errorf("Query = %v, want ErrTooLong", err)
	}
}

func TestAddr(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "localhost:28028"},
		{map[string]string{"NCCL_RAS_ADDR": "127.0.0.1:29000"}, "127.0.0.1:29000"},
		{map[string]string{"NCCL_RAS_ADDR": " "}, "localhost:28028"},
		{map[string]string{"NCCL_RAS_ENABLE": "0", "NCCL_RAS_ADDR": "127.0.0.1:29000"}, ""},
		{map[string]string{"NCCL_RAS_ENABLE": "1"}, "localhost:28028"},
	} {
		got := Addr(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if got != tc.want {
			t.Errorf("Addr(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}
