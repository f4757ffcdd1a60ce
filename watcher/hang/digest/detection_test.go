package digest

import "testing"

// TestDetectionWords: how a detection reads in the report, the comment
// and the notifications, for each way a hang is detected.
func TestDetectionWords(t *testing.T) {
	for _, tt := range []struct {
		d    *Detection
		want string
	}{
		{nil, ""},
		{&Detection{}, ""},
		{&Detection{By: DetectedWindow}, "window"},
		{&Detection{By: DetectedWindow, LastProgress: t0, AfterProgressS: 1830.4}, "window: 30m30s after the last progress"},
		{&Detection{By: DetectedPulse, LastProgress: t0, AfterProgressS: 190, CadenceS: 30}, "pulse: 3m10s after the last progress (cadence 30s)"},
		{&Detection{By: DetectedEvidence, LastProgress: t0, AfterProgressS: 95, Evidence: "XID 79 on gpu02"},
			"evidence: 1m35s after the last progress (XID 79 on gpu02)"},
		{&Detection{By: DetectedRAS, Unhealable: true, AfterEvidenceS: 4.6, Evidence: "ranks dead"},
			"ras (cannot heal), 5s from the event to the verdict (ranks dead)"},
	} {
		if got := tt.d.Words(); got != tt.want {
			t.Errorf("Words() of %+v = %q, want %q", tt.d, got, tt.want)
		}
	}
}
