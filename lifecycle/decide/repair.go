package decide

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/internal/vendors"
	"github.com/vigil-hpc/vigil/report"
	"github.com/vigil-hpc/vigil/slurm"
)

// The repair ladder ([repair], docs/operations.md). A run that drains the
// node for a failure whose reason token or check has a ladder also plans
// one remedy for the failed component (the node's device, "" for the node
// itself): the rung after the remedies it already had within the window
// (the last rung once they are used up), or a later one when that rung
// cannot be taken here. A reset needs a run outside any job, a configured
// command for the device's vendor and no process on the device; a reboot
// needs RebootProgram in slurm.conf. Once the component had max_remedies
// within the window, the node is drained for service instead
// ("vigil: xid NeedsService gpu3 (XID79, 3 reboots in 7d)"): vigil never
// resumes such a drain, and the admins are told. One remedy per run: the
// first failure with a ladder (a reboot helps the others too). The plan is
// made here, without I/O; apply carries it out (apply_repair.go) after the
// drain, and remembers what it did (remedies.go).

// ReasonNeedsService is the reason token of a drain whose repair ladder
// is spent: the component needs service, and vigil never resumes the node.
const ReasonNeedsService = "NeedsService"

// RepairView is what the repair decision reads beyond the results.
type RepairView struct {
	// History is this node's remedies within reach (remedies.go).
	History []RemedyRecord
	// RebootProgram is slurm.conf's RebootProgram, "" when it has none.
	RebootProgram string
	// RebootKnown is false when slurm.conf could not be read.
	RebootKnown bool
	// Idle is, per failed device ("gpu3"), whether no process holds its
	// device node; a device not in it is not known to be idle.
	Idle map[string]bool
}

// RemedyPlan is the remedy a run plans for one failed component.
type RemedyPlan struct {
	// Kind is config.RemedyReset, config.RemedyReboot or
	// report.RemedyNeedsService.
	Kind string
	// Entry is the failure it is for.
	Entry benchmarks.DrainEntry
	// Attempt is its number within the window (for needs-service, the
	// remedies made).
	Attempt int
	// Argv is the reset command.
	Argv []string
	// Reboot is the reboot request.
	Reboot slurm.Reboot
	// Fallback is the reboot asked for when the reset fails; nil for none.
	Fallback *RemedyPlan
	// Note says why a rung was passed over, or what the node needs.
	Note string
}

// Report is the plan as the report's action records it.
func (m *RemedyPlan) Report(r config.Repair, at time.Time, node string) *report.Remedy {
	rm := &report.Remedy{Kind: m.Kind, Check: m.Entry.Check, Reason: m.Entry.Reason, Device: m.Entry.Device,
		Attempt: m.Attempt, Max: r.MaxRemedies, Window: r.Window.String(), At: at.UTC(), Note: m.Note}
	switch m.Kind {
	case config.RemedyReset:
		rm.Command = m.Argv
	case config.RemedyReboot:
		rm.Command = append([]string{"scontrol"}, m.Reboot.Argv(node)...)
	}
	return rm
}

// repair adds the remedy to the drain plan p of a run whose results (the
// guard's) failed.
func (in Inputs) repair(p Plan, results []benchmarks.Result) Plan {
	r := in.Rules.Repair
	target, ladder, ok := firstLadder(r, results)
	if !ok {
		return p
	}
	if why := in.noRemedyHere(); why != "" {
		p.Note = JoinNotes(p.Note, "no remedy this run: "+why)
		return p
	}
	done := remediesOf(in.Repair.History, target.Device, in.Now, time.Duration(r.Window))
	if len(done) >= r.MaxRemedies {
		return in.needsService(p, target, done)
	}
	m, passed := in.rung(p, target, ladder, len(done))
	if m == nil {
		p.Note = JoinNotes(p.Note, "no remedy: "+passed+"; the node is drained only")
		return p
	}
	m.Note = JoinNotes(passed, m.Note)
	p.Remedy = m
	p.Action.Remedy = m.Report(r, in.Now, in.Node)
	p.Action.Remedy.ID = componentID(in.Components, target.Device)
	p.KeepDown = m.Kind == config.RemedyReboot && in.Slurm.Node != nil && in.Slurm.Node.RebootedDown()
	return p
}

// componentID is the stable id of the part results call device, "" when
// no check identified it.
func componentID(parts []benchmarks.Component, device string) string {
	for _, c := range parts {
		if device != "" && (c.Name == device || c.PCI == device) {
			return c.ID()
		}
	}
	return ""
}

// firstLadder is the first failure of results that has a ladder.
func firstLadder(r config.Repair, results []benchmarks.Result) (benchmarks.DrainEntry, []string, bool) {
	for _, res := range results {
		if res.Status != benchmarks.StatusFail {
			continue
		}
		if l := r.Ladder(res.Check, res.Reason); len(l) > 0 {
			return benchmarks.EntryOf(res), l, true
		}
	}
	return benchmarks.DrainEntry{}, nil, false
}

// noRemedyHere says why no remedy may be planned on the node as Slurm
// showed it, "" when one may: its state could not be read, a reboot is
// pending already, or another party holds it (the drain is refused).
func (in Inputs) noRemedyHere() string {
	n := in.Slurm.Node
	switch {
	case n == nil && in.DryRun:
		return ""
	case n == nil:
		return "the node's state could not be read"
	case n.Is("REBOOT_REQUESTED") || n.Is("REBOOT_ISSUED") || n.Is("REBOOT"):
		return "a reboot of " + in.Node + " is pending already"
	case n.HeldByOthers():
		return in.Node + " is held by someone else"
	}
	return ""
}

// remediesOf are the remedies of history for device within window
// before now.
func remediesOf(history []RemedyRecord, device string, now time.Time, window time.Duration) []RemedyRecord {
	var out []RemedyRecord
	for _, h := range history {
		if h.Device == device && h.At.After(now.Add(-window)) && !h.At.After(now) {
			out = append(out, h)
		}
	}
	return out
}

// rung picks the remedy for the attempt after done ones: the ladder's rung
// at that step (its last once they are used up) or, when that one cannot
// be taken here, the next that can. passed says why rungs were passed over.
func (in Inputs) rung(p Plan, target benchmarks.DrainEntry, ladder []string, done int) (m *RemedyPlan, passed string) {
	var whys []string
	for i := min(done, len(ladder)-1); i < len(ladder); i++ {
		switch ladder[i] {
		case config.RemedyReset:
			argv, why := in.resetArgv(target)
			if why != "" {
				whys = append(whys, "no reset: "+why)
				continue
			}
			m = &RemedyPlan{Kind: config.RemedyReset, Entry: target, Attempt: done + 1, Argv: argv}
			if fb, _ := in.reboot(p, target, done, ladder[i+1:]); fb != nil {
				m.Fallback = fb
			}
			return m, strings.Join(whys, "; ")
		case config.RemedyReboot:
			fb, why := in.reboot(p, target, done, ladder[i:i+1])
			if fb != nil {
				return fb, strings.Join(whys, "; ")
			}
			whys = append(whys, "no reboot: "+why)
		}
	}
	return nil, strings.Join(whys, "; ")
}

// reboot is the reboot request when rungs hold one and RebootProgram is
// set (in a dry run that could not read slurm.conf, assumed), else why not.
func (in Inputs) reboot(p Plan, target benchmarks.DrainEntry, done int, rungs []string) (*RemedyPlan, string) {
	if !slices.Contains(rungs, config.RemedyReboot) {
		return nil, ""
	}
	note := ""
	switch {
	case !in.Repair.RebootKnown && in.DryRun:
		note = "RebootProgram not checked (slurm.conf not read)"
	case !in.Repair.RebootKnown:
		return nil, "slurm.conf could not be read to find RebootProgram"
	case in.Repair.RebootProgram == "":
		return nil, "slurm.conf sets no RebootProgram (see docs/operations.md)"
	}
	req := slurm.Reboot{Reason: p.Drain.Reason}
	switch in.Rules.Repair.RebootNextState {
	case config.NextStateDown:
		req.ASAP, req.NextState = true, slurm.NextStateDown
	case config.NextStateResume:
		req.ASAP, req.NextState = true, slurm.NextStateResume
	}
	return &RemedyPlan{Kind: config.RemedyReboot, Entry: target, Attempt: done + 1, Reboot: req, Note: note}, ""
}

// resetArgv is the reset command for target's device, or why there is none
// here: inside a job, a device that is no accelerator of the vendor table,
// no command for its vendor, a device not known to be idle.
func (in Inputs) resetArgv(target benchmarks.DrainEntry) ([]string, string) {
	if in.Job != nil {
		return nil, "never inside a job (a run outside jobs, such as the health check, resets)"
	}
	row, index, ok := DeviceOf(target.Device)
	if !ok {
		return nil, fmt.Sprintf("%q is not an accelerator", target.Device)
	}
	cmd := in.Rules.Repair.Reset[row.Name]
	if len(cmd) == 0 {
		return nil, "no [repair.reset] " + row.Name + " command"
	}
	if !in.Repair.Idle[target.Device] {
		return nil, target.Device + " is in use (or its users could not be read)"
	}
	argv := make([]string, len(cmd))
	for i, a := range cmd {
		argv[i] = strings.ReplaceAll(a, config.IndexPlaceholder, strconv.Itoa(index))
	}
	return argv, ""
}

// DeviceOf is the vendor table's row and the index of a device ("gpu3").
func DeviceOf(device string) (vendors.Row, int, bool) {
	for _, row := range vendors.Table {
		if rest, ok := strings.CutPrefix(device, row.DevPrefix); ok && rest != "" && isDigits(rest) {
			i, err := strconv.Atoi(rest)
			return row, i, err == nil
		}
	}
	return vendors.Row{}, 0, false
}

func isDigits(s string) bool {
	return strings.Trim(s, "0123456789") == ""
}

// needsService drains the node for service: target's component had done
// remedies within the window. The reason names it first, with the
// failure and the count; the admins hear of it, whatever they heard before.
func (in Inputs) needsService(p Plan, target benchmarks.DrainEntry, done []RemedyRecord) Plan {
	r := in.Rules.Repair
	entries, _ := benchmarks.ParseDrain(p.Drain.Reason)
	next := []benchmarks.DrainEntry{{Check: target.Check, Reason: ReasonNeedsService, Device: target.Device}}
	for _, e := range entries {
		if e.Check != target.Check || e.Device != target.Device {
			next = append(next, e)
		}
	}
	count := remedyCount(done) + " in " + windowWords(time.Duration(r.Window))
	p.Drain.Reason = benchmarks.FormatDrain(next) + " (" + target.Reason + ", " + count + ")"
	p.Action.Reason = p.Drain.Reason
	m := &RemedyPlan{Kind: report.RemedyNeedsService, Entry: target, Attempt: len(done),
		Note: fmt.Sprintf("%s had %s: vigil does not resume %s; service it, then resume it by hand", OrNode(target.Device), count, in.Node)}
	p.Remedy = m
	p.Action.Remedy = m.Report(r, in.Now, in.Node)
	if in.Rules.Notify && !slices.Contains(p.Notify, target.Check) {
		p.Notify = append(p.Notify, target.Check)
	}
	return p
}

// remedyCount says how many remedies of which kind: "3 reboots",
// "1 reset, 2 reboots".
func remedyCount(done []RemedyRecord) string {
	var parts []string
	for _, kind := range []string{config.RemedyReset, config.RemedyReboot} {
		n := 0
		for _, d := range done {
			if d.Kind == kind {
				n++
			}
		}
		if n > 0 {
			word := kind
			if n > 1 {
				word += "s"
			}
			parts = append(parts, fmt.Sprintf("%d %s", n, word))
		}
	}
	return strings.Join(parts, ", ")
}

// windowWords writes a window shortly: "7d", "12h", "90m".
func windowWords(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return strconv.Itoa(int(d/(24*time.Hour))) + "d"
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + "h"
	case d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + "m"
	}
	return d.String()
}

// OrNode names a remedy's component: the device, else the node.
func OrNode(device string) string {
	if device == "" {
		return "the node"
	}
	return device
}

// NeedsService reports whether a vigil reason holds a NeedsService entry.
func NeedsService(reason string) bool {
	entries, _ := benchmarks.ParseDrain(reason)
	return slices.ContainsFunc(entries, func(e benchmarks.DrainEntry) bool { return e.Reason == ReasonNeedsService })
}

// serviceStays keeps a NeedsService drain exactly as it is, whatever the
// run found: only an admin lifts it.
func (in Inputs) serviceStays(p Plan, failCode int) Plan {
	entries, _ := benchmarks.ParseDrain(p.Old)
	why := "needs service: vigil never resumes it (resume by hand once serviced)"
	p.Drain = DrainPlan{Reason: p.Old}
	for _, e := range entries {
		p.Drain.Kept = append(p.Drain.Kept, keptCheck{Entry: e, Why: e.Check + " " + why})
	}
	p.Step, p.Exit = StepStay, failCode
	p.Action = report.Action{Kind: report.ActionStay, Reason: p.Old, Kept: keptWhys(p.Drain.Kept)}
	p.Note = fmt.Sprintf("%s stays drained: %s", in.Node, why)
	if in.comments() {
		p.Comment = in.Node + " stays drained: it needs service"
	}
	return p
}

// JoinNotes joins two notes of a report with "; "; an empty first note
// leaves the second.
func JoinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
