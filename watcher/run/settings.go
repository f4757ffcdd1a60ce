package run

import (
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
)

// EnvDetectTime is the environment variable a job sets to choose its own
// detection window (see watchcfg.EnvDetectTime).
const EnvDetectTime = watchcfg.EnvDetectTime

// Section is the config file section vigil-watch reads.
const Section = watchcfg.Section

// Settings is the [watch] section of vigil.toml; it lives in the leaf
// package watchcfg so that vigil-prolog validates it with the same code.
type Settings = watchcfg.Settings

// DefaultSettings returns the shipped [watch] settings.
func DefaultSettings() Settings { return watchcfg.Default() }

// ErrBadDetectTime is returned for a VIGIL_HANG_DETECT_TIME that is neither
// minutes nor a Go duration.
var ErrBadDetectTime = watchcfg.ErrBadDetectTime

// ParseDetectTime reads a detection window (see watchcfg.ParseDetectTime).
func ParseDetectTime(s string) (time.Duration, error) { return watchcfg.ParseDetectTime(s) }
