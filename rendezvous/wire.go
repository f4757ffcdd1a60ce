package rendezvous

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Version is the wire format's version, the first byte of every message.
// A message of another version is rejected.
const Version = 1

// Size limits of the wire format, in bytes.
const (
	// DefaultMaxMessage is the largest message body read when
	// Config.MaxMessage is 0: a roster of 4096 nodes with small offers fits.
	DefaultMaxMessage = 4 << 20
	// HardMaxMessage is the largest MaxMessage accepted.
	HardMaxMessage = 64 << 20
	// MaxJob is the longest job id.
	MaxJob = 64
	// MaxNode is the longest node name (a DNS name).
	MaxNode = 255
	// MaxLabel is the longest round label.
	MaxLabel = 64
	// MaxToken is the longest seal (a MUNGE credential of a 32-byte
	// binding is about 200 bytes).
	MaxToken = 4096
	// fixedHeader is version, kind, round and restart.
	fixedHeader = 1 + 1 + 4 + 4
	// minBody is the fixed header, four empty strings, an empty payload
	// and an empty token.
	minBody = fixedHeader + 4*2 + 4 + 2
)

// Kind says what a message is.
type Kind uint8

// Message kinds.
const (
	// KindHello is a member's join request: its address and offer.
	KindHello Kind = 1
	// KindRoster is the coordinator's answer: who joined, and where.
	KindRoster Kind = 2
	// KindGather carries a member's contribution to a Gather round.
	KindGather Kind = 3
	// KindBroadcast carries the coordinator's word in a Broadcast or
	// Scatter round.
	KindBroadcast Kind = 4
)

func (k Kind) String() string {
	switch k {
	case KindHello:
		return "hello"
	case KindRoster:
		return "roster"
	case KindGather:
		return "gather"
	case KindBroadcast:
		return "broadcast"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

func (k Kind) valid() bool { return k >= KindHello && k <= KindBroadcast }

// Envelope is one message. Every field but Token is covered by the seal:
// Token is the Authenticator's seal of Binding().
type Envelope struct {
	// Kind says what the message is.
	Kind Kind
	// Round numbers the exchanges of a session: 0 for hello and roster,
	// then 1, 2, ... for each Gather, Broadcast or Scatter.
	Round uint32
	// Job is the Slurm job id (SLURM_JOB_ID).
	Job string
	// Restart is the job's restart count (SLURM_JOB_RESTART_COUNT): a
	// requeued job keeps its id, and its old messages must not count.
	Restart uint32
	// From and To are node names (SLURMD_NODENAME).
	From, To string
	// Label names the round ("links", "verdicts"); both ends must agree.
	Label string
	// Payload is the message's data; the seal covers its SHA-256.
	Payload []byte
	// Token is the seal.
	Token []byte
}

// Errors of the wire format. Every decoding error wraps ErrMalformed.
var (
	// ErrMalformed is wrapped by every error about bytes that are not a
	// message of this format.
	ErrMalformed = errors.New("malformed message")
	// ErrTooLarge is wrapped (with ErrMalformed) when a frame announces
	// more bytes than the reader accepts.
	ErrTooLarge = errors.New("message too large")
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// bindingTag starts every binding, so that a seal made for something else
// is never a valid seal of a message.
const bindingTag = "vigil-rendezvous\x00"

// header appends the sealed header fields of e.
func (e *Envelope) header(b []byte) []byte {
	b = append(b, Version, byte(e.Kind))
	b = binary.BigEndian.AppendUint32(b, e.Round)
	b = binary.BigEndian.AppendUint32(b, e.Restart)
	for _, s := range []string{e.Job, e.From, e.To, e.Label} {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
		b = append(b, s...)
	}
	return b
}

// Binding is what the seal covers: a tag, every header field, and the
// SHA-256 of the payload. Sealing a digest keeps the seal small whatever
// the payload's size.
func (e *Envelope) Binding() []byte {
	sum := sha256.Sum256(e.Payload)
	return e.bindingWithSum(sum)
}

func (e *Envelope) bindingWithSum(sum [sha256.Size]byte) []byte {
	b := make([]byte, 0, len(bindingTag)+fixedHeader+8+len(e.Job)+len(e.From)+len(e.To)+len(e.Label)+sha256.Size)
	b = append(b, bindingTag...)
	b = e.header(b)
	return append(b, sum[:]...)
}

// check validates the fields' sizes; Encode refuses what Decode would.
func (e *Envelope) check() error {
	switch {
	case !e.Kind.valid():
		return malformed("unknown kind %d", uint8(e.Kind))
	case len(e.Job) == 0 || len(e.Job) > MaxJob:
		return malformed("job id of %d bytes (1 to %d)", len(e.Job), MaxJob)
	case len(e.From) == 0 || len(e.From) > MaxNode:
		return malformed("sender name of %d bytes (1 to %d)", len(e.From), MaxNode)
	case len(e.To) == 0 || len(e.To) > MaxNode:
		return malformed("recipient name of %d bytes (1 to %d)", len(e.To), MaxNode)
	case len(e.Label) > MaxLabel:
		return malformed("label of %d bytes (at most %d)", len(e.Label), MaxLabel)
	case len(e.Token) == 0 || len(e.Token) > MaxToken:
		return malformed("seal of %d bytes (1 to %d)", len(e.Token), MaxToken)
	}
	return nil
}

// Encode writes e as a message body (without the frame's length prefix).
func (e *Envelope) Encode() ([]byte, error) {
	return e.encode(0)
}

// Frame writes e as a frame: the body's length, then the body.
func (e *Envelope) Frame() ([]byte, error) {
	b, err := e.encode(4)
	if err != nil {
		return nil, err
	}
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b, nil
}

// encode writes the body after room bytes left for a prefix.
func (e *Envelope) encode(room int) ([]byte, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	b := make([]byte, room, room+minBody+len(e.Job)+len(e.From)+len(e.To)+len(e.Label)+len(e.Payload)+len(e.Token))
	b = e.header(b)
	b = binary.BigEndian.AppendUint32(b, uint32(len(e.Payload)))
	b = append(b, e.Payload...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(e.Token)))
	return append(b, e.Token...), nil
}

// Decode parses a message body. It never allocates more than the body's
// size, and checks the format only: whether the seal is valid is for the
// session to decide. The returned Envelope's slices alias body.
func Decode(body []byte) (*Envelope, error) {
	if len(body) < minBody {
		return nil, malformed("%d bytes, shorter than any message (%d)", len(body), minBody)
	}
	if body[0] != Version {
		return nil, malformed("version %d, want %d", body[0], Version)
	}
	e := &Envelope{Kind: Kind(body[1])}
	e.Round = binary.BigEndian.Uint32(body[2:])
	e.Restart = binary.BigEndian.Uint32(body[6:])
	p := body[fixedHeader:]
	var err error
	for _, f := range []*string{&e.Job, &e.From, &e.To, &e.Label} {
		var s []byte
		if s, p, err = take(p, 2); err != nil {
			return nil, err
		}
		*f = string(s)
	}
	if e.Payload, p, err = take(p, 4); err != nil {
		return nil, err
	}
	if e.Token, p, err = take(p, 2); err != nil {
		return nil, err
	}
	if len(p) != 0 {
		return nil, malformed("%d bytes after the seal", len(p))
	}
	if err := e.check(); err != nil {
		return nil, err
	}
	return e, nil
}

// take reads a length of w bytes (2 or 4, big-endian) and that many bytes.
func take(p []byte, w int) (field, rest []byte, err error) {
	if len(p) < w {
		return nil, nil, malformed("truncated length field")
	}
	var n uint64
	if w == 2 {
		n = uint64(binary.BigEndian.Uint16(p))
	} else {
		n = uint64(binary.BigEndian.Uint32(p))
	}
	p = p[w:]
	if n > uint64(len(p)) {
		return nil, nil, malformed("field of %d bytes with %d left", n, len(p))
	}
	return p[:n:n], p[n:], nil
}

// ReadFrame reads one length-prefixed body of at most max bytes. A longer
// announced length is rejected before anything is allocated, and the body
// is allocated as its bytes arrive (frameChunk at a time), so a sender that
// announces a large frame and sends little costs little memory; a short
// read is io.ErrUnexpectedEOF (io.EOF when nothing at all was read).
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	size := binary.BigEndian.Uint32(n[:])
	if uint64(size) > uint64(max) {
		return nil, fmt.Errorf("%w: %w: frame of %d bytes, at most %d", ErrMalformed, ErrTooLarge, size, max)
	}
	if size < minBody {
		return nil, malformed("frame of %d bytes, shorter than any message (%d)", size, minBody)
	}
	body := make([]byte, 0, min(int(size), frameChunk))
	for len(body) < int(size) {
		k := min(int(size)-len(body), frameChunk)
		body = slices.Grow(body, k)
		got, err := io.ReadFull(r, body[len(body):len(body)+k])
		body = body[:len(body)+got]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return body, nil
}

// frameChunk is how much of a frame's body ReadFrame allocates ahead of
// the bytes that arrive.
const frameChunk = 16 << 10

// MaxHello bounds the first frame read from a connection, before anything
// on it is authenticated: a hello (header, an address, an offer of at most
// MaxOffer bytes in JSON's base64, a seal) fits.
const MaxHello = 16 << 10

// MaxOffer is the largest Config.Offer.
const MaxOffer = 4 << 10
