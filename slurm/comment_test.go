package slurm

import "testing"

func TestSplitJoinComment(t *testing.T) {
	for _, tt := range []struct{ in, user, vigil string }{
		{"", "", ""},
		{"my note", "my note", ""},
		{"vigil: passed (3 s)", "", "vigil: passed (3 s)"},
		{"my note; vigil: passed (3 s)", "my note", "vigil: passed (3 s)"},
		{"a; vigil: old; vigil: hung since T on n1", "a; vigil: old", "vigil: hung since T on n1"},
	} {
		u, v := SplitComment(tt.in)
		if u != tt.user || v != tt.vigil {
			t.Errorf("SplitComment(%q) = %q, %q; want %q, %q", tt.in, u, v, tt.user, tt.vigil)
		}
		if tt.vigil != "" && JoinComment(u, v) != tt.in {
			t.Errorf("JoinComment(%q, %q) = %q, want %q", u, v, JoinComment(u, v), tt.in)
		}
	}
}
