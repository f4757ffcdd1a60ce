package hang

import (
	"bytes"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/watcher/trace"
)

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// phase describes a job's behaviour from sample From on (minutes when the
// period is a minute).
type phase struct {
	From int
	// IOPerPeriod is written (write_bytes and wchar) per period, bytes.
	IOPerPeriod uint64
	// ReadPerPeriod is read (rchar) per period, bytes.
	ReadPerPeriod uint64
	// Util and Power: base value and uniform jitter (±) per device.
	Util, UtilJitter   float64
	Power, PowerJitter float64
	// CPU rate in cores, with jitter.
	CPU, CPUJitter float64
	Procs          int
	// IdleDev, if >= 0, is a device that reads 0% and idle power in this phase.
	IdleDev int
}

// gen describes a generated trace of one host.
type gen struct {
	Host, Job string
	Seed      int64
	Period    time.Duration
	N         int // samples
	Devs      int
	Phases    []phase
	// Skip leaves sample i out (a gap).
	Skip func(i int) bool
	// Missing adds Missing entries to sample i.
	Missing func(i int) []string
	// Restart, when true for sample i, restarts the processes: the
	// counters fall back to what the new processes did since.
	Restart func(i int) bool
	// MemMiB is each device's memory use (0: 70000 MiB, a loaded model).
	MemMiB float64
}

func (g gen) samples() []trace.Sample {
	r := rand.New(rand.NewSource(g.Seed))
	var out []trace.Sample
	var io trace.IO
	var cpu float64
	for i := 0; i < g.N; i++ {
		p := g.Phases[0]
		for _, ph := range g.Phases {
			if i >= ph.From {
				p = ph
			}
		}
		if g.Restart != nil && g.Restart(i) {
			io = trace.IO{}
			cpu = 0
		}
		jit := func(x float64) float64 { return (r.Float64()*2 - 1) * x }
		io.WChar += p.IOPerPeriod
		io.WriteBytes += p.IOPerPeriod
		io.RChar += p.ReadPerPeriod
		cpu += max(0, p.CPU+jit(p.CPUJitter)) * g.Period.Seconds()
		procs := p.Procs
		if procs == 0 && p.Util > 0 {
			procs = 12
		}
		s := trace.Sample{V: 1, Time: t0.Add(time.Duration(i) * g.Period), Host: g.Host, Job: g.Job,
			IO: io, CPUUsec: uint64(cpu * 1e6), Procs: procs}
		for d := 0; d < g.Devs; d++ {
			mem := g.MemMiB
			if mem == 0 {
				mem = 70000
			}
			a := trace.Accel{ID: fmt.Sprint(d), MemUsedMiB: mem,
				Util:   min(100, max(0, p.Util+jit(p.UtilJitter))),
				PowerW: max(0, p.Power+jit(p.PowerJitter))}
			if d == p.IdleDev {
				a.Util, a.PowerW = 0, 60+jit(1)
			}
			a.Util, a.PowerW = float64(int(a.Util)), float64(int(a.PowerW*10))/10
			s.Accel = append(s.Accel, a)
		}
		if g.Missing != nil {
			s.Missing = g.Missing(i)
		}
		if g.Skip != nil && g.Skip(i) {
			continue
		}
		out = append(out, s)
	}
	return out
}

func encode(t testing.TB, ss []trace.Sample) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := trace.NewWriter(&buf)
	for _, s := range ss {
		if err := w.Write(s); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// Typical behaviours (per period of one minute).
var (
	training    = phase{IOPerPeriod: 2 << 20, ReadPerPeriod: 200 << 20, Util: 88, UtilJitter: 12, Power: 520, PowerJitter: 90, CPU: 10, CPUJitter: 2, IdleDev: -1}
	stuck       = phase{Util: 100, Power: 140, PowerJitter: 3, CPU: 8, CPUJitter: 0.05, IdleDev: -1}
	deadlocked  = phase{Util: 0, Power: 62, PowerJitter: 2, CPU: 0.02, CPUJitter: 0.01, Procs: 12, IdleDev: -1}
	checkpoint  = phase{IOPerPeriod: 1 << 30, Util: 0, Power: 65, PowerJitter: 2, CPU: 1, CPUJitter: 0.2, Procs: 12, IdleDev: -1}
	evaluation  = phase{Util: 60, UtilJitter: 35, Power: 330, PowerJitter: 120, CPU: 6, CPUJitter: 1.5, IdleDev: -1}
	loading     = phase{Util: 0, Power: 60, PowerJitter: 1, CPU: 1, CPUJitter: 0.05, Procs: 12, IdleDev: -1}
	cpuIdle     = phase{CPU: 0.01, CPUJitter: 0.005, Procs: 4, IdleDev: -1}
	cpuSpinning = phase{CPU: 16, CPUJitter: 0.05, Procs: 4, IdleDev: -1}
)

func at(p phase, from int) phase { p.From = from; return p }
