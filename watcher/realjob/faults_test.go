package realjob

import "time"

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
	// freeze: the test freezes the step of the fault rank (on node) through
	// its cgroup freezer once the job's output shows step blockAt.
	freeze bool

	want outcome
}

// outcome is what the test asserts: the job's end, the verdict, the
// digest (cause and culprits, as indexes of the job's sorted nodes) and a
// line the job's output must hold.
type outcome struct {
	state    string // "FAILED" (died), "COMPLETED", "RUNNING" (hung until the test cancels it)
	verdict  bool   // some watcher printed a hung event, or the digest of a hang
	digest   bool   // one webhook from the coordinator, with a digest
	failed   bool   // the digest is of a failed job (event "failed"), not of a hang
	cause    string
	culprits []int
	output   string // in the job's output (PyTorch's, gloo's or the launcher's own words)
	hintNot  string // words the digest's hint must not hold
	// straggler: the nodes the watchers' straggler events name (none for
	// every other row).
	straggler []int
	// within bounds the time from the fault to the digest's webhook, or,
	// for a straggler, to its event.
	within time.Duration
	gap    string // known gap (docs/testing.md), "" when the answer is right
}

// The jobs run as a site runs them: the SPANK plugin's watch=auto starts
// vigil-watch on every node of the job, with the shipped [watch] settings
// (period 30 s, pulse_floor 2 minutes, pulse_beats 5, window 30 minutes,
// straggler_window 10 minutes); vigil.toml names only the webhooks a job
// may send to. The fault jobs set no window of their own (the default, 30
// minutes, far beyond the test): every hang verdict is the job's pulse's
// or strong evidence's. The healthy jobs and the straggler keep the
// 2-minute window a new user sets with --vigil-hang-time=2 (a user's own
// choice, which a site does not make for them; the hardest test of a
// healthy phase that prints nothing, and, for the straggler, the window
// the straggler rules judge when it is shorter than straggler_window).
//
// Every job is paced (paced: 0.9 s of "data loading" per step, a progress
// line every 10 steps, some 9 s): the faults come at step blockAt, after
// some 3 minutes of training, 6 polls of the output at 30 s, so that the
// pulse has learned its cadence (pulse_beats 5) before the fault; and the
// paced ranks leave the 2-core machine's CPUs mostly idle, so that the
// three clusters run at once without starving a rank until it looks hung.
const (
	faultWindow   = "30" // the fault jobs set no window: the default, 30 minutes
	healthyWindow = "2"  // --vigil-hang-time of the healthy ones: 2 minutes, the new user's
	paced         = "--step-sleep 0.9"
	blockAt       = 200 // the faults come at step 200: some 3 minutes, 6 polls, of progress lines first
	dataEpoch     = 4   // e-data's rank blocks on its input shard of epoch 4 (step 200)
)

// Bounds of the time from a fault to the digest's webhook, at the shipped
// settings (period P = 30 s, pulse_floor 2 minutes):
//
//   - a host's ranks killed is evidence that cannot heal, reported at once:
//     within 30 s, Slurm's ending of the job included (killedWithin);
//   - a rank that left a collective early ends the job when its peers'
//     gloo fails, once it finished its steps, one collective ahead (10
//     paced steps after the skip, ~9 s: --steps 210); the digest of the
//     failed job comes while the job ends (failedWithin: those steps,
//     gloo's own failure and the end, a minute);
//   - a hang is the pulse's: the cadence is a poll (P: a line every 9 s,
//     read at every poll), so the silence it waits for is max(3 × P,
//     pulse_floor) = 2 minutes after the last progress line, which is
//     stamped when a poll reads it, up to P after the fault; the poll
//     that finds the silence comes up to P later, and the coordinator's
//     round that carries the digest up to P after that: P + 2 min + P + P
//     = 3.5 minutes (hungWithin). Strong evidence (a rank stopped, its
//     processes frozen) is confirmed by 3 flat periods after the poll that
//     sees it, P + 3P + P, no later.
//
// A straggler is named once its host's readings cover the window the
// straggler rules judge (the job's 2-minute window, shorter than
// straggler_window; the period follows it, a sixth: 7 readings at 20 s,
// min_coverage 0.8) and a quarter of them, three at least, caught its
// rank stopped: by the time the window holds only readings of the duty
// cycle (2 minutes and a round after it began), with three more rounds
// for the chance of the duty cycle's phase at the readings
// (stragglerWithin: 2 min + 4 × 20 s + a poll's reading of it, 210 s).
const (
	killedWithin    = 30 * time.Second
	failedWithin    = 60 * time.Second
	hungWithin      = 210 * time.Second
	stragglerWithin = 210 * time.Second
	// slowFor is the straggler's duty cycle: long enough for a window of
	// its readings and a few rounds more.
	slowFor = "300"
)

// faults: one job per row, all at once on one cluster of 3 nodes per job.
var faults = []fault{
	{name: "a-kill", launch: "srun", per: 1, args: paced + " --fault kill --fault-step 200", window: faultWindow, node: 1,
		want: outcome{state: "FAILED", digest: true, failed: true, cause: "rank-failed", culprits: []int{1}, output: "task 1: Killed", within: killedWithin}},
	{name: "b-stop", launch: "torchrun", per: 2, args: paced + " --fault stop --fault-step 200", window: faultWindow, node: 1,
		want: outcome{state: "RUNNING", verdict: true, digest: true, cause: "rank-failed", culprits: []int{1}, within: hungWithin}},
	{name: "c-network", launch: "srun", per: 1, args: paced, window: faultWindow, node: 0, block: true,
		want: outcome{state: "RUNNING", verdict: true, digest: true, cause: "network", culprits: []int{0}, within: hungWithin}},
	{name: "d-desync", launch: "torchrun", per: 1, args: paced + " --fault desync --fault-step 200 --steps 210", window: faultWindow, node: 1,
		want: outcome{state: "FAILED", digest: true, failed: true, cause: "rank-failed", culprits: []int{1}, output: "gloo/transport/tcp/pair.cc", within: failedWithin}},
	{name: "e-data", launch: "srun", per: 2, args: paced + " --fault data --fault-step 200", window: faultWindow, node: 1,
		want: outcome{state: "RUNNING", verdict: true, digest: true, cause: "data-stall", culprits: []int{1}, within: hungWithin}},
	{name: "g-frozen", launch: "srun", per: 1, args: paced, window: faultWindow, node: 1, freeze: true,
		want: outcome{state: "RUNNING", verdict: true, digest: true, cause: "rank-failed", culprits: []int{1}, hintNot: "input file system", within: hungWithin}},
	{name: "h-slow", launch: "srun", per: 1, args: paced + " --fault slow --fault-step 200 --pause " + slowFor + " --stop-share 0.6", window: healthyWindow, node: 1,
		want: outcome{state: "RUNNING", straggler: []int{1}, output: "initialised gloo", within: stragglerWithin}},
	{name: "f-checkpoint", launch: "torchrun", per: 1, args: paced + " --fault ckpt --fault-step 200 --pause 90 --steps 230", window: healthyWindow, node: 0,
		want: outcome{state: "COMPLETED", output: "checkpoint saved in 90s"}},
	{name: "f-eval", launch: "srun", per: 1, args: paced + " --fault eval --fault-step 200 --pause 150 --steps 230", window: healthyWindow, node: 0,
		want: outcome{state: "COMPLETED", output: "eval loss"}},
}

// rankOn is the rank the fault hits: the last rank of the node.
func (f fault) rankOn() int { return f.per*f.node + f.per - 1 }

// settle is how long after its fault a job is given to show its answer:
// its bound and a round of slack for a loaded 2-core machine; a healthy
// job ends by itself before: its phase (150 s at most), the 30 paced
// steps after it (some 30 s) and a minute of slack.
func (f fault) settle() time.Duration {
	if f.want.within > 0 {
		return f.want.within + 30*time.Second
	}
	return 4 * time.Minute
}
