package hostlist

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	// Expected values are what `scontrol show hostnames` of Slurm 22.05.8
	// prints.
	tests := []struct {
		name, expr string
		want       []string
	}{
		{"single", "login1", []string{"login1"}},
		{"no number", "login", []string{"login"}},
		{"list", "a,b,c", []string{"a", "b", "c"}},
		{"spaces and tabs separate too", "a b\tc", []string{"a", "b", "c"}},
		{"empty entries skipped", "a,,b,", []string{"a", "b"}},
		{"range", "n[1-3]", []string{"n1", "n2", "n3"}},
		{"zero padding", "n[01-03]", []string{"n01", "n02", "n03"}},
		{"padding of lower bound counts", "n[1-010]", []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10"}},
		{"padded lower bound, short upper", "n[01-3]", []string{"n01", "n02", "n03"}},
		{"short lower, padded upper", "n[1-03]", []string{"n1", "n2", "n3"}},
		{"padding grows past width", "n[098-101]", []string{"n098", "n099", "n100", "n101"}},
		{"several ranges and values", "n[1-3,7,10-12]", []string{"n1", "n2", "n3", "n7", "n10", "n11", "n12"}},
		{"order and duplicates kept", "n[3,1,2,1]", []string{"n3", "n1", "n2", "n1"}},
		{"duplicate names kept", "n1,n1,n2", []string{"n1", "n1", "n2"}},
		{"mixed widths kept", "n1,n01,n001", []string{"n1", "n01", "n001"}},
		{"lists and ranges", "gpu[01-02],login1,n[7-8]", []string{"gpu01", "gpu02", "login1", "n7", "n8"}},
		{"two groups", "rack[1-2]n[1-2]", []string{"rack1n1", "rack1n2", "rack2n1", "rack2n2"}},
		{"two groups, each element its own padding", "r[01-02]n[001,3]", []string{"r01n001", "r01n3", "r02n001", "r02n3"}},
		{"adjacent groups", "[1-2][3-4]", []string{"13", "14", "23", "24"}},
		{"three groups: second-to-last outermost", "a[1-2]b[3-4]c[5-6]",
			[]string{"a1b3c5", "a1b3c6", "a2b3c5", "a2b3c6", "a1b4c5", "a1b4c6", "a2b4c5", "a2b4c6"}},
		{"no prefix", "[1-3]", []string{"1", "2", "3"}},
		{"digits before group", "p1[1-2]", []string{"p11", "p12"}},
		{"suffix in earlier group", "gpu-a[01-02]-ib[1]", []string{"gpu-a01-ib1", "gpu-a02-ib1"}},
		{"open range is its lower bound", "n[1-]", []string{"n1"}},
		{"plus sign counts in width", "n[+1-+3]", []string{"n01", "n02", "n03"}},
		{"blank in group counts in width", "n[ 1, 2]", []string{"n01", "n02"}},
		{"blank before upper bound", "n[1- 3]", []string{"n1", "n2", "n3"}},
		{"blank before group splits", "n [1-2]", []string{"n", "1", "2"}},
		{"largest range", "n[1-65536]", nil}, // length checked below
		{"largest number", "n18446744073709551614", []string{"n18446744073709551614"}},
		{"largest number made of prefix and group", "184467440737095516[13-14]", []string{"18446744073709551613", "18446744073709551614"}},
		{"long zero padding", "n0000000000000000000000001", []string{"n0000000000000000000000001"}},
		{"dash in name", "a-1,b-[2-3]", []string{"a-1", "b-2", "b-3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Expand(tt.expr)
			if err != nil {
				t.Fatalf("Expand(%q): %v", tt.expr, err)
			}
			if tt.want == nil {
				if len(got) != 65536 || got[0] != "n1" || got[65535] != "n65536" {
					t.Fatalf("Expand(%q): %d hosts, %q ... %q", tt.expr, len(got), got[0], got[len(got)-1])
				}
				return
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Expand(%q) = %q, want %q", tt.expr, got, tt.want)
			}
		})
	}
}

func TestExpandHostlistErrors(t *testing.T) {
	tests := []struct {
		name, expr string
		pos        int
		msg        string // part of the message
		stricter   bool   // Slurm accepts it
	}{
		{"reversed range", "n[3-1]", 2, `invalid range "3-1": lower bound above upper bound`, false},
		{"reversed padded", "n[010-1]", 2, "lower bound above upper bound", false},
		{"empty group", "n[]", 2, `invalid range "": empty`, false},
		{"empty element", "n[1,]", 4, `invalid range "": empty`, false},
		{"leading comma", "n[,1]", 2, "empty", false},
		{"no lower bound", "n[-3]", 2, "missing lower bound", false},
		{"letters", "n[a-c]", 2, `invalid range "a-c": not a number`, false},
		{"letter in upper bound", "n[1-c]", 2, "upper bound is not a number", false},
		{"junk after number", "n[1a]", 2, "junk after number", false},
		{"two dashes", "n[1--2]", 2, "negative number", false},
		{"three bounds", "n[1-2-3]", 2, "junk after upper bound", false},
		{"x", "n[1x2]", 2, "'x' is not allowed", false},
		{"too many hosts", "n[0-65536]", 2, "too many hosts in range \"0-65536\" (Slurm's limit is 65536)", false},
		{"second element bad", "n[1-2,5-4]", 6, `"5-4"`, false},
		{"text after group", "n[1-2]-ib", 6, `unexpected "-ib" after ']'`, false},
		{"closing twice", "n[1-3]],x", 6, `unexpected "]"`, false},
		{"nested", "n[[1-2]]", 7, "unexpected", false},
		{"bad earlier group", "n[1-3][a]", 7, `invalid range "a"`, false},
		{"bad second-to-last group", "n[a]x[1]", 2, `invalid range "a"`, false},
		{"bad group among three", "a[x]b[1-2]c[3]", 2, `invalid range "x"`, false},
		{"bad second token", "n1,m[2-1]", 5, "lower bound above upper bound", false},
		{"earlier group too large", "a[0-65535,0]b[1]", 1, "more than 65536 values", false},

		{"junk before dash", "n[1a-3]", 2, `invalid range "1a-3": junk after lower bound`, true},
		{"fraction", "n[1.5-3]", 2, "junk after lower bound", true},
		{"blank before dash", "n[1 -3]", 2, "junk after lower bound", true},
		{"empty", "", 0, "no host names", true},
		{"separators only", ", \t,", 0, "no host names", true},
		{"unclosed", "n[1-3", 1, "'[' without ']'", true},
		{"unclosed, no prefix", "[12", 0, "'[' without ']'", true},
		{"unclosed after group", "a[1]b[2", 5, "'[' without ']'", true},
		{"stray closing", "n1-3]", 0, `host name "n1-3]" contains ']'`, true},
		{"stray closing in prefix", "a]b[1-2]", 0, `contains ']'`, true},
		{"newline in name", "ab1,a\nb2", 4, `contains '\n'`, true},
		{"bracket in name", "a[b c[1]", 0, `contains '['`, true},
		{"number too large", "n18446744073709551615", 0, "too large", true},
		{"number saturates", "n99999999999999999999999", 0, "too large", true},
		{"range reaches 2^64-1", "n[18446744073709551615]", 2, "too large", true},
		{"range wraps", "n[0-18446744073709551615]", 2, "too large", true},
		{"digits before group make it too large", "200000[00000000000000]", 0, `"20000000000000000000" too large`, true},
		{"earlier group too large among three", "a[0-65535,0]b[1]c[1]", 1, "more than 65536 values", true},
		{"too many hosts in all", "a[0-65535]b[0-16]", 0, fmt.Sprintf("more than %d hosts", MaxHostlistHosts), true},
		{"NUL", "n1\x00", 2, "NUL byte", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Expand(tt.expr)
			if err == nil {
				t.Fatalf("Expand(%q) = %q, want an error", tt.expr, got)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			var he *Error
			if !errors.As(err, &he) {
				t.Fatalf("error %T is not a *Error", err)
			}
			if he.Pos != tt.pos || !strings.Contains(he.Msg, tt.msg) || he.stricter != tt.stricter {
				t.Errorf("Expand(%q): pos %d, %q, stricter %v; want pos %d, %q, stricter %v",
					tt.expr, he.Pos, he.Msg, he.stricter, tt.pos, tt.msg, tt.stricter)
			}
			if want := fmt.Sprintf("slurm: invalid hostlist %q at offset %d: ", tt.expr, tt.pos); !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q does not start with %q", err.Error(), want)
			}
		})
	}
}

func TestCompressHostlist(t *testing.T) {
	// Expected values are what `scontrol show hostlist` of Slurm 22.05.8
	// prints for the names joined with commas.
	tests := []struct {
		name  string
		hosts []string
		want  string
	}{
		{"none", nil, ""},
		{"one", []string{"login1"}, "login1"},
		{"no number", []string{"login"}, "login"},
		{"range", []string{"n1", "n2", "n3"}, "n[1-3]"},
		{"padded", []string{"n01", "n02", "n03"}, "n[01-03]"},
		{"gaps", []string{"n1", "n2", "n3", "n7", "n10", "n11"}, "n[1-3,7,10-11]"},
		{"order kept", []string{"n3", "n1", "n2"}, "n[3,1-2]"},
		{"duplicates kept", []string{"n1", "n1", "n2"}, "n[1,1-2]"},
		{"prefixes", []string{"a1", "a2", "b1", "a3"}, "a[1-2],b1,a3"},
		{"lone numbered host", []string{"n5", "m5"}, "n5,m5"},
		{"widths differ", []string{"n1", "n01", "n001"}, "n[1,01,001]"},
		{"width grows", []string{"n8", "n9", "n10"}, "n[8-10]"},
		{"padded width grows", []string{"n098", "n099", "n100"}, "n[098-100]"},
		{"incompatible padding", []string{"n9", "n010"}, "n[9,010]"},
		{"compatible then not", []string{"n08", "n09", "n10", "n011"}, "n[08-10,011]"},
		{"same prefix without number", []string{"n", "n1", "n2"}, "n,n[1-2]"},
		{"numbers only", []string{"1", "2", "3"}, "[1-3]"},
		{"digits inside", []string{"r1n1", "r1n2", "r2n1"}, "r1n[1-2],r2n1"},
		{"empty names skipped", []string{"a1", "", "a2"}, "a[1-2]"},
		{"saturating number", []string{"n99999999999999999999999"}, "n00018446744073709551615"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Compress(tt.hosts); got != tt.want {
				t.Errorf("Compress(%q) = %q, want %q", tt.hosts, got, tt.want)
			}
		})
	}
}

func TestHostlistRoundTrip(t *testing.T) {
	tests := []struct{ name, expr string }{
		{"range", "n[1-100]"},
		{"mixed", "gpu[001-004,007],login1,n[9,010,8-10],x"},
		{"unsorted with duplicates", "n[5,3,3,1-2],m[02-04],n[7-9]"},
		{"two groups", "r[1-3]n[01-16]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hosts, err := Expand(tt.expr)
			if err != nil {
				t.Fatal(err)
			}
			c := Compress(hosts)
			again, err := Expand(c)
			if err != nil {
				t.Fatalf("Expand(%q): %v", c, err)
			}
			if !slices.Equal(again, hosts) {
				t.Errorf("Expand(Compress(%q)) = %q via %q", hosts, again, c)
			}
		})
	}
}

// benchHosts is a 4096-node list: four racks of 1024 zero-padded nodes with
// every 7th node missing and a few stragglers, so compression sees many
// ranges.
func benchHosts() []string {
	var hosts []string
	for rack := 1; len(hosts) < 4096; rack++ {
		for n := 1; n <= 1200 && len(hosts) < 4096; n++ {
			if n%7 != 0 {
				hosts = append(hosts, fmt.Sprintf("r%02dgpu%04d", rack, n))
			}
		}
	}
	return hosts
}

func BenchmarkExpandHostlist(b *testing.B) {
	expr := Compress(benchHosts())
	b.SetBytes(int64(len(expr)))
	b.ReportAllocs()
	for b.Loop() {
		hosts, err := Expand(expr)
		if err != nil || len(hosts) != 4096 {
			b.Fatalf("%d hosts, %v", len(hosts), err)
		}
	}
}

func BenchmarkCompressHostlist(b *testing.B) {
	hosts := benchHosts()
	b.ReportAllocs()
	for b.Loop() {
		if Compress(hosts) == "" {
			b.Fatal("empty")
		}
	}
}
