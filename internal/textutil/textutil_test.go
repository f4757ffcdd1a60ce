package textutil

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestCut(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		mark string
		want string
	}{
		{"short", 10, "...", "short"},
		{"exactly10!", 10, "...", "exactly10!"},
		{"eleven long", 10, "...", "eleven lon..."},
		{"eleven long", 10, "…", "eleven lon…"},
		{"eleven long", 10, "", "eleven lon"},
		{"abc", 0, "...", "..."},
		{"abc", -1, "", ""},
		{"", 0, "...", ""},
	} {
		assert.Equal(t, c.want, Cut(c.s, c.n, c.mark), "Cut(%q, %d, %q)", c.s, c.n, c.mark)
	}
	// The bound counts bytes: a cut may split a rune (callers that must
	// not use CutWithin).
	assert.Equal(t, "a\xc3...", Cut("aéb", 2, "..."))
}

func TestCutWithin(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		mark string
		want string
	}{
		{"short", 10, "...", "short"},
		{"exactly10!", 10, "...", "exactly10!"},
		{"eleven long", 10, "...", "eleven ..."},
		{"eleven long", 10, "…", "eleven …"},
		{"ab", 1, "...", "..."},
		{"aébcd", 5, "...", "a..."},   // "aé" is 3 bytes: 3+3 > 5, é is not split
		{"aébcde", 6, "...", "aé..."}, // 6 bytes exactly
		{"日本語テキスト", 10, "...", "日本..."},
		{"ab—cd", 6, "...", "ab..."}, // the em dash is 3 bytes and is not split
	} {
		got := CutWithin(c.s, c.n, c.mark)
		assert.Equal(t, c.want, got, "CutWithin(%q, %d, %q)", c.s, c.n, c.mark)
		assert.True(t, utf8.ValidString(got), got)
		if len(c.s) > c.n && c.n >= len(c.mark) {
			assert.LessOrEqual(t, len(got), c.n, "the mark counts against the bound")
		}
	}
}

func TestTail(t *testing.T) {
	assert.Equal(t, "short", Tail("short", 10, "…"))
	assert.Equal(t, "exactly10!", Tail("exactly10!", 10, "…"))
	assert.Equal(t, "…leven long", Tail("eleven long", 10, "…"))
	assert.Equal(t, "...", Tail("abc", 0, "..."))
	long := strings.Repeat("x", 1000) + "the end"
	assert.Equal(t, "…"+long[len(long)-300:], Tail(long, 300, "…"))
}

func TestLineTail(t *testing.T) {
	lt := &LineTail{Max: 3, Width: 8, Mark: "…"}
	fmt.Fprint(lt, "one\r\n\n  \ntwo   \nthr")
	fmt.Fprint(lt, "ee\nfour is a long line\nfi")
	assert.Equal(t, []string{"three", "four is …", "fi"}, lt.Lines(), "blank lines left out, trailing spaces and \\r trimmed, the last 3 kept")
	lt = &LineTail{Max: 3, Width: 8, Mark: "…"}
	fmt.Fprint(lt, "a\nb\nc\nd\nunfinished")
	assert.Equal(t, []string{"c", "d", "unfinish…"}, lt.Lines(), "the unfinished line counts, and only the last Max stay")
	assert.Equal(t, []string{"c", "d", "unfinish…"}, lt.Lines(), "Lines again gives the same")

	lt = &LineTail{Max: 2, Width: 10, Mark: "…"}
	fmt.Fprint(lt, strings.Repeat("y", maxPartial+1))
	assert.Equal(t, []string{strings.Repeat("y", 10) + "…"}, lt.Lines(), "a line without end is kept once over the bound")

	lt = &LineTail{Max: 1000, Width: 100}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				fmt.Fprintf(lt, "writer %d line %d\n", i, j)
			}
		}()
	}
	wg.Wait()
	assert.Len(t, lt.Lines(), 400, "no line lost or torn between writers")
}
