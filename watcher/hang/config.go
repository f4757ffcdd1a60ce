package hang

import "github.com/vigil-hpc/vigil/config/watchcfg"

// Config holds the detector's thresholds: the [watch] keys of vigil.toml
// (see watchcfg.Hang for each key, its unit and default). The zero value is
// not useful: start from DefaultConfig and override.
type Config = watchcfg.Hang

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config { return watchcfg.DefaultHang() }

// ErrConfig is wrapped by every error of Config.Validate.
var ErrConfig = watchcfg.ErrHang
