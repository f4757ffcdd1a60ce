package linerules

import (
	"errors"
	"strings"
	"testing"
)

var kinds = []string{"nccl-net", "cuda-error"}

func TestCompileAndMatch(t *testing.T) {
	s, err := Compile([]Spec{
		{Name: "closed", Kind: "nccl-net", Match: `Connection closed by remote peer`, Peer: `remote peer ([^\s<]+)`,
			Examples: []string{"gpu01:1:2 [0] NCCL WARN socketProgress: Connection closed by remote peer gpu03<52318>"}},
		{Name: "oom", Kind: "cuda-error", Match: `CUDA out of memory`, Stream: StreamOutput,
			Examples: []string{"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"}},
	}, kinds)
	if err != nil {
		t.Fatal(err)
	}
	r, peer, ok := s.Match("gpu01:1:2 [0] NCCL WARN socketProgress: Connection closed by remote peer gpu03<52318>", StreamOutput)
	if !ok || r.Name != "closed" || peer != "gpu03" {
		t.Errorf("match %+v %q %v", r.Spec, peer, ok)
	}
	if _, _, ok := s.Match("CUDA out of memory", StreamKmsg); ok {
		t.Error("an output rule matched a kernel line")
	}
	site, _ := Compile([]Spec{{Name: "oom", Kind: KindIgnore, Match: `CUDA out of memory`, Examples: []string{"CUDA out of memory"}}}, kinds)
	if r, _, _ := s.Override(site).Match("CUDA out of memory", StreamOutput); r.Kind != KindIgnore {
		t.Errorf("a site rule of the same name did not replace the shipped one: %+v", r.Spec)
	}
}

func TestCompileErrorsNameTheRuleAndField(t *testing.T) {
	for _, tt := range []struct {
		spec Spec
		want string
	}{
		{Spec{Kind: "nccl-net", Match: "x", Examples: []string{"x"}}, "name: missing"},
		{Spec{Name: "a", Kind: "nope", Match: "x", Examples: []string{"x"}}, `rule "a": kind: "nope"`},
		{Spec{Name: "a", Kind: "nccl-net", Match: "(", Examples: []string{"x"}}, `rule "a": match`},
		{Spec{Name: "a", Kind: "nccl-net", Match: "x"}, `rule "a": examples: give at least one`},
		{Spec{Name: "a", Kind: "nccl-net", Match: "x", Examples: []string{"y"}}, `does not match its example "y"`},
		{Spec{Name: "a", Kind: "nccl-net", Match: "x", Examples: []string{"x"}, Unlike: []string{"xx"}}, `matches "xx", which it must not`},
		{Spec{Name: "a", Kind: "nccl-net", Match: "x", Examples: []string{"x"}, Peer: "nogroup"}, "peer"},
		{Spec{Name: "a", Kind: "nccl-net", Match: "x", Examples: []string{"x"}, Stream: "stdout"}, "stream"},
	} {
		_, err := Compile([]Spec{tt.spec}, kinds)
		if !errors.Is(err, ErrRule) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: %v, want %q", tt.spec, err, tt.want)
		}
	}
}

// TestKernelRulesMatchFromTheStart: a kernel-log rule matches a message
// only from its start, whatever its pattern; a rule of any stream never
// reads kernel lines. A user's segfault line carries their file's name
// after the kernel's own words.
func TestKernelRulesMatchFromTheStart(t *testing.T) {
	s, err := Compile([]Spec{
		{Name: "nfs", Kind: "nccl-net", Stream: StreamKmsg, Match: `nfs: server \S+ not responding`,
			Examples: []string{"nfs: server 10.0.0.9 not responding, still trying"}},
		{Name: "alt", Kind: "nccl-net", Stream: StreamKmsg, Match: `x|NVRM: GPU`, Examples: []string{"NVRM: GPU at PCI:0000:3b:00"}},
		{Name: "any", Kind: "cuda-error", Match: `uncorrectable ECC`, Examples: []string{"CUDA error: uncorrectable ECC error encountered"}},
	}, kinds)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"crash[1]: segfault at 0 ip 0 sp 0 error 4 in nfs: server 10.0.0.9 not responding[400000+1000]",
		"crash[1]: segfault at 0 ip 0 sp 0 error 4 in NVRM: GPU at PCI:0000:3b:00[400000+1000]",
		"crash[1]: segfault at 0 ip 0 sp 0 error 4 in uncorrectable ECC[400000+1000]",
	} {
		if r, _, ok := s.Match(line, StreamKmsg); ok {
			t.Errorf("%q matched rule %q", line, r.Name)
		}
	}
	if r, _, ok := s.Match("nfs: server 10.0.0.9 not responding, still trying", StreamKmsg); !ok || r.Name != "nfs" {
		t.Errorf("the kernel's own nfs line: %+v %v", r.Spec, ok)
	}
	// An example that holds the line further on is refused at load, and
	// the error says why.
	_, err = Compile([]Spec{{Name: "late", Kind: "nccl-net", Stream: StreamKmsg, Match: `nfs: server`,
		Examples: []string{"[ 12.5] nfs: server x not responding"}}}, kinds)
	if !errors.Is(err, ErrRule) || !strings.Contains(err.Error(), "from its start") {
		t.Errorf("unanchored example: %v", err)
	}
	// A pattern that would close the group is refused, never spliced.
	_, err = Compile([]Spec{{Name: "split", Kind: "nccl-net", Stream: StreamKmsg, Match: `x)|(NVRM`, Examples: []string{"x"}}}, kinds)
	if !errors.Is(err, ErrRule) || !strings.Contains(err.Error(), "not a pattern") {
		t.Errorf("unbalanced pattern: %v", err)
	}
}
