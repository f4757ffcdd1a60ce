// Package hangfmt writes the numbers and durations of the hang detector's
// events, digests and messages the one way they all share: evidence
// numbers rounded to three decimals, durations without their zero units.
// It is the bottom of watcher/hang: the detector (watcher/hang), its
// digest (watcher/hang/digest) and its straggler rule
// (watcher/hang/straggler) all import it, and it imports none of them.
package hangfmt

import (
	"math"
	"strings"
	"time"
)

// ShortDuration writes d as time.Duration does, without the zero units at
// its end: "30m", "1h", "1h30m", "1m30s", "0s".
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = s[:len(s)-2]
	}
	if strings.HasSuffix(s, "h0m") {
		s = s[:len(s)-2]
	}
	return s
}

// Round rounds x to three decimals, for evidence.
func Round(x float64) float64 { return math.Round(x*1000) / 1000 }
