package loop

import (
	"context"
	"errors"
	"time"

	"github.com/vigil-hpc/vigil/watcher/hang"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// EarlyCheck is how often the loop asks its early source (Loop.Early)
// between two samples: evidence that cannot heal is acted on within it
// of being reported, not at the next period.
var EarlyCheck = 2 * time.Second

// EarlySource is an event source the loop asks between samples. Check
// reads what the source has now, keeps it for the next sample's poll, and
// reports whether it holds evidence that cannot heal: the loop then takes
// its next sample at once (*DeviceWatch).
type EarlySource interface {
	Check(now time.Time) bool
}

// maxHeldEvents bounds the device events a DeviceWatch keeps between two
// samples; later ones wait in the library's queue.
const maxHeldEvents = 1024

// DeviceWatch is the device library's fault events (NVML's XID and ECC
// events, DCMI's error codes) read between samples too: it is the
// JobLogs' DeviceEvents and the loop's EarlySource. An event that cannot
// heal (hang.UnhealableDevice: an XID after which the device must be
// reset or the node rebooted) wakes the loop; every event read waits for
// the next sample's poll, which records it. The loop calls both from its
// own goroutine: nothing here is shared.
type DeviceWatch struct {
	Device DeviceEvents
	held   []trace.DeviceEvent
	err    error
}

// Check reads the events reported now and reports whether one of them
// cannot heal.
func (w *DeviceWatch) Check(time.Time) bool {
	if len(w.held) >= maxHeldEvents {
		return false
	}
	evs, err := w.Device.Poll()
	w.err = errors.Join(w.err, err)
	wake := false
	for _, e := range evs {
		if len(w.held) < maxHeldEvents {
			w.held = append(w.held, e)
			wake = wake || hang.UnhealableDevice(e)
		}
	}
	return wake
}

// Poll gives the events held since the last poll and those reported now.
func (w *DeviceWatch) Poll() ([]trace.DeviceEvent, error) {
	evs, err := w.Device.Poll()
	out := append(w.held, evs...)
	err = errors.Join(w.err, err)
	w.held, w.err = nil, nil
	return out, err
}

// wait waits until next, asking the early source every EarlyCheck; it
// returns early when the source has evidence that cannot heal (woke), and
// done when ctx ended.
func (l *Loop) wait(ctx context.Context, clock Clock, next time.Time) (done bool) {
	for {
		d := next.Sub(clock.Now())
		if d <= 0 {
			return false
		}
		if l.Early != nil {
			d = min(d, EarlyCheck)
		}
		select {
		case <-ctx.Done():
			return true
		case <-clock.After(d):
		}
		if now := clock.Now(); l.Early != nil && now.Before(next) && l.Early.Check(now) {
			l.log().WithField("at", now.UTC().Format(time.RFC3339)).Info("a device reported a fault that cannot heal: sampling now")
			return false
		}
	}
}
