package watchcfg

import (
	"errors"
	"fmt"
	"time"
)

// Hang holds the hang detector's rule and thresholds. The zero value is not
// useful: start from DefaultHang and override. Field tags name the keys of
// the [watch] section of vigil.toml (durations are strings such as "90s" or
// "30m"). The detector (watcher/hang) knows it as hang.Config.
type Hang struct {
	// Window is the hang window: a host is suspect when the job's I/O
	// progressed less than IOBytes over the last Window. Default 30 minutes.
	Window time.Duration `toml:"window" flag:"window" env:"VIGIL_HANG_DETECT_TIME" arg:"window" usage:"hang window: minutes (\"30\") or a Go duration (\"90s\"); overrides VIGIL_HANG_DETECT_TIME. A job is reported one window after its last progress"`
	// Period is the sampling period; coverage and gaps are measured against
	// it. Default 30 seconds.
	Period time.Duration `toml:"period" flag:"period" follows:"window" usage:"time between samples (when unset: at most a sixth of the window)"`
	// Grace is the youngest a host's samples of a job may be (time since
	// its first sample) before any verdict: it protects a slow start. It
	// does not add to the window: the window always covers the last Window,
	// so a job that stops making progress after running a while is reported
	// Window after its last progress, and one that never makes progress
	// FirstVerdict (the longer of Grace and Window) after its first sample.
	// 0 means no minimum beyond one whole window. Default 10 minutes.
	Grace time.Duration `toml:"grace" flag:"grace" usage:"start-up grace: how old the job must be before any verdict; it does not add to the window, the first verdict comes at the longer of grace and window. A job's own shorter VIGIL_HANG_DETECT_TIME cuts it to that window"`
	// IOBytes is the I/O progress below which a window counts as no
	// progress, in bytes over the whole window (rchar+wchar+read_bytes+
	// write_bytes, or the cgroup's block I/O if that is larger). A logging
	// thread that writes a few KiB per minute during a hang stays below it.
	// Default 1 MiB.
	IOBytes uint64 `toml:"io_bytes" flag:"io-bytes" arg:"bytes" usage:"I/O progress, in bytes over the window, below which the job counts as making no progress"`
	// MinCoverage is the fraction of the samples expected in a window
	// (Window/Period+1) that must be present (and readable) before the
	// detector decides anything about that window. Default 0.8.
	MinCoverage float64 `toml:"min_coverage" flag:"min-coverage" usage:"fraction of a window's samples that must be present before it is judged"`
	// UtilStddev is the largest standard deviation of a device's
	// utilisation over the window, in percentage points, for the device to
	// count as flat. Default 5.
	UtilStddev float64 `toml:"util_stddev" flag:"util-stddev" arg:"percentage points" usage:"largest standard deviation of a device's utilisation, in percentage points, that counts as flat"`
	// PowerStddevW is the largest standard deviation of a device's power
	// over the window, in watts, for the device to count as flat. Default 15.
	PowerStddevW float64 `toml:"power_stddev_w" flag:"power-stddev-w" arg:"watts" usage:"largest standard deviation of a device's power, in watts, that counts as flat"`
	// BusyPowerW is the median power, in watts, at or above which a device
	// counts as busy (never flat) whatever its variance. A spinning
	// collective draws far less than real work; tune per SKU (set it a
	// little below the power the device draws in training). 0 disables the
	// rule. Default 300.
	BusyPowerW float64 `toml:"busy_power_w" flag:"busy-power-w" arg:"watts" usage:"median power, in watts, at or above which a device is busy, never flat (0 disables)"`
	// MemChangeMiB is the largest change of a device's memory use over the
	// window (max-min), in MiB, for the device to count as flat. Default 1024.
	MemChangeMiB float64 `toml:"mem_change_mib" flag:"mem-change-mib" arg:"MiB" usage:"largest change of a device's memory use, in MiB, that counts as flat"`
	// HighUtil is the median utilisation, in percent, at or above which a
	// flat device reads as a stuck collective. Default 90.
	HighUtil float64 `toml:"high_util"`
	// IdleUtil is the median utilisation, in percent, at or below which a
	// flat device reads as idle (a deadlocked loader). Default 10.
	IdleUtil float64 `toml:"idle_util"`
	// CPUStddevCores and CPUStddevFraction bound the standard deviation of
	// the job's CPU rate over the window (in cores: CPU seconds per second)
	// for it to count as flat: stddev <= CPUStddevCores +
	// CPUStddevFraction*median. Defaults 0.25 and 0.05.
	CPUStddevCores    float64 `toml:"cpu_stddev_cores"`
	CPUStddevFraction float64 `toml:"cpu_stddev_fraction"`
	// CPUIdleCores is the median CPU rate, in cores, at or below which a job
	// counts as idle on the CPU. Default 0.1.
	CPUIdleCores float64 `toml:"cpu_idle_cores"`
	// CPUSpinIsHang makes a job without accelerators hung when its CPU rate
	// is flat but not idle (busy-polling ranks). Off by default: a long
	// computation without I/O reads the same. Default false.
	CPUSpinIsHang bool `toml:"cpu_spin_is_hang"`
	// UnusedMemMiB is the device memory, in MiB, below which an idle device
	// counts as not yet used by the job: while every device is idle and
	// below it, the devices do not decide and the CPU decides alone (a job
	// that compiles, unpacks or preprocesses before it touches its GPUs is
	// not a deadlocked loader). 0 turns this off. Default 2048.
	UnusedMemMiB float64 `toml:"unused_mem_mib"`

	// PulseFactor is k of the pulse rule: once the job's progress lines
	// have a learned cadence (PulseBeats beats), the job is hung when no
	// progress came for max(k × the median interval, PulseFloor) and every
	// host's I/O and usage were flat since the next beat was due. 0 turns
	// the pulse off. Default 3.
	PulseFactor float64 `toml:"pulse_factor"`
	// PulseFloor is the shortest silence the pulse rule acts on, however
	// fast the job prints; at least the median interval + 3 periods, so
	// that the flat stretch holds 3 periods of samples. Default 2 minutes.
	PulseFloor time.Duration `toml:"pulse_floor"`
	// PulseBeats is how many progress beats (polls of the job's output
	// with a progress line, at least half a period apart) the job must
	// have shown before its cadence counts. Default 5.
	PulseBeats int `toml:"pulse_beats"`
	// StragglerWindow is the stretch of the latest readings and progress
	// lines the straggler rules judge (a host whose devices, steps or
	// processes lag its peers'), cut to Window when that is shorter: a rank
	// slowed for minutes is named within minutes, not after most of a
	// 30-minute hang window. It is stretched to 4 periods when shorter, so
	// that it holds a few readings. Its readings must cover MinCoverage of
	// it. Default 10 minutes.
	StragglerWindow time.Duration `toml:"straggler_window"`
	// ConfirmPeriods is how many periods of flat I/O and usage confirm a
	// hang after strong evidence (a fault XID or uncorrectable ECC error, a
	// collective timeout, a transport error, a rank's processes gone or
	// stopped while its peers' stay) with no progress since. 0 turns the
	// evidence rule off. Default 3.
	ConfirmPeriods int `toml:"confirm_periods"`
}

// DefaultHang returns the documented defaults of the detector.
func DefaultHang() Hang {
	return Hang{
		Window:            30 * time.Minute,
		Period:            30 * time.Second,
		Grace:             10 * time.Minute,
		IOBytes:           1 << 20,
		MinCoverage:       0.8,
		UtilStddev:        5,
		PowerStddevW:      15,
		BusyPowerW:        300,
		MemChangeMiB:      1024,
		HighUtil:          90,
		IdleUtil:          10,
		CPUStddevCores:    0.25,
		CPUStddevFraction: 0.05,
		CPUIdleCores:      0.1,
		UnusedMemMiB:      2048,
		PulseFactor:       3,
		PulseFloor:        2 * time.Minute,
		PulseBeats:        5,
		ConfirmPeriods:    3,
		StragglerWindow:   10 * time.Minute,
	}
}

// StragglerSpan is the stretch the straggler rules judge: StragglerWindow,
// at least 4 periods, and never more than Window.
func (c Hang) StragglerSpan() time.Duration { return min(max(c.StragglerWindow, 4*c.Period), c.Window) }

// FirstVerdict is how old a host's samples of a job must be (time since its
// first sample) before the detector decides anything about it: the longer of
// Grace and Window. Before that a host is never suspect, hung or recovered.
func (c Hang) FirstVerdict() time.Duration { return max(c.Grace, c.Window) }

// ErrHang is wrapped by every error of Hang.Validate.
var ErrHang = errors.New("hang: bad config")

// HangError is an error of Hang.Validate about one [watch] key.
type HangError struct {
	// Key is the key as in vigil.toml ("min_coverage").
	Key string
	// Msg says what is wrong and what is allowed.
	Msg string
}

func (e *HangError) Error() string { return fmt.Sprintf("%v: %s: %s", ErrHang, e.Key, e.Msg) }

// Unwrap makes errors.Is(err, ErrHang) hold.
func (e *HangError) Unwrap() error { return ErrHang }

// Validate checks ranges. The error is a *HangError naming the key as in
// vigil.toml and the allowed range.
func (c Hang) Validate() error {
	bad := func(key string, format string, args ...any) error {
		return &HangError{Key: key, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case c.Period <= 0:
		return bad("period", "%v, want > 0", c.Period)
	case c.Window < c.Period:
		return bad("window", "%v, want at least one period (%v)", c.Window, c.Period)
	case c.Window/c.Period > 100000:
		return bad("window", "%v is more than 100000 periods of %v", c.Window, c.Period)
	case c.Grace < 0:
		return bad("grace", "%v, want >= 0", c.Grace)
	case !(c.MinCoverage > 0 && c.MinCoverage <= 1):
		return bad("min_coverage", "%v, want in (0, 1]", c.MinCoverage)
	case !(c.UtilStddev >= 0):
		return bad("util_stddev", "%v, want >= 0", c.UtilStddev)
	case !(c.PowerStddevW >= 0):
		return bad("power_stddev_w", "%v, want >= 0", c.PowerStddevW)
	case !(c.BusyPowerW >= 0):
		return bad("busy_power_w", "%v, want >= 0", c.BusyPowerW)
	case !(c.MemChangeMiB >= 0):
		return bad("mem_change_mib", "%v, want >= 0", c.MemChangeMiB)
	case !(c.IdleUtil >= 0 && c.IdleUtil <= 100):
		return bad("idle_util", "%v, want in [0, 100]", c.IdleUtil)
	case !(c.HighUtil >= c.IdleUtil && c.HighUtil <= 100):
		return bad("high_util", "%v, want in [idle_util, 100]", c.HighUtil)
	case !(c.CPUStddevCores >= 0):
		return bad("cpu_stddev_cores", "%v, want >= 0", c.CPUStddevCores)
	case !(c.CPUStddevFraction >= 0):
		return bad("cpu_stddev_fraction", "%v, want >= 0", c.CPUStddevFraction)
	case !(c.CPUIdleCores >= 0):
		return bad("cpu_idle_cores", "%v, want >= 0", c.CPUIdleCores)
	case !(c.UnusedMemMiB >= 0):
		return bad("unused_mem_mib", "%v, want >= 0", c.UnusedMemMiB)
	case !(c.PulseFactor == 0 || c.PulseFactor >= 2 && c.PulseFactor <= 100):
		return bad("pulse_factor", "%v, want 0 (off) or 2 to 100", c.PulseFactor)
	case c.PulseFloor < 0:
		return bad("pulse_floor", "%v, want >= 0", c.PulseFloor)
	case c.PulseBeats < 3 || c.PulseBeats > 1000:
		return bad("pulse_beats", "%d, want 3 to 1000", c.PulseBeats)
	case c.StragglerWindow <= 0 || c.StragglerWindow > 24*time.Hour:
		return bad("straggler_window", "%v, want > 0 and at most 24h", c.StragglerWindow)
	case c.ConfirmPeriods < 0 || c.ConfirmPeriods > 1000:
		return bad("confirm_periods", "%d, want 0 (off) to 1000", c.ConfirmPeriods)
	}
	return nil
}
