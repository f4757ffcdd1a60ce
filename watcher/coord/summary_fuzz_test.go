package coord

import (
	"testing"

	"github.com/vigil-hpc/vigil/watcher/hang/digest"
)

// FuzzDecodeSummary feeds arbitrary payloads to the summary decoder, as a
// member's sealed payload reaches the coordinator: it never panics, accepts
// only the detector's states, and what it accepts encodes and decodes to a
// summary of the same state.
func FuzzDecodeSummary(f *testing.F) {
	for _, s := range []Summary{{State: digest.StateOK}, {State: digest.StateHung}, {State: digest.StateSuspect}} {
		b, err := s.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"state":"exploded"}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeSummary(b)
		if err != nil {
			return
		}
		switch s.State {
		case digest.StateOK, digest.StateSuspect, digest.StateHung:
		default:
			t.Fatalf("accepted state %q", s.State)
		}
		again, err := s.Encode()
		if err != nil {
			t.Fatalf("encode: %v", err)
		}
		back, err := DecodeSummary(again)
		if err != nil || back.State != s.State {
			t.Fatalf("round trip: %+v %v", back, err)
		}
	})
}
