package digest

import (
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang/hangfmt"
)

// How a hang was detected (Detection.By).
const (
	// DetectedWindow: a host's I/O and usage were flat for the whole
	// window (the detector's rule).
	DetectedWindow = "window"
	// DetectedPulse: the job's progress lines stopped for well beyond
	// their learned cadence, and every host's I/O and usage were flat since
	// the next line was due.
	DetectedPulse = "pulse"
	// DetectedEvidence: strong evidence (a fault XID or uncorrectable ECC
	// error, a collective timeout, a transport error, a rank's processes
	// gone while its peers' stay), then watchcfg.Hang.ConfirmPeriods of flat I/O
	// and usage on every host without progress; evidence that cannot heal
	// (watcher/hang's unhealable.go) at once.
	DetectedEvidence = "evidence"
	// DetectedRAS: NCCL's RAS service said ranks are dead or missing,
	// then watchcfg.Hang.ConfirmPeriods of flat I/O and usage on every host;
	// ranks dead at once.
	DetectedRAS = "ras"
)

// Detection says how and when a hang was detected: the digest carries it,
// and so the report, the comment and the notifications.
type Detection struct {
	By string `json:"by"` // DetectedWindow, DetectedPulse, DetectedEvidence or DetectedRAS
	// LastProgress is the job's newest progress line before the verdict
	// (zero when the job printed none), and AfterProgressS the seconds
	// from it to the verdict.
	LastProgress   time.Time `json:"last_progress,omitzero"`
	AfterProgressS float64   `json:"after_progress_s,omitempty"`
	// The job's pulse: beats seen, the median interval between them and
	// its spread (median absolute deviation), and the silence the pulse
	// rule waits for (max(pulse_factor × cadence, floor)).
	Beats     int     `json:"beats,omitempty"`
	CadenceS  float64 `json:"cadence_s,omitempty"`
	SpreadS   float64 `json:"spread_s,omitempty"`
	DeadlineS float64 `json:"deadline_s,omitempty"`
	// Evidence is the strong evidence in words (a line, or what the
	// telemetry showed), EvidenceAt when it came, and ConfirmS the flat
	// stretch that confirmed it.
	Evidence   string    `json:"evidence,omitempty"`
	EvidenceAt time.Time `json:"evidence_at,omitzero"`
	ConfirmS   float64   `json:"confirm_s,omitempty"`
	// Unhealable is set when the evidence cannot heal (a device gone or
	// needing a reset, ranks dead, a host's processes all gone): the
	// verdict came at once, without a confirmation, AfterEvidenceS
	// seconds after the watcher read the evidence.
	Unhealable     bool    `json:"unhealable,omitempty"`
	AfterEvidenceS float64 `json:"after_evidence_s,omitempty"`
	// Flat names, per host judged, why its readings over the flat stretch
	// read as a hang (a usage reason such as FlatUsageStuckCollective).
	Flat map[string]string `json:"flat,omitempty"`
}

// Words says the detection for people: "pulse: 3m10s after the last
// progress (cadence 30s)".
func (d *Detection) Words() string {
	if d == nil || d.By == "" {
		return ""
	}
	seconds := func(x float64) string {
		return hangfmt.ShortDuration(time.Duration(x * float64(time.Second)).Round(time.Second))
	}
	s := d.By
	if d.Unhealable {
		s += " (cannot heal)"
	}
	if !d.LastProgress.IsZero() {
		s += ": " + seconds(d.AfterProgressS) + " after the last progress"
	}
	switch d.By {
	case DetectedPulse:
		s += " (cadence " + seconds(d.CadenceS) + ")"
	case DetectedEvidence, DetectedRAS:
		if d.Unhealable {
			s += ", " + seconds(d.AfterEvidenceS) + " from the event to the verdict"
		}
		s += " (" + d.Evidence + ")"
	}
	return s
}
