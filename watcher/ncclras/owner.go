package ncclras

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vigil-hpc/vigil/internal/procnet"
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
// local to remote on this host: the uid of the row of root/net/tcp (or
// tcp6) whose local address is remote and whose remote address is local.
// An accepted socket has its listener's owner.
func SocketUID(root string, local, remote *net.TCPAddr) (uint32, error) {
	l, r := unmapped(local), unmapped(remote)
	socks, err := procnet.ReadTCP(root)
	for _, s := range socks {
		if s.Local == r && s.Remote == l {
			return s.UID, nil
		}
	}
	if len(socks) == 0 && err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no socket serving %s for %s in %s/net/tcp: the service is not on this host", remote, local, root)
}

// unmapped is a as the socket tables read it (an IPv4-mapped address as
// IPv4).
func unmapped(a *net.TCPAddr) netip.AddrPort {
	ap := a.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
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
