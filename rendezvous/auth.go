package rendezvous

import (
	"errors"
	"fmt"

	"github.com/vigil-hpc/vigil/cgo/munge"
)

// Authenticator seals what a node sends and opens what it receives.
// Open must reject a token that was altered, made with another key, or
// opened before (a replay), and must report the uid of the process that
// sealed it, as the issuer (munged, or a test key) vouches for it.
type Authenticator interface {
	// Seal returns a token that carries payload and this process's uid.
	Seal(payload []byte) ([]byte, error)
	// Open checks a token and returns its payload and the sealer's uid.
	// A token that is rejected (rather than one that could not be
	// checked) gives an error wrapping ErrAuth.
	Open(token []byte) (payload []byte, uid uint32, err error)
}

// ErrAuth is wrapped by every error that rejects a message for its seal:
// invalid, replayed, of the wrong uid, or not matching the message.
var ErrAuth = errors.New("authentication failed")

// Munge seals with MUNGE credentials: the uid in a credential is the one
// munged saw on its socket, and munged rejects replays and expired
// credentials (MUNGE's time to live, 300 s unless configured). The
// credential's payload is the message's binding, so the credential is
// tied to the job, the sender, the recipient, the round and the payload.
type Munge struct {
	// Client is the opened libmunge.
	Client *munge.Client
}

// Seal implements Authenticator with munge_encode.
func (m Munge) Seal(payload []byte) ([]byte, error) {
	cred, err := m.Client.Encode(payload)
	if err != nil {
		return nil, err
	}
	return []byte(cred), nil
}

// Open implements Authenticator with munge_decode. Credentials munged
// rejects wrap ErrAuth; a munged that cannot be reached does not.
func (m Munge) Open(token []byte) ([]byte, uint32, error) {
	d, err := m.Client.Decode(string(token))
	if err != nil {
		if errors.Is(err, munge.ErrCredential) {
			return nil, 0, fmt.Errorf("%w: %w", ErrAuth, err)
		}
		return nil, 0, err
	}
	return d.Payload, d.UID, nil
}
