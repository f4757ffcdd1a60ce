// Package munge binds the MUNGE client library (libmunge.so.2), the
// authentication service every Slurm cluster already runs: a credential made
// by munge_encode carries the caller's uid and gid and a payload, and only a
// munged holding the same key can decode it. The library is opened with
// dlopen when Open is called; no munge.h is needed to build. Prototypes and
// constants below follow munge.h of MUNGE 0.5.
package munge

/*
#include <stdlib.h>
#include <sys/types.h>

// Types as declared in munge.h.
typedef struct munge_ctx *munge_ctx_t;
typedef int munge_err_t;

static munge_err_t vigil_munge_encode(void *f, char **cred, munge_ctx_t ctx, const void *buf, int len) {
	return ((munge_err_t (*)(char **, munge_ctx_t, const void *, int))f)(cred, ctx, buf, len);
}
static munge_err_t vigil_munge_decode(void *f, const char *cred, munge_ctx_t ctx, void **buf, int *len, uid_t *uid, gid_t *gid) {
	return ((munge_err_t (*)(const char *, munge_ctx_t, void **, int *, uid_t *, gid_t *))f)(cred, ctx, buf, len, uid, gid);
}
static const char *vigil_munge_strerror(void *f, munge_err_t e) {
	return ((const char *(*)(munge_err_t))f)(e);
}
static munge_ctx_t vigil_munge_ctx_create(void *f) {
	return ((munge_ctx_t (*)(void))f)();
}
static void vigil_munge_ctx_destroy(void *f, munge_ctx_t ctx) {
	((void (*)(munge_ctx_t))f)(ctx);
}
static const char *vigil_munge_ctx_strerror(void *f, munge_ctx_t ctx) {
	return ((const char *(*)(munge_ctx_t))f)(ctx);
}
// munge_ctx_set is variadic: call it through a variadic pointer so that the
// calling convention is right.
static munge_err_t vigil_munge_ctx_set_str(void *f, munge_ctx_t ctx, int opt, const char *s) {
	return ((munge_err_t (*)(munge_ctx_t, int, ...))f)(ctx, opt, s);
}
static munge_err_t vigil_munge_ctx_set_int(void *f, munge_ctx_t ctx, int opt, int v) {
	return ((munge_err_t (*)(munge_ctx_t, int, ...))f)(ctx, opt, v);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// DefaultNames are the file names tried for the client library.
var DefaultNames = []string{"libmunge.so.2"}

// DefaultSocket is munged's socket when none is configured.
const DefaultSocket = "/run/munge/munge.socket.2"

// Options of munge_ctx_set (munge_opt_t in munge.h).
const (
	optTTL    = 4 // MUNGE_OPT_TTL
	optSocket = 8 // MUNGE_OPT_SOCKET
)

// MaxPayload is the largest payload Encode accepts, in bytes. munged's own
// request limit is larger; credentials are for small bindings, not bulk data.
const MaxPayload = 1 << 20

// Code is a munge_err_t.
type Code int

// munge_err_t values (munge.h, enum munge_err), in the header's order.
const (
	Success             Code = iota // EMUNGE_SUCCESS
	ErrSnafu                        // EMUNGE_SNAFU
	ErrBadArg                       // EMUNGE_BAD_ARG
	ErrBadLength                    // EMUNGE_BAD_LENGTH
	ErrOverflow                     // EMUNGE_OVERFLOW
	ErrNoMemory                     // EMUNGE_NO_MEMORY
	ErrSocket                       // EMUNGE_SOCKET
	ErrTimeout                      // EMUNGE_TIMEOUT
	ErrBadCred                      // EMUNGE_BAD_CRED
	ErrBadVersion                   // EMUNGE_BAD_VERSION
	ErrBadCipher                    // EMUNGE_BAD_CIPHER
	ErrBadMAC                       // EMUNGE_BAD_MAC
	ErrBadZip                       // EMUNGE_BAD_ZIP
	ErrBadRealm                     // EMUNGE_BAD_REALM
	ErrCredInvalid                  // EMUNGE_CRED_INVALID
	ErrCredExpired                  // EMUNGE_CRED_EXPIRED
	ErrCredRewound                  // EMUNGE_CRED_REWOUND
	ErrCredReplayed                 // EMUNGE_CRED_REPLAYED
	ErrCredUnauthorized             // EMUNGE_CRED_UNAUTHORIZED
)

// ErrCredential is wrapped by errors that say a credential was presented
// and rejected (invalid, expired, rewound, replayed, unauthorized, bad MAC):
// the peer, not the local service, is at fault.
var ErrCredential = errors.New("credential rejected")

// Error is a failed libmunge call, with munge's own text.
type Error struct {
	// Op is the libmunge function that failed ("munge_decode").
	Op string
	// Code is its munge_err_t.
	Code Code
	// Text is munge's message (from the context when it has one, else
	// munge_strerror).
	Text string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s (munge error %d)", e.Op, e.Text, int(e.Code))
}

// Is lets errors.Is match ErrCredential and a Code.
func (e *Error) Is(target error) bool {
	if c, ok := target.(Code); ok {
		return c == e.Code
	}
	if target == ErrCredential {
		switch e.Code {
		case ErrBadCred, ErrBadVersion, ErrBadCipher, ErrBadMAC, ErrBadZip, ErrBadRealm,
			ErrCredInvalid, ErrCredExpired, ErrCredRewound, ErrCredReplayed, ErrCredUnauthorized:
			return true
		}
	}
	return false
}

// Error makes a Code usable as an errors.Is target.
func (c Code) Error() string { return fmt.Sprintf("munge error %d", int(c)) }

// Client is an opened libmunge bound to one munged socket. It is safe for
// concurrent use: every call makes its own context.
type Client struct {
	lib    *dl.Library
	socket string
	ttl    int
	f      struct {
		encode, decode, strerror, ctxCreate, ctxDestroy, ctxStrerror, ctxSet unsafe.Pointer
	}
}

// Config says which library and which munged to use.
type Config struct {
	// Lib says where to look for libmunge; empty Names means DefaultNames.
	Lib dl.Options
	// Socket is munged's socket path; empty means libmunge's default
	// (DefaultSocket).
	Socket string
	// TTL is the credential's time to live in seconds; 0 means munged's
	// default (300 s).
	TTL int
}

// Open loads libmunge and resolves its symbols. A missing library or
// symbol is an error (wrapping dl.ErrNotFound or dl.ErrSymbol). Open does
// not contact munged.
func Open(c Config) (*Client, error) {
	m := &Client{socket: c.Socket, ttl: c.TTL}
	f := &m.f
	lib, err := dl.Load(c.Lib, DefaultNames, map[string]*unsafe.Pointer{
		"munge_encode": &f.encode, "munge_decode": &f.decode, "munge_strerror": &f.strerror,
		"munge_ctx_create": &f.ctxCreate, "munge_ctx_destroy": &f.ctxDestroy,
		"munge_ctx_strerror": &f.ctxStrerror, "munge_ctx_set": &f.ctxSet,
	})
	if err != nil {
		return nil, err
	}
	m.lib = lib
	return m, nil
}

// Path is the library file that was opened.
func (m *Client) Path() string { return m.lib.Path }

// Close unloads the library; the Client must not be used afterwards.
func (m *Client) Close() error { return m.lib.Close() }

// ctx makes a context with the socket and TTL set; the caller destroys it.
func (m *Client) ctx(op string) (C.munge_ctx_t, error) {
	ctx := C.vigil_munge_ctx_create(m.f.ctxCreate)
	if ctx == nil {
		return nil, &Error{Op: op, Code: ErrNoMemory, Text: "munge_ctx_create failed"}
	}
	if m.socket != "" {
		cs := C.CString(m.socket)
		defer C.free(unsafe.Pointer(cs))
		if rc := C.vigil_munge_ctx_set_str(m.f.ctxSet, ctx, optSocket, cs); rc != 0 {
			err := m.err(op+": MUNGE_OPT_SOCKET", rc, ctx)
			C.vigil_munge_ctx_destroy(m.f.ctxDestroy, ctx)
			return nil, err
		}
	}
	if m.ttl > 0 {
		if rc := C.vigil_munge_ctx_set_int(m.f.ctxSet, ctx, optTTL, C.int(m.ttl)); rc != 0 {
			err := m.err(op+": MUNGE_OPT_TTL", rc, ctx)
			C.vigil_munge_ctx_destroy(m.f.ctxDestroy, ctx)
			return nil, err
		}
	}
	return ctx, nil
}

func (m *Client) err(op string, rc C.munge_err_t, ctx C.munge_ctx_t) error {
	e := &Error{Op: op, Code: Code(rc)}
	if ctx != nil {
		if s := C.vigil_munge_ctx_strerror(m.f.ctxStrerror, ctx); s != nil {
			e.Text = C.GoString(s)
		}
	}
	if e.Text == "" {
		if s := C.vigil_munge_strerror(m.f.strerror, rc); s != nil {
			e.Text = C.GoString(s)
		}
	}
	if e.Text == "" {
		e.Text = "unknown error"
	}
	return e
}

// Encode asks munged for a credential carrying payload and the caller's uid
// and gid. The credential is printable text.
func (m *Client) Encode(payload []byte) (string, error) {
	if len(payload) > MaxPayload {
		return "", &Error{Op: "munge_encode", Code: ErrBadLength,
			Text: fmt.Sprintf("payload of %d bytes exceeds %d", len(payload), MaxPayload)}
	}
	ctx, err := m.ctx("munge_encode")
	if err != nil {
		return "", err
	}
	defer C.vigil_munge_ctx_destroy(m.f.ctxDestroy, ctx)
	var buf unsafe.Pointer
	if len(payload) > 0 {
		buf = C.CBytes(payload)
		defer C.free(buf)
	}
	var cred *C.char
	rc := C.vigil_munge_encode(m.f.encode, &cred, ctx, buf, C.int(len(payload)))
	if cred != nil {
		defer C.free(unsafe.Pointer(cred))
	}
	if rc != 0 {
		return "", m.err("munge_encode", rc, ctx)
	}
	if cred == nil {
		return "", &Error{Op: "munge_encode", Code: ErrSnafu, Text: "no credential returned"}
	}
	return C.GoString(cred), nil
}

// Decoded is what a valid credential carries.
type Decoded struct {
	// Payload is the data given to Encode.
	Payload []byte
	// UID and GID identify the process that made the credential.
	UID, GID uint32
}

// Decode asks munged to check a credential: its MAC, its time to live, and
// that this munged has not decoded it before (a replay is
// ErrCredReplayed). Any failure is an *Error; those that reject the
// credential itself wrap ErrCredential. A credential is never returned in
// part: on error Decoded is empty.
func (m *Client) Decode(cred string) (Decoded, error) {
	ctx, err := m.ctx("munge_decode")
	if err != nil {
		return Decoded{}, err
	}
	defer C.vigil_munge_ctx_destroy(m.f.ctxDestroy, ctx)
	cs := C.CString(cred)
	defer C.free(unsafe.Pointer(cs))
	var buf unsafe.Pointer
	var n C.int
	var uid C.uid_t
	var gid C.gid_t
	rc := C.vigil_munge_decode(m.f.decode, cs, ctx, &buf, &n, &uid, &gid)
	// munge_decode may hand back the payload of an expired or replayed
	// credential; it is freed and never used.
	if buf != nil {
		defer C.free(buf)
	}
	if rc != 0 {
		return Decoded{}, m.err("munge_decode", rc, ctx)
	}
	d := Decoded{UID: uint32(uid), GID: uint32(gid)}
	if buf != nil && n > 0 {
		d.Payload = C.GoBytes(buf, n)
	}
	return d, nil
}
