package hangfmt

import (
	"testing"
	"time"
)

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		30 * time.Minute: "30m", time.Hour: "1h", 90 * time.Minute: "1h30m", 90 * time.Second: "1m30s",
		0: "0s", 2 * time.Second: "2s", 59*time.Minute + 30*time.Second: "59m30s", time.Hour + 5*time.Second: "1h0m5s",
	} {
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestRound(t *testing.T) {
	for x, want := range map[float64]float64{0.12345: 0.123, 0.1235: 0.124, -2.0004: -2, 7: 7, 1e-4: 0} {
		if got := Round(x); got != want {
			t.Errorf("Round(%v) = %v, want %v", x, got, want)
		}
	}
}
