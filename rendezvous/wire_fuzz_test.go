package rendezvous

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/vigil-hpc/vigil/rendezvous/rdvtest"
)

// fuzzMax is the frame limit under fuzzing: small, to show that larger
// announced lengths are refused before any allocation.
const fuzzMax = 1 << 12

// FuzzDecode feeds arbitrary bytes to the frame reader, the decoder and
// the session's checks. It must never panic, never read a frame longer
// than the limit, re-encode every accepted body to the same bytes, and
// never accept a message: the seeds are sealed with a key the receiver
// does not hold, so no input carries a valid seal.
func FuzzDecode(f *testing.F) {
	fuzzer := rdvtest.New([]byte("the fuzzer's key"), 0)
	for _, e := range []*Envelope{
		{Kind: KindHello, Job: "4242", Restart: 1, From: "n2", To: "n1", Payload: []byte(`{"addr":"127.0.1.2"}`)},
		{Kind: KindGather, Round: 3, Job: "4242", Restart: 1, From: "n2", To: "n1", Label: "measure", Payload: []byte(`{"gbps":190}`)},
		{Kind: KindRoster, Job: "4242", Restart: 1, From: "n1", To: "n2", Payload: encodeRoster(Roster{Coordinator: "n1", Members: []Member{
			{Name: "n1", Present: true, Addr: "127.0.1.1"}, {Name: "n2", Present: true, Addr: "127.0.1.2", Offer: []byte("x")}, {Name: "n3"}}})},
		{Kind: KindBroadcast, Round: 4, Job: "4242", Restart: 1, From: "n1", To: "n2", Label: "verdicts"},
	} {
		e.Token, _ = fuzzer.Seal(e.Binding())
		body, err := e.Encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, []byte{Version})
	f.Add([]byte{0, 0, 0, 3}, []byte("abc"))
	f.Add([]byte{}, []byte{})

	f.Fuzz(func(t *testing.T, prefix, body []byte) {
		// The frame reader on the raw stream.
		in := append(append([]byte(nil), prefix...), body...)
		if got, err := ReadFrame(bytes.NewReader(in), fuzzMax); err == nil {
			if len(got) > fuzzMax {
				t.Fatalf("read a frame of %d bytes, limit %d", len(got), fuzzMax)
			}
		} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("ReadFrame error %v is none of malformed, EOF, short read", err)
		}

		e, err := Decode(body)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode error %v does not wrap ErrMalformed", err)
			}
			return
		}
		again, err := e.Encode()
		if err != nil || !bytes.Equal(again, body) {
			t.Fatalf("decoded body does not re-encode to itself: %v", err)
		}
		s := bare(t, "n1", []string{"n1", "n2", "n3"}, rdvtest.New(testKey, 0))
		s.cfg.Restart = e.Restart
		s.cfg.Job = e.Job
		if err := s.verify(e, expect{kind: e.Kind, round: e.Round, label: e.Label}); err == nil {
			t.Fatalf("message without a valid seal accepted: %+v", e)
		}
		// The payload parsers must not panic either.
		if r, err := decodeRoster(e.Payload, s.nodes, 0); err == nil {
			if again := encodeRoster(r); !bytes.Equal(again, e.Payload) {
				t.Fatalf("roster does not re-encode to itself")
			}
		}
	})
}
