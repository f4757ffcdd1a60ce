// Package ncclras asks NCCL's own RAS service (NCCL >= 2.24) how a running
// job stands: which communicators it has, which ranks gave no data or are
// dead, which are behind the others in collectives. Every NCCL process
// runs a RAS thread; one of a node's processes answers on localhost:28028
// (NCCL_RAS_ADDR overrides it), in the text protocol of NCCL's
// src/ras/client_support.cc, which its ncclras client speaks:
//
//	client: CLIENT PROTOCOL 2        server: SERVER PROTOCOL 2
//	client: TIMEOUT 2                server: OK
//	client: VERBOSE STATUS           server: the answer, then it closes
//
// Any user can listen on the port while it is free, so Query reads an
// answer only from a socket of the watcher's own user (the job's: the
// kernel's socket table says who holds it); anything else is ErrNotRAS
// and ErrNotJobs, and names no rank.
//
// Query speaks it within bounded time; Parse reads the answer (the text of
// NCCL 2.24 to 2.30, and the JSON of `ncclras -f json`, 2.28.7 and later)
// into trace.RAS, the record the watcher keeps as evidence.
package ncclras

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-hpc/vigil/internal/textutil"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// Status is NCCL's view of the job as Parse reads it: the trace's own
// record type, so that what the watcher records is what it parsed.
type Status = trace.RAS

// DefaultAddr is where NCCL's RAS service listens unless NCCL_RAS_ADDR
// says otherwise (NCCL_RAS_CLIENT_PORT in src/ras/ras_internal.h).
const DefaultAddr = "localhost:28028"

// Protocol is the client protocol version this package speaks
// (NCCL_RAS_CLIENT_PROTOCOL, 2 in every NCCL from 2.24 to 2.30).
const Protocol = 2

// Bounds of a Query.
const (
	// ConnectTimeout bounds the connection, in seconds of wall time.
	ConnectTimeout = 2 * time.Second
	// DefaultTimeout is a whole query's default bound: an unresponsive
	// rank makes RAS wait for it (5 s by default; Query asks for less).
	DefaultTimeout = 5 * time.Second
	// MaxAnswer is the most Query reads of the service, handshake and
	// answer together, in bytes; a longer answer is an error.
	MaxAnswer = 1 << 20
)

// ErrNotRAS is returned (wrapped, with what the port said) when the port
// answers, but not as NCCL's RAS service does.
var ErrNotRAS = errors.New("not NCCL's RAS service")

// ErrTooLong is returned (wrapped) for an answer longer than MaxAnswer.
var ErrTooLong = errors.New("RAS answer too long")

// Addr is the address of the job's RAS service: NCCL_RAS_ADDR of the
// job's environment (read through lookup), else DefaultAddr; "" when the
// job turned RAS off (NCCL_RAS_ENABLE=0): nothing to ask.
func Addr(lookup func(string) (string, bool)) string {
	if v, ok := lookup("NCCL_RAS_ENABLE"); ok && strings.TrimSpace(v) == "0" {
		return ""
	}
	if v, ok := lookup("NCCL_RAS_ADDR"); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return DefaultAddr
}

// Query asks the RAS service at addr for the job's status and parses the
// answer, all within timeout (DefaultTimeout when not positive) and ctx:
// connecting takes at most ConnectTimeout, and RAS is told to wait at most
// about half of timeout for its peers (TIMEOUT, whole seconds, at least
// one). A port that answers the handshake otherwise than RAS does is an
// error wrapping ErrNotRAS; a port that never answers is a timeout error.
func Query(ctx context.Context, addr string, timeout time.Duration) (Status, error) {
	text, err := Fetch(ctx, addr, timeout)
	if err != nil {
		return Status{}, err
	}
	return Parse(text)
}

// Fetch is Query without the parsing: the answer's text as RAS sent it.
func Fetch(ctx context.Context, addr string, timeout time.Duration) (string, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dctx, dcancel := context.WithTimeout(ctx, ConnectTimeout)
	defer dcancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("ncclras: %w", err)
	}
	defer conn.Close()
	if err := checkOwner(conn, addr, uint32(os.Getuid())); err != nil {
		return "", err
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) }) // ctx cancelled early
	defer stop()

	lr := &io.LimitedReader{R: conn, N: MaxAnswer + 1}
	r := bufio.NewReaderSize(lr, 4096)
	say := func(cmd string) (string, error) {
		if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
			return "", fmt.Errorf("ncclras: %s: %w", addr, err)
		}
		line, err := r.ReadString('\n')
		if err != nil && line == "" {
			return "", fmt.Errorf("ncclras: %s: %s: %w", addr, cmd, err)
		}
		return strings.TrimRight(line, "\r\n"), nil
	}
	hello, err := say(fmt.Sprintf("CLIENT PROTOCOL %d", Protocol))
	if err != nil {
		// A service that hangs up on the greeting (a close, or a reset
		// when our line arrived unread) is not RAS.
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			return "", fmt.Errorf("%w (%s closed the connection at the handshake)", ErrNotRAS, addr)
		}
		return "", err
	}
	if !strings.HasPrefix(strings.ToUpper(hello), "SERVER PROTOCOL ") {
		return "", fmt.Errorf("ncclras: %s: %w (it said %q)", addr, ErrNotRAS, textutil.Cut(hello, 80, "..."))
	}
	wait := max(int((timeout/2)/time.Second), 1)
	if ok, err := say(fmt.Sprintf("TIMEOUT %d", wait)); err != nil {
		return "", err
	} else if !strings.EqualFold(ok, "OK") {
		return "", fmt.Errorf("ncclras: %s: TIMEOUT %d: %q", addr, wait, textutil.Cut(ok, 80, "..."))
	}
	if _, err := io.WriteString(conn, "VERBOSE STATUS\n"); err != nil {
		return "", fmt.Errorf("ncclras: %s: %w", addr, err)
	}
	b, err := io.ReadAll(r) // RAS closes the connection after the answer
	if err != nil {
		return "", fmt.Errorf("ncclras: %s: reading the answer: %w", addr, err)
	}
	if lr.N == 0 {
		return "", fmt.Errorf("ncclras: %s: %w (over %d bytes)", addr, ErrTooLong, MaxAnswer)
	}
	return string(b), nil
}
