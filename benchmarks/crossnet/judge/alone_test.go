package judge

import (
	"strings"
	"testing"
	"time"
)

func TestJudgeAlone(t *testing.T) {
	probes := func(self string, peers []string, reached ...string) []Measurement {
		var ms []Measurement
		for _, p := range peers {
			m := Measurement{From: self, To: p, Status: TimedOut, Detail: "i/o timeout"}
			for _, r := range reached {
				if r == p {
					m.Status, m.Detail = OK, ""
				}
			}
			ms = append(ms, m)
		}
		return ms
	}
	h64 := hosts(64)
	tests := []struct {
		name    string
		self    string
		nodes   []string
		probes  []Measurement
		words   []Word
		want    Outcome
		reason  string
		message string
	}{
		{"isolated among 4, the others met and could not reach it", "n3", hosts(4),
			probes("n3", []string{"n1", "n2", "n4"}), []Word{{By: "n1", Met: 3, CutOff: []string{"n3"}}},
			OutcomeFail, ReasonIsolated, "cannot reach n1,n2,n4 (connect timed out or failed, 2 tries of 1s); 3 nodes met without it (coordinator n1) and none could reach it"},
		{"isolated coordinator among 4: the fallback's word", "n1", hosts(4),
			probes("n1", []string{"n2", "n3", "n4"}), []Word{{By: "n2", Met: 3, CutOff: []string{"n1"}}},
			OutcomeFail, ReasonIsolated, "coordinator n2"},
		{"isolated among 3", "n2", hosts(3),
			probes("n2", []string{"n1", "n3"}), []Word{{By: "n1", Met: 2, CutOff: []string{"n2"}}},
			OutcomeFail, ReasonIsolated, "2 nodes met"},
		{"two isolated among 64: each fails itself", "n17", h64,
			probes("n17", []string{"n16", "n18", "n40", "n1"}), []Word{{By: "n1", Met: 62, CutOff: []string{"n17", "n33"}}},
			OutcomeFail, ReasonIsolated, "62 nodes met"},
		{"isolated, but no word came: every node may be cut off (a firewall everywhere)", "n3", hosts(4),
			probes("n3", []string{"n1", "n2", "n4"}), nil,
			OutcomeUnknown, ReasonAloneUndecided, "no word that the others met"},
		{"a word that does not name it: they reach it, it reaches nobody", "n3", hosts(4),
			probes("n3", []string{"n1", "n2", "n4"}), []Word{{By: "n1", Met: 3}},
			OutcomeUnknown, ReasonAloneUndecided, "no word"},
		{"a word of a meeting of one counts for nothing", "n3", hosts(4),
			probes("n3", []string{"n1", "n2", "n4"}), []Word{{By: "n4", Met: 1, CutOff: []string{"n3"}}},
			OutcomeUnknown, ReasonAloneUndecided, "no word"},
		{"reached a peer directly: the meeting failed, not its network", "n3", hosts(4),
			probes("n3", []string{"n1", "n2", "n4"}, "n2", "n4"), []Word{{By: "n1", Met: 3, CutOff: []string{"n3"}}},
			OutcomeUnknown, ReasonAloneUndecided, "reached n2,n4 directly; bad link n1-n3 ("},
		{"two nodes cut off from each other: neither is drained", "n2", hosts(2),
			probes("n2", []string{"n1"}), nil,
			OutcomeUnknown, ReasonPairCutOff, "n2 and n1 cannot reach each other"},
		{"two nodes, the coordinator's view", "n1", hosts(2),
			probes("n1", []string{"n2"}), []Word{{By: "n2", Met: 2, CutOff: []string{"n1"}}},
			OutcomeUnknown, ReasonPairCutOff, "nothing tells which one is cut off"},
		{"many peers, names cut at five", "n64", h64,
			probes("n64", h64[:10]), []Word{{By: "n1", Met: 63, CutOff: []string{"n64"}}},
			OutcomeFail, ReasonIsolated, "cannot reach n1,n2,n3,n4,n5 +5 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := JudgeAlone(AloneInput{Self: tt.self, Nodes: tt.nodes, Probes: tt.probes, Words: tt.words,
				Timeout: time.Second, Tries: 2})
			if v.Outcome != tt.want || v.Reason != tt.reason {
				t.Errorf("outcome %s %s, want %s %s (%s)", v.Outcome, v.Reason, tt.want, tt.reason, v.Message)
			}
			if !strings.Contains(v.Message, tt.message) {
				t.Errorf("message %q, want it to hold %q", v.Message, tt.message)
			}
			if (v.Word != nil) != (tt.want == OutcomeFail) {
				t.Errorf("word %+v with outcome %s", v.Word, v.Outcome)
			}
		})
	}
}
