package rendezvous

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

// allocated is how many bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestFrameAllocatedAsBytesArrive announces the largest frame the reader
// accepts and sends 100 bytes of it: the reader must not allocate the
// announced size up front.
func TestFrameAllocatedAsBytesArrive(t *testing.T) {
	in := binary.BigEndian.AppendUint32(nil, DefaultMaxMessage)
	in = append(in, bytes.Repeat([]byte{Version}, 100)...)
	var err error
	got := allocated(func() { _, err = ReadFrame(bytes.NewReader(in), DefaultMaxMessage) })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
	}
	if got > 4*frameChunk {
		t.Errorf("a 4 MiB frame with 100 bytes sent allocated %d bytes, want at most %d", got, 4*frameChunk)
	}
	// A whole large frame still reads back, byte for byte.
	body := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16+3)
	f := append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	back, err := ReadFrame(bytes.NewReader(f), DefaultMaxMessage)
	if err != nil || !bytes.Equal(back, body) {
		t.Fatalf("a %d-byte frame did not read back: %v", len(body), err)
	}
}

// TestHelloOverTheCapIsRefused sends the coordinator a first frame larger
// than MaxHello (but under MaxMessage): it is refused before its body is
// read, and the log says so.
func TestHelloOverTheCapIsRefused(t *testing.T) {
	s := newSim(t, 2, time.Second)
	done := make(chan []result, 1)
	go func() { done <- s.run(map[int]bool{1: true}, nil) }()
	addr := s.coordAddr()
	waitListening(t, addr)
	b := binary.BigEndian.AppendUint32(nil, MaxHello+1)
	b = append(b, Version, byte(KindHello))
	if got := hit(t, addr, b, true); len(got) != 0 {
		t.Errorf("the coordinator answered %d bytes", len(got))
	}
	<-done
	log := strings.Join(s.logged(), "\n")
	if !strings.Contains(log, "too large") || !strings.Contains(log, "at most 16384") {
		t.Errorf("no log line says the hello was too large:\n%s", log)
	}
}
