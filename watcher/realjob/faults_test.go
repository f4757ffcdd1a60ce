package realjob

import (
	"fmt"
	"time"
)

// A fault is one job of the e2e test: how it is launched, what goes
// wrong, and what vigil answers today. A wrong answer is allowed only with
// its gap named (gap, the id of its row in docs/testing.md's known-gaps
// table): a fix flips the row and the table together.
type fault struct {
	name   string // sub-test and job name: letter-kind
	launch string // "srun" (one task per rank) or "torchrun" (one per node)
	per    int    // ranks per node
	args   string // train.py's flags
	window string // VIGIL_HANG_DETECT_TIME of the job
	// node is the index, in Slurm's order (SLURM_NODEID), of the node whose
	// last rank the fault hits (rankOn).
	node int
	// block: the test blocks node's traffic to its peers (iptables) once
	// the job's output shows step blockAt. gloo's lower address listens
	// and its peers connect from 127.0.0.1, so only the node of the lowest
	// address (node 0) has all its pairs on its own address.
	block bool
	// cutOff: the block takes every port, slurmd's and the watchers' too
	// (management and data on one network): node 0 is cut off entirely.
	cutOff bool
	// freeze: the test freezes the step of the fault rank (on node) through
	// its cgroup freezer once the job's output shows step blockAt.
	freeze bool
	// auto: the row of the watch=auto run (atShippedSettings).
	auto bool

	want outcome
}

// outcome is what the test asserts: the job's end, the verdict, the
// digest (cause and culprits, as indexes of the job's sorted nodes) and a
// line the job's output must hold.
type outcome struct {
	state   string // "FAILED" (died), "COMPLETED", "RUNNING" (hung until the test cancels it), "" (not asserted)
	verdict bool   // some watcher printed a hung event, or the digest of a hang
	digest  bool   // one webhook from the coordinator, with a digest
	failed  bool   // the digest is of a failed job (event "failed"), not of a hang
	// eitherEnd: the digest may be of a hang or of the failed job (Slurm
	// ends a job whose node stopped answering, NODE_FAIL, about when the
	// evidence is confirmed).
	eitherEnd bool
	cause     string
	culprits  []int
	output    string // in the job's output (PyTorch's, gloo's or the launcher's own words)
	hintNot   string // words the digest's hint must not hold
	// straggler: the nodes the watchers' straggler events name (none for
	// every other row).
	straggler []int
	// within bounds the time from the fault to the digest's webhook, or,
	// for a straggler, to its event; with fromEnd, from the job's end
	// (Slurm's EndTime) to the digest: the fault's job fails when its
	// launcher says so (PyTorch's own time), and its digest comes as it
	// ends.
	within  time.Duration
	fromEnd bool
	gap     string // known gap (docs/testing.md), "" when the answer is right
}

// The fault jobs keep the default window (30 minutes): the test ends
// long before it, so every hang verdict is the job's pulse's or strong
// evidence's. The watchers sample every watchPeriod with pulse_floor
// watchPulseFloor (watchConfig), so that the pulse speaks within a
// minute of the fault: max(3 × cadence, floor, cadence + 3 periods) = 40 s
// for a job that prints at every poll.
const (
	faultWindow     = "30"  // VIGIL_HANG_DETECT_TIME of the fault jobs: the default, 30 minutes
	healthyWindow   = "2"   // of the healthy ones: 2 minutes, the new user's
	watchPeriod     = "10s" // --period of every watcher
	watchPulseFloor = "30s" // [watch] pulse_floor of every watcher
	blockAt         = 400   // the hangs come at step 400: some 8 polls of progress lines first
	dataEpoch       = 8     // e-data's rank blocks on its input shard of epoch 8 (step 400)
)

// watchPulseBeats is the watchers' pulse_beats: the jobs fault after
// about 20 s of training, 3 polls of their output at 10 s (a real job
// trains for hours before it hangs; the default is 5).
const watchPulseBeats = 3

// watchConfig is the [watch] section the watchers read (--config).
var watchConfig = fmt.Sprintf("[watch]\npulse_floor = %q\npulse_beats = %d\n", watchPulseFloor, watchPulseBeats)

// Bounds of the time from a fault to the digest's webhook: a host's ranks
// killed is evidence that cannot heal, reported at once (within 30 s,
// Slurm's ending of the job included); a rank that left a collective early
// ends the job when its peers' gloo fails (18 to 47 s after the fault,
// PyTorch's own time: measured from the job's end, the watchers' end
// records, a period's gather and slack); a hang is the pulse's (40 s
// after the last line, the line up to a poll before the fault) with the
// confirmation of a round and slack for a loaded 2-core machine.
//
// A straggler is named once its host's readings cover the window
// (min_coverage of the 2-minute window: 110 s of readings at 10 s since
// the watchers started) and a quarter of them, three at least, caught its
// rank stopped: by the time the window holds only readings of the duty
// cycle (2 minutes and a round after it began) at the latest, with a
// minute of slack for a loaded 2-core machine (measured: 37 to 132 s).
const (
	killedWithin = 30 * time.Second
	failedWithin = 45 * time.Second
	hungWithin   = 90 * time.Second
	// stragglerWithin bounds the time from the start of a rank's duty
	// cycle to its straggler event.
	stragglerWithin = 180 * time.Second
	// cutOffWithin bounds the time from node 0's cut to the digest: its
	// peers' watchers miss its ticks for the takeover's wait (3 periods
	// and a gather), meet again, read their waits, and either confirm the
	// evidence (a period and 3 more) or see Slurm end the job (SlurmdTimeout
	// 60 s: NODE_FAIL), with slack for a loaded 2-core machine.
	cutOffWithin = 150 * time.Second
)

// faults: one job per row, all at once on one cluster of 3 nodes per job.
var faults = []fault{
	{name: "a-kill", launch: "srun", per: 1, args: "--fault kill --fault-step 150", window: faultWindow, node: 1,
		want: outcome{state: "FAILED", digest: true, failed: true, cause: "rank-failed", culprits: []int{1}, output: "task 1: Killed", within: killedWithin}},
	{name: "b-stop", launch: "torchrun", per: 2, args: "--fault stop --fault-step 400", window: faultWindow, node: 1,
		want: outcome{state: "RUNNING", verdict: true, digest: true, cause: "rank-failed", culprits: []int{1}, within: hungWithin}},
	{name: "c-network", launch: "srun", per: 1, args: "", window: faultWindow, node: 0, block: true,
		want: outcome{state: "RUNNING", verdict: true, digest: true, cause: "network", culprits: []int{0}, within: hungWithin}},
	{name: "i-cutoff", launch: "srun", per: 1, args: "", window: faultWindow, node: 0, block: true, cutOff: true,
		want: outcome{verdict: true, digest: true, eitherEnd: true, cause: "network", culprits: []int{0}, within: cutOffWithin}},
	{name: "d-desync", launch: "torchrun", per: 1, args: "--fault desync --fault-step 150 --steps 250", window: faultWindow, node: 1,
		want: outcome{state: "FAILED", digest: true, failed: true, cause: "rank-failed", culprits: []int{1}, output: "gloo/transport/tcp/pair.cc", within: failedWithin, fromEnd: true}},
	{name: "e-data", launch: "srun", per: 2, args: "--fault data --fault-step 400", window: faultWindow, node: 1,
		want: outcome{state: "RUNNING", verdict: true, digest: true, cause: "data-stall", culprits: []int{1}, within: hungWithin}},
	{name: "g-frozen", launch: "srun", per: 1, args: "", window: faultWindow, node: 1, freeze: true,
		want: outcome{state: "RUNNING", verdict: true, digest: true, cause: "rank-failed", culprits: []int{1}, hintNot: "input file system", within: hungWithin}},
	{name: "h-slow", launch: "srun", per: 1, args: "--fault slow --fault-step 150 --pause 300 --stop-share 0.67", window: healthyWindow, node: 1,
		want: outcome{state: "RUNNING", straggler: []int{1}, output: "initialised gloo", within: stragglerWithin}},
	{name: "f-checkpoint", launch: "torchrun", per: 1, args: "--fault ckpt --fault-step 150 --pause 90 --steps 250", window: healthyWindow, node: 0,
		want: outcome{state: "COMPLETED", output: "checkpoint saved in 90s"}},
	{name: "f-eval", launch: "srun", per: 1, args: "--fault eval --fault-step 150 --pause 150 --steps 250", window: healthyWindow, node: 0,
		want: outcome{state: "COMPLETED", output: "eval loss"}},
}

// rankOn is the rank the fault hits: the last rank of the node.
func (f fault) rankOn() int { return f.per*f.node + f.per - 1 }

// At the shipped [watch] settings (the watch=auto run), the jobs train at
// 2 steps a second (autoStepSleep), so that the hangs of step blockAt
// come some 200 s in, after the 5 polls at 30 s that give the pulse its
// cadence; the pulse then waits 2 minutes of silence (pulse_floor), and
// strong evidence 3 flat periods of 30 s. The bounds grow with them:
// a hang's digest within the floor, two periods, the coordinator's
// gather and slack for a loaded 2-core machine; a failed job's, whose
// watchers meet at 30 s periods, within 60 s of the job's end (measured:
// 0.3 to 2.1 s); a straggler within the
// 2-minute window (--vigil-hang-time 2, sampled every 20 s) and slack.
const (
	autoStepSleep       = "0.5"
	autoFailedWithin    = 60 * time.Second
	autoHungWithin      = 240 * time.Second
	autoStragglerWithin = 300 * time.Second
	autoCutOffWithin    = 240 * time.Second
)

// atShippedSettings is the row for the watch=auto run: the job trains at
// autoStepSleep, and its bounds are those of the shipped settings.
func (f fault) atShippedSettings() fault {
	f.args += " --step-sleep " + autoStepSleep
	f.auto = true
	switch {
	case f.cutOff:
		f.want.within = autoCutOffWithin
	case len(f.want.straggler) > 0:
		f.want.within = autoStragglerWithin
	case f.want.within == hungWithin:
		f.want.within = autoHungWithin
	case f.want.within == failedWithin:
		f.want.within = autoFailedWithin
	}
	return f
}

// settle is how long after its fault a job is given to show its answer:
// for a fault job, the pulse's 40 s, the confirmation of strong evidence
// and slack for a loaded 2-core machine (the window, 30 minutes, is far
// off); for a healthy one, a window, the coordinator's digest a period
// later, and slack.
func (f fault) settle() time.Duration {
	switch {
	case f.auto && (f.cutOff || f.window == faultWindow):
		return f.want.within + 20*time.Second
	case f.auto:
		return autoStragglerWithin + 30*time.Second
	case f.cutOff:
		return cutOffWithin + 20*time.Second
	case f.window == faultWindow:
		return 110 * time.Second
	}
	w := 2 * time.Minute
	return w + w/3 + 30*time.Second
}
