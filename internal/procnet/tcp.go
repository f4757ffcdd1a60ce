// Package procnet reads the kernel's TCP socket tables, /proc/net/tcp and
// tcp6 (or a process's own /proc/PID/net/..., its network namespace's):
// the one parser for the watcher's view of what a rank waits on and for
// the owner check of NCCL's RAS port.
package procnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Socket is one row of a TCP table.
type Socket struct {
	Local, Remote netip.AddrPort
	State         int    // TCP_ESTABLISHED is 1, TCP_LISTEN 10
	TxQueue       uint64 // bytes sent and not acknowledged (unsent, in LISTEN)
	Timer         int    // the active timer: 1 retransmit, 2 keepalive, 3 TIME_WAIT, 4 zero-window probe
	Retrans       uint64 // retransmissions of the unacknowledged data so far ("retrnsmt")
	Probes        uint64 // zero-window or loss probes sent unanswered ("timeout")
	UID           uint32 // the socket's owner
	Inode         uint64 // 0 for a socket no file refers to (TIME_WAIT)
}

// Retransmitting reports whether data to the other end is unacknowledged
// and being sent again: the retransmit timer with retransmissions, or the
// probe timer with probes unanswered (what a sender sees when the network
// drops its packets before they leave).
func (s Socket) Retransmitting() bool {
	return s.TxQueue > 0 && (s.Timer == 1 && s.Retrans > 0 || s.Timer == 4 && s.Probes > 0)
}

// ParseTCP reads a tcp or tcp6 table (the addresses as the kernel prints
// them: 32-bit words in the host's byte order). Rows it cannot read are
// left out; an error only for a file without the header.
func ParseTCP(b []byte) ([]Socket, error) {
	lines := bytes.Split(b, []byte{'\n'})
	if len(lines) == 0 || !bytes.Contains(lines[0], []byte("rem_address")) {
		return nil, errors.New("not a /proc/net/tcp table: no header with rem_address")
	}
	var out []Socket
	for _, line := range lines[1:] {
		if s, ok := parseRow(strings.Fields(string(line))); ok {
			out = append(out, s)
		}
	}
	return out, nil
}

// parseRow reads the fields of one row: sl local_address rem_address st
// tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode ...
func parseRow(f []string) (Socket, bool) {
	if len(f) < 10 {
		return Socket{}, false
	}
	local, ok1 := parseAddr(f[1])
	remote, ok2 := parseAddr(f[2])
	st, err1 := strconv.ParseUint(f[3], 16, 8)
	tx, _, ok3 := strings.Cut(f[4], ":")
	tr, _, ok4 := strings.Cut(f[5], ":")
	txq, err2 := strconv.ParseUint(tx, 16, 64)
	timer, err3 := strconv.ParseUint(tr, 16, 8)
	re, err4 := strconv.ParseUint(f[6], 16, 64)
	uid, err5 := strconv.ParseUint(f[7], 10, 32)
	probes, err6 := strconv.ParseUint(f[8], 10, 64)
	inode, err7 := strconv.ParseUint(f[9], 10, 64)
	if !ok1 || !ok2 || !ok3 || !ok4 || errors.Join(err1, err2, err3, err4, err5, err6, err7) != nil {
		return Socket{}, false
	}
	return Socket{Local: local, Remote: remote, State: int(st), TxQueue: txq, Timer: int(timer), Retrans: re,
		Probes: probes, UID: uint32(uid), Inode: inode}, true
}

// parseAddr reads "0200007F:734D" (IPv4) or the 32 hex digits of IPv6 and
// a port; an IPv4-mapped IPv6 address is read as IPv4.
func parseAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || (len(h) != 8 && len(h) != 32) {
		return netip.AddrPort{}, false
	}
	var raw [16]byte
	for i := 0; i < len(h)/8; i++ {
		w, err := strconv.ParseUint(h[8*i:8*i+8], 16, 32)
		if err != nil {
			return netip.AddrPort{}, false
		}
		binary.NativeEndian.PutUint32(raw[4*i:], uint32(w))
	}
	addr := netip.AddrFrom16(raw).Unmap()
	if len(h) == 8 {
		addr = netip.AddrFrom4([4]byte(raw[:4]))
	}
	return netip.AddrPortFrom(addr, uint16(port)), true
}

// ReadTCP reads dir/net/tcp and dir/net/tcp6 (dir: /proc, or a process's
// /proc/PID for its network namespace); a table that cannot be read or
// parsed is left out, and the error is the first such.
func ReadTCP(dir string) ([]Socket, error) {
	var out []Socket
	var first error
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join(dir, "net", table))
		if err == nil {
			var s []Socket
			s, err = ParseTCP(b)
			out = append(out, s...)
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return out, first
}
