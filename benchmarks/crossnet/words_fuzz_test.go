package crossnet

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseWords feeds arbitrary relay text (the job's AdminComment) to
// ParseWords. It must never panic, read only words of the run asked for,
// give each a coordinator and a positive count, and every word it reads
// must format back to a word that reads the same.
func FuzzParseWords(f *testing.F) {
	for _, s := range []string{
		"vigil-net:3:gpu001:62:gpu[007-008,050]",
		"site note vigil-net:2:gpu001:9:gpu009 vigil-net:3:gpu001:60:gpu007",
		"vigil-net:3:x:notanumber:n1 vigil-net:3::2:n1",
		"vigil-net:3:n1:1:n[1-3,5]\tvigil-net:3:n2:0:n4",
		"vigil-net:3:n1:1:n[1-",
		"vigil-net:::::",
		"",
	} {
		f.Add(s, uint32(3))
	}
	f.Fuzz(func(t *testing.T, text string, restart uint32) {
		words := ParseWords(text, restart)
		if len(words) > len(strings.Fields(text)) {
			t.Fatalf("%d words from %d fields", len(words), len(strings.Fields(text)))
		}
		for _, w := range words {
			if w.By == "" || strings.ContainsAny(w.By, ": \t\n") || w.Met < 1 {
				t.Fatalf("word %+v from %q", w, text)
			}
			again := ParseWords(FormatWord(restart, w), restart)
			if len(again) != 1 || again[0].By != w.By || again[0].Met != w.Met || !slices.Equal(again[0].CutOff, w.CutOff) {
				t.Fatalf("word %+v formats to %q, which reads %+v", w, FormatWord(restart, w), again)
			}
			if len(ParseWords(FormatWord(restart+1, w), restart)) != 0 {
				t.Fatalf("a word of run %d read as run %d", restart+1, restart)
			}
		}
	})
}
