package straggler

import (
	"time"

	"github.com/vigil-hpc/vigil/config/watchcfg"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// testConfig: 10-minute window, 1-minute period, 5-minute grace; the
// stragglers judged over the whole window.
func testConfig() watchcfg.Hang {
	c := watchcfg.DefaultHang()
	c.Window = 10 * time.Minute
	c.Period = time.Minute
	c.Grace = 5 * time.Minute
	c.StragglerWindow = c.Window
	return c
}
