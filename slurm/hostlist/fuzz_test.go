package hostlist

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// FuzzExpandHostlist: Expand never panics, its errors are
// *HostlistErrors pointing into the expression, its host names are usable
// ones, and compressing them gives an expression that expands to the same
// names. The seed corpus is in testdata/fuzz/FuzzExpandHostlist.
func FuzzExpandHostlist(f *testing.F) {
	for _, e := range hostlistFixedExprs {
		f.Add(e)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		hosts, err := Expand(expr)
		if err != nil {
			var he *Error
			if !errors.As(err, &he) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("Expand(%q): error %T %v", expr, err, err)
			}
			if he.Pos < 0 || he.Pos > len(expr) || he.Msg == "" {
				t.Fatalf("Expand(%q): bad error %+v", expr, he)
			}
			return
		}
		if len(hosts) == 0 || len(hosts) > MaxHostlistHosts {
			t.Fatalf("Expand(%q): %d hosts and no error", expr, len(hosts))
		}
		for _, h := range hosts {
			if !usableHostName(h) {
				t.Fatalf("Expand(%q) gave host name %q", expr, h)
			}
		}
		c := Compress(hosts)
		again, err := Expand(c)
		if err != nil || !slices.Equal(again, hosts) {
			t.Fatalf("Expand(%q) = %q, compressed %q, expanded again %q, %v", expr, hosts, c, again, err)
		}
	})
}

// FuzzCompressRoundTrip: for usable host names (no brackets, separators or
// white space, numbers below 2^64-1), Expand(Compress(x))
// gives x back, in order and with duplicates, as Slurm does.
func FuzzCompressRoundTrip(f *testing.F) {
	f.Add("n1\nn2\nn3")
	f.Add("n3\nn1\nn2\nn2\nlogin")
	f.Add("n9\nn010\nn8\nn9\nn10\nn011")
	f.Add("gpu01\ngpu02\ngpu04\nr1n1\n007\n8\nx-1")
	f.Add("n18446744073709551614\nn0\nn1")
	f.Add("a\na\na1\na01\n1\n01\n001")
	f.Fuzz(func(t *testing.T, data string) {
		var hosts []string
		for _, h := range strings.Split(data, "\n") {
			if usableHostName(h) {
				hosts = append(hosts, h)
			}
		}
		if len(hosts) == 0 {
			return
		}
		c := Compress(hosts)
		got, err := Expand(c)
		if err != nil {
			t.Fatalf("Expand(Compress(%q) = %q): %v", hosts, c, err)
		}
		if !slices.Equal(got, hosts) {
			t.Fatalf("Expand(Compress(%q) = %q) = %q", hosts, c, got)
		}
	})
}

// usableHostName is the set of names Expand may return.
func usableHostName(h string) bool {
	if h == "" || strings.ContainsAny(h, "[],\t\n\v\f\r \x00") {
		return false
	}
	r := hlHostRange(h)
	return r.single || r.hi != math.MaxUint64
}
