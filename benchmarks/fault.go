package benchmarks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"time"
)

// FaultCheckName is the name of the fault-injection check. It exists to
// test vigil itself: it never runs unless named in [prolog] checks, and
// does nothing unless a mode is set in [checks.fault-inject] or in the
// VIGIL_FAULT_INJECT environment variable (which wins).
const FaultCheckName = "fault-inject"

// FaultEnv is the environment variable that sets the fault-injection mode.
const FaultEnv = "VIGIL_FAULT_INJECT"

// FaultPIDFileEnv names a file the "hang" mode writes the PID of the
// process it leaves behind into, so tests can see it was killed.
const FaultPIDFileEnv = "VIGIL_FAULT_PIDFILE"

// FaultSettings is the [checks.fault-inject] section.
type FaultSettings struct {
	// Mode is one of "" (do nothing, pass), "pass", "fail", "unknown",
	// "hang" (ignore the deadline, start a grandchild that sleeps, never
	// return), "crash" (the checker process panics and dies), "slow" (sleep
	// Delay, then pass).
	Mode string `toml:"mode"`
	// Delay is how long "slow" sleeps ("2s").
	Delay time.Duration `toml:"delay"`
}

type faultCheck struct{}

func init() { Register(faultCheck{}) }

// Spec describes the check: off by default, in a child (it hangs and
// crashes there).
func (faultCheck) Spec() Descriptor {
	return Descriptor{Name: FaultCheckName, Kind: KindHealth, Vendor: VendorNone, Isolated: true,
		Description: "test aid: passes, fails, hangs or crashes as [checks.fault-inject] mode says",
		Settings:    func() any { return &FaultSettings{Delay: 2 * time.Second} },
		Reasons:     []string{"FaultInjected", "FaultNeedsChild"}}
}

func (faultCheck) Run(ctx context.Context, env *Env) Result {
	s := FaultSettings{Delay: 2 * time.Second}
	if env != nil && env.Settings != nil {
		if err := env.Settings(&s); err != nil {
			return Result{Status: StatusUnknown, Reason: ReasonInvalidSettings, Message: err.Error()}
		}
	}
	if m, ok := os.LookupEnv(FaultEnv); ok {
		s.Mode = m
	}
	if err := s.Validate(); err != nil {
		return Result{Status: StatusUnknown, Reason: ReasonInvalidSettings, Message: err.Error()}
	}
	switch s.Mode {
	case "", "pass":
		return Result{Status: StatusPass, Message: "no fault injected"}
	case "fail":
		return Result{Status: StatusFail, Reason: "FaultInjected", Device: "gpu0", Message: "injected failure"}
	case "unknown":
		return Result{Status: StatusUnknown, Reason: "FaultInjected", Message: "injected unknown"}
	case "slow":
		select {
		case <-time.After(s.Delay):
			return Result{Status: StatusPass, Message: fmt.Sprintf("slept %v", s.Delay)}
		case <-ctx.Done():
			return Result{Status: StatusFail, Reason: ReasonTimedOut, Message: "deadline while sleeping"}
		}
	case "hang":
		if !InChild {
			return Result{Status: StatusUnknown, Reason: "FaultNeedsChild", Message: "hang is only injected in a checker child"}
		}
		if cmd := exec.Command("sleep", "3600"); cmd.Start() == nil {
			if p := os.Getenv(FaultPIDFileEnv); p != "" {
				_ = os.WriteFile(p, []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
			}
		}
		for {
			time.Sleep(time.Hour) // ignores ctx, like a wedged driver call
		}
	case "crash":
		if !InChild {
			return Result{Status: StatusUnknown, Reason: "FaultNeedsChild", Message: "crash is only injected in a checker child"}
		}
		panic("injected crash")
	}
	return Result{Status: StatusUnknown, Reason: ReasonInvalidSettings, Message: fmt.Sprintf("unknown fault mode %q", s.Mode)}
}

// FaultModes are the modes of the fault-injection check.
var FaultModes = []string{"", "pass", "fail", "unknown", "hang", "crash", "slow"}

// Validate reports an unknown mode or a negative delay, naming the key.
func (s *FaultSettings) Validate() error {
	if !slices.Contains(FaultModes, s.Mode) {
		return BadSetting("mode", "%q: want pass, fail, unknown, hang, crash or slow", s.Mode)
	}
	if s.Delay < 0 {
		return BadSetting("delay", "%v: want 0 or more", s.Delay)
	}
	return nil
}
