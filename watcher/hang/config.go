package hang

import (
	"github.com/vigil-hpc/vigil/config/watchcfg"
)

// Config holds the detector's thresholds: the [watch] keys of vigil.toml
// (see watchcfg.Hang for each key, its unit and default). The zero value is
// not useful: start from watchcfg.DefaultHang and override.
type Config = watchcfg.Hang
