package joblog

import (
	"testing"

	"github.com/vigil-hpc/vigil/internal/linerules"
)

// TestShippedRulesLoad: rules.toml compiles, every rule matches its
// examples and none of its counter-examples, and each example is read by
// Line as its rule says (no rule or parser before it takes the line).
func TestShippedRulesLoad(t *testing.T) {
	s, err := ShippedRules()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Rules()) < 10 {
		t.Fatalf("%d shipped rules", len(s.Rules()))
	}
	for _, r := range s.Rules() {
		for _, ex := range r.Examples {
			stream := ""
			if r.Stream == linerules.StreamKmsg {
				stream = "kmsg"
			}
			m, ok := LineIn(stream, ex)
			if r.Kind == linerules.KindIgnore { // silenced: no evidence at all
				if ok {
					t.Errorf("ignore rule %s: example %q read as %+v", r.Name, ex, m)
				}
				continue
			}
			if !ok || m.Rule != r.Name || string(m.Kind) != r.Kind {
				t.Errorf("rule %s: example %q read as %+v (%v)", r.Name, ex, m, ok)
			}
		}
	}
}

// TestSiteRules: a site rule adds evidence the shipped rules do not know,
// and one of a shipped rule's name replaces it (here: silences it).
func TestSiteRules(t *testing.T) {
	t.Cleanup(func() { SetSiteRules(linerules.Set{}) })
	const custom = "gpu03:1:2 [0] NCCL WARN mycorp fabric: link down on mlx5_2"
	if m, _ := LineIn("", custom); m.Kind != KindNCCLWarn {
		t.Fatalf("without the site rule: %+v", m)
	}
	site, err := linerules.Compile([]linerules.Spec{
		{Name: "mycorp-fabric", Kind: "nccl-net", Match: `mycorp fabric: link down`, Examples: []string{custom}},
		{Name: "traceback", Kind: linerules.KindIgnore, Match: `Traceback \(most recent call last\)`, Examples: []string{"Traceback (most recent call last):"}},
	}, RuleKinds())
	if err != nil {
		t.Fatal(err)
	}
	SetSiteRules(site)
	if m, _ := LineIn("", custom); m.Kind != KindNCCLNet || m.Rule != "mycorp-fabric" {
		t.Errorf("with the site rule: %+v", m)
	}
	if _, ok := LineIn("", "Traceback (most recent call last):"); ok {
		t.Error("the site's ignore rule did not replace the shipped traceback rule")
	}
}

// TestRuleKindsAreThisPackagesKinds: linerules.Kinds, which the config's
// validation uses, names exactly the kinds a rule can give here.
func TestRuleKindsAreThisPackagesKinds(t *testing.T) {
	mine := []Kind{KindNCCLNet, KindNCCLRetry, KindNCCLWarn, KindWatchdog, KindTraceback, KindCUDAError, KindProgress,
		KindXID, KindECC, KindNPUError, KindTaskExit, KindOOMKill, KindHungTask, KindNFS, KindPeerClosed, KindMismatch, KindHostBanner, KindRendezvous}
	if len(mine) != len(linerules.Kinds) {
		t.Fatalf("%d kinds here, %d in linerules.Kinds", len(mine), len(linerules.Kinds))
	}
	for i, k := range mine {
		if string(k) != linerules.Kinds[i] {
			t.Errorf("kind %d: %q here, %q in linerules.Kinds", i, k, linerules.Kinds[i])
		}
	}
}
