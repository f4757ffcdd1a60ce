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
