package ncclras

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ErrNotJobs is returned (wrapped, with ErrNotRAS) when the process that
// answers on the RAS port is not the job's user's: any user can listen on
// a free port, and a stranger's answer must not name dead ranks. Its answer
// is not read.
var ErrNotJobs = errors.New("the RAS port is held by another user's process")

// ProcRoot is where the kernel's socket tables are read (/proc/net/tcp and
// tcp6); tests point it elsewhere.
var ProcRoot = "/proc"

// SocketUID returns the owner of the socket that serves a connection from
// local to remote on this host: the uid column of the row of
// ProcRoot/net/tcp (or tcp6) whose local address is remote and whose
// remote address is local. An accepted socket has its listener's owner.
func SocketUID(root string, local, remote *net.TCPAddr) (uint32, error) {
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(root, "net", table))
		if err != nil {
			continue
		}
		uid, found, err := scanTable(bufio.NewScanner(f), local, remote)
		f.Close()
		if err != nil || found {
			return uid, err
		}
	}
	return 0, fmt.Errorf("no socket serving %s for %s in %s/net/tcp: the service is not on this host", remote, local, root)
}

// scanTable finds the serving socket's row in one table.
func scanTable(sc *bufio.Scanner, local, remote *net.TCPAddr) (uint32, bool, error) {
	sc.Buffer(make([]byte, 4096), 1<<16)
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 {
			continue
		}
		if !sameAddr(f[1], remote) || !sameAddr(f[2], local) {
			continue
		}
		uid, err := strconv.ParseUint(f[7], 10, 32)
		if err != nil {
			return 0, false, fmt.Errorf("socket table row %q: uid %q", sc.Text(), f[7])
		}
		return uint32(uid), true, nil
	}
	return 0, false, sc.Err()
}

// sameAddr compares a table's "HEXADDR:HEXPORT" with a; the address is in
// the kernel's byte order of 32-bit words (little-endian here).
func sameAddr(field string, a *net.TCPAddr) bool {
	h, p, ok := strings.Cut(field, ":")
	if !ok {
		return false
	}
	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil || int(port) != a.Port {
		return false
	}
	raw, err := hex.DecodeString(h)
	if err != nil || len(raw)%4 != 0 {
		return false
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	ip := net.IP(raw)
	return ip.Equal(a.IP)
}

// checkOwner refuses a connection whose serving socket is not owned by
// uid (the watcher's own: it runs as the job's user).
func checkOwner(conn net.Conn, addr string, uid uint32) error {
	local, ok1 := conn.LocalAddr().(*net.TCPAddr)
	remote, ok2 := conn.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return fmt.Errorf("%w: %w (%s: not a TCP connection)", ErrNotRAS, ErrNotJobs, addr)
	}
	owner, err := SocketUID(ProcRoot, local, remote)
	if err != nil {
		return fmt.Errorf("%w: %s: cannot tell who holds the RAS port, its answer is not used: %w", ErrNotRAS, addr, err)
	}
	if owner != uid {
		return fmt.Errorf("%w: %w (%s is held by uid %d, the job's user is uid %d): its answer is not used", ErrNotRAS, ErrNotJobs, addr, owner, uid)
	}
	return nil
}
