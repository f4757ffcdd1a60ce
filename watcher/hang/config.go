package hang

import (
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
)

// Config holds the detector's thresholds: the [watch] keys of vigil.toml
// (see watchcfg.Hang for each key, its unit and default). The zero value is
// not useful: start from watchcfg.DefaultHang and override.
type Config = watchcfg.Hang

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
