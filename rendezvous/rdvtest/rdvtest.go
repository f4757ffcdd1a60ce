// Package rdvtest has what tests of the rendezvous and of the checks built
// on it need: an HMAC authenticator that stands in for MUNGE, and node
// names with one loopback address each for simulated clusters.
package rdvtest

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrAuth is wrapped by every rejection of HMAC.Open. The rendezvous
// checks for its own ErrAuth; callers that need it wrap both.
var ErrAuth = errors.New("authentication failed")

// HMAC is a test Authenticator: tokens are HMAC-SHA256 under a shared key
// over a random nonce, the claimed uid, the time of sealing and the
// payload. Like munged, Open rejects a token it has opened before (each
// HMAC keeps its own seen-set, as each node has its own munged), one
// older than TTL, and one made with another key. The uid is the one
// given to New: the key stands for munged's trust.
type HMAC struct {
	key []byte
	uid uint32
	// TTL is how long a token stays valid after sealing (default 5 min,
	// MUNGE's default).
	TTL time.Duration
	// Now is the clock (default time.Now).
	Now  func() time.Time
	mu   sync.Mutex
	seen map[[nonceLen]byte]time.Time
}

const (
	tokenTag  = 'H'
	nonceLen  = 16
	macLen    = sha256.Size
	tokenHead = 1 + nonceLen + 4 + 8
)

// New returns an HMAC authenticator whose tokens carry uid.
func New(key []byte, uid uint32) *HMAC {
	return &HMAC{key: append([]byte(nil), key...), uid: uid, TTL: 5 * time.Minute, Now: time.Now,
		seen: map[[nonceLen]byte]time.Time{}}
}

func (h *HMAC) mac(b []byte) []byte {
	m := hmac.New(sha256.New, h.key)
	m.Write(b)
	return m.Sum(nil)
}

// Seal implements the rendezvous' Authenticator.
func (h *HMAC) Seal(payload []byte) ([]byte, error) {
	b := make([]byte, tokenHead, tokenHead+len(payload)+macLen)
	b[0] = tokenTag
	if _, err := rand.Read(b[1 : 1+nonceLen]); err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint32(b[1+nonceLen:], h.uid)
	binary.BigEndian.PutUint64(b[1+nonceLen+4:], uint64(h.Now().UnixNano()))
	b = append(b, payload...)
	return append(b, h.mac(b)...), nil
}

// Open implements the rendezvous' Authenticator.
func (h *HMAC) Open(token []byte) ([]byte, uint32, error) {
	if len(token) < tokenHead+macLen || token[0] != tokenTag {
		return nil, 0, fmt.Errorf("%w: not a test token", ErrAuth)
	}
	body, sum := token[:len(token)-macLen], token[len(token)-macLen:]
	if !hmac.Equal(h.mac(body), sum) {
		return nil, 0, fmt.Errorf("%w: bad MAC", ErrAuth)
	}
	var nonce [nonceLen]byte
	copy(nonce[:], body[1:])
	uid := binary.BigEndian.Uint32(body[1+nonceLen:])
	sealed := time.Unix(0, int64(binary.BigEndian.Uint64(body[1+nonceLen+4:])))
	now := h.Now()
	if now.Sub(sealed) > h.TTL {
		return nil, 0, fmt.Errorf("%w: expired token (sealed %s ago)", ErrAuth, now.Sub(sealed).Round(time.Millisecond))
	}
	if sealed.Sub(now) > h.TTL {
		return nil, 0, fmt.Errorf("%w: token from the future", ErrAuth)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.seen[nonce]; ok {
		return nil, 0, fmt.Errorf("%w: replayed token", ErrAuth)
	}
	// Forget what has expired anyway; the set stays bounded by the
	// tokens of one TTL.
	for n, t := range h.seen {
		if now.Sub(t) > h.TTL {
			delete(h.seen, n)
		}
	}
	h.seen[nonce] = sealed
	return append([]byte(nil), body[tokenHead:]...), uid, nil
}

// Node returns the name of simulated node i (0-based): "sim0001".
func Node(i int) string { return fmt.Sprintf("sim%04d", i+1) }

// Addr returns the loopback address of simulated node i (0-based), one per
// node: 127.0.1.1 for node 0, up to 254 per third octet. Every 127.0.0.0/8
// address works on Linux without configuration. It serves 64,770 nodes.
func Addr(i int) string { return fmt.Sprintf("127.0.%d.%d", 1+i/254, 1+i%254) }

// Cluster returns n node names and an address for each.
func Cluster(n int) ([]string, map[string]string) {
	names := make([]string, n)
	addrs := make(map[string]string, n)
	for i := range names {
		names[i] = Node(i)
		addrs[names[i]] = Addr(i)
	}
	return names, addrs
}
