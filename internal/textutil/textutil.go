// Package textutil shortens text for messages, records and reports: the
// head of a string (Cut, CutWithin), its end (Tail) and the last lines of a
// stream (LineTail). Each caller chose its bound, its mark and whether the
// bound counts the mark; those stay parameters here.
package textutil

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Cut returns s when it is at most n bytes long, else its first n bytes
// followed by mark ("...", "…", or "" for a silent cut). The bound counts
// bytes, not runes, and leaves the mark out: the result can be
// n+len(mark) bytes long and can end in part of a rune.
func Cut(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	return s[:max(n, 0)] + mark
}

// CutWithin returns s when it is at most n bytes long, else its head cut
// on a rune boundary and followed by mark so that the whole, mark
// included, is at most n bytes: for fields with a hard byte limit (a
// Slurm job comment). A bound shorter than the mark gives the mark alone.
func CutWithin(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	s = s[:max(n-len(mark), 0)]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + mark
}

// Tail returns s when it is at most n bytes long, else mark followed by
// its last n bytes. Like Cut it counts bytes and leaves the mark out.
func Tail(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	return mark + s[len(s)-max(n, 0):]
}

// maxPartial is how long an unfinished line may grow before LineTail keeps
// it as a line of its own.
const maxPartial = 4096

// LineTail is an io.Writer that keeps the last lines written to it (a
// process's stderr): each line without its trailing spaces and carriage
// return, blank lines left out, each line cut to Width bytes (Cut with
// Mark). An unfinished line over 4096 bytes is kept as a line. It is safe
// for concurrent use.
type LineTail struct {
	// Max is how many lines it keeps.
	Max int
	// Width and Mark cut each kept line (Cut).
	Width int
	Mark  string

	mu      sync.Mutex
	partial []byte
	kept    []string
}

// Write implements io.Writer; it never fails.
func (t *LineTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := strings.IndexByte(string(t.partial), '\n')
		if i < 0 {
			break
		}
		t.keep(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
	}
	if len(t.partial) > maxPartial {
		t.keep(string(t.partial))
		t.partial = nil
	}
	return len(p), nil
}

func (t *LineTail) keep(s string) {
	if s = strings.TrimRight(s, "\r "); s == "" {
		return
	}
	t.kept = append(t.kept, Cut(s, t.Width, t.Mark))
	if len(t.kept) > t.Max {
		t.kept = t.kept[len(t.kept)-t.Max:]
	}
}

// Lines returns the lines kept, oldest first, the unfinished last line
// included (it is kept from then on as a line).
func (t *LineTail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.partial) > 0 {
		t.keep(string(t.partial))
		t.partial = nil
	}
	return append([]string(nil), t.kept...)
}
