package watchcfg

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// The hang window is how long a job's I/O and usage must stay flat before
// it counts as hung. It has one Go name, Window (MinWindow and MaxWindow
// for its bounds, [policy] min_hang_time and max_hang_time), and one
// parser, ParseWindow, behind vigil-watch --window, the job's
// VIGIL_HANG_DETECT_TIME and the SPANK option --vigil-hang-time (checked by
// vigil-prolog policy-check). [watch] window is a duration string, as
// every duration of the file.

// EnvWindow is the environment variable a job sets to choose its own hang
// window: minutes as a bare number ("45", "1.5") or a Go duration ("90s",
// "2h"). vigil's SPANK plugin sets it from --vigil-hang-time, and passes
// "off" to a watcher it started for a job that opted out.
const EnvWindow = "VIGIL_HANG_DETECT_TIME"

// ErrBadWindow is wrapped by every error of ParseWindow.
var ErrBadWindow = errors.New("bad detection time")

// ErrWindowNotPositive is wrapped, with ErrBadWindow, by ParseWindow's
// error for a value that reads as a window of zero or less.
var ErrWindowNotPositive = errors.New("must be positive")

// ParseWindow reads a hang window: minutes as a bare number ("30", "1.5",
// "1e3") or a Go duration ("90s", "1h30m"), with spaces around it ignored.
// It must be positive. It is the only parser of the window.
func ParseWindow(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var d time.Duration
	if m, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(m) || math.IsInf(m, 0) || m > float64(math.MaxInt64)/float64(time.Minute) {
			return 0, fmt.Errorf("%w: %q", ErrBadWindow, s)
		}
		d = time.Duration(m * float64(time.Minute))
	} else {
		d, err = time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%w: %q: want minutes (\"30\") or a duration (\"90s\")", ErrBadWindow, s)
		}
	}
	if d <= 0 {
		return 0, fmt.Errorf("%w: %q: %w", ErrBadWindow, s, ErrWindowNotPositive)
	}
	return d, nil
}
