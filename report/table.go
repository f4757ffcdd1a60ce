package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/vendors"
)

// Table writes the report for people: what was found, each check with its
// values, what was unavailable and why, and what vigil did or would do.
func Table(w io.Writer, r *Report) {
	job := ""
	if r.Job != "" {
		job = ", job " + r.Job
	}
	dry := ""
	if r.DryRun {
		dry = " (dry run: nothing is changed)"
	}
	fmt.Fprintf(w, "%s %s on %s%s%s\n", r.Program, r.Mode, r.Node, job, dry)
	switch {
	case !r.Config.Valid:
		fmt.Fprintf(w, "config:       %s is INVALID; vigil changes nothing until it is fixed:\n", r.Config.Path)
		for _, e := range r.Config.Errors {
			fmt.Fprintf(w, "                %s\n", e)
		}
	case !r.Config.Found:
		fmt.Fprintf(w, "config:       %s not found, using the shipped defaults\n", r.Config.Path)
	default:
		fmt.Fprintf(w, "config:       %s\n", r.Config.Path)
	}
	fmt.Fprintf(w, "accelerators: %s\n", describeAccel(r.Accelerators))
	if r.Skipped != "" {
		fmt.Fprintf(w, "skipped:      %s\n", r.Skipped)
	}
	for _, d := range r.Dropped {
		fmt.Fprintf(w, "dropped:      %s: %s\n", d.Check, d.Reason)
	}
	results(w, r.Results)
	notApplicable(w, r.NotApplicable)
	p, f, u := r.Counts()
	na := ""
	if len(r.NotApplicable) > 0 {
		na = fmt.Sprintf("; %d not applicable", len(r.NotApplicable))
	}
	fmt.Fprintf(w, "verdict:      %s (%d passed, %d failed, %d unknown%s) in %v\n", r.Verdict, p, f, u, na, r.Duration.Round(time.Millisecond))
	if r.BudgetExpired {
		fmt.Fprintf(w, "budget:       EXPIRED before every check finished\n")
	}
	fmt.Fprintf(w, "action:       %s\n", DescribeAction(r))
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note:         %s\n", n)
	}
}

// results writes the table of results, then which checks ran and, by
// reason, which could not tell.
func results(w io.Writer, results []benchmarks.Result) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tSTATUS\tREASON\tDEVICE\tTIME\tDETAILS")
	for _, res := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", res.Check, res.Status, dash(res.Reason), dash(res.Device),
			res.Duration.Round(time.Millisecond), clip(oneLine(res.Message), 100))
		for _, v := range res.Values {
			fmt.Fprintf(tw, "  \t%s\t\t%s\t\t%s\n", v.Status, dash(v.Device), describeValue(v))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	var ran []string
	var whys []string
	byWhy := map[string][]string{}
	for _, res := range results {
		if res.Status != benchmarks.StatusUnknown {
			ran = append(ran, res.Check)
			continue
		}
		why := firstNonEmpty(oneLine(res.Message), res.Reason)
		if _, ok := byWhy[why]; !ok {
			whys = append(whys, why)
		}
		byWhy[why] = append(byWhy[why], res.Check)
	}
	fmt.Fprintf(w, "ran:          %s\n", listOrNone(ran))
	if len(whys) == 0 {
		fmt.Fprintf(w, "unavailable:  none\n")
	}
	for i, why := range whys {
		label := "unavailable:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "%-13s %s: %s\n", label, strings.Join(byWhy[why], ", "), why)
	}
}

// notApplicable lists the checks left out for want of their vendor's
// devices, one line per reason.
func notApplicable(w io.Writer, na []benchmarks.NotApplicable) {
	var whys []string
	byWhy := map[string][]string{}
	for _, n := range na {
		if _, ok := byWhy[n.Message]; !ok {
			whys = append(whys, n.Message)
		}
		byWhy[n.Message] = append(byWhy[n.Message], n.Check)
	}
	for i, why := range whys {
		label := "n/a:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "%-13s %s: %s\n", label, strings.Join(byWhy[why], ", "), why)
	}
}

// DescribeAction says in words what vigil did or would do.
func DescribeAction(r *Report) string {
	a := r.Action
	would := func(s string) string {
		if r.DryRun {
			return "would " + s + " (dry run)"
		}
		if a.Error != "" {
			return "tried to " + s + ", FAILED: " + a.Error
		}
		return s[:1] + s[1:]
	}
	var s string
	switch a.Kind {
	case ActionDrain:
		s = would(fmt.Sprintf("drain %s with reason %q", r.Node, a.Reason))
	case ActionResume:
		s = would(fmt.Sprintf("resume %s (drained by vigil: %q)", r.Node, a.Reason))
	case ActionHold:
		s = would(fmt.Sprintf("hold job %s and leave %s alone", r.Job, r.Node))
	case ActionKeep:
		s = fmt.Sprintf("none: %s is held by someone else (%s), left as it is", r.Node, heldBy(a))
	case ActionStay:
		s = would(fmt.Sprintf("keep %s drained with reason %q", r.Node, a.Reason))
		if len(a.Kept) > 0 {
			s += ": " + strings.Join(a.Kept, "; ")
		}
	default:
		s = "none"
	}
	if len(a.Killed) > 0 {
		s += fmt.Sprintf("; killed leftover processes %v", a.Killed)
	}
	if a.Remedy != nil {
		s += "; " + describeRemedy(*a.Remedy, r.DryRun)
	}
	return s
}

// describeRemedy says what the repair ladder did or would do.
func describeRemedy(m Remedy, dry bool) string {
	what := m.Kind + " " + m.Device
	switch m.Kind {
	case RemedyNeedsService:
		return fmt.Sprintf("needs service: %d remedies for %s within %s, never resumed by vigil", m.Attempt, orNode(m.Device), m.Window)
	case RemedyReboot:
		what = "reboot requested"
	}
	what = strings.TrimSpace(what) + fmt.Sprintf(" (remedy %d of %d within %s)", m.Attempt, m.Max, m.Window)
	switch {
	case dry:
		what = "would " + what
	case m.Error != "":
		what += ", FAILED: " + m.Error
	case !m.Done:
		what += ", not done"
	}
	if m.Note != "" {
		what += ": " + m.Note
	}
	return "remedy: " + what
}

func orNode(device string) string {
	if device == "" {
		return "the node"
	}
	return device
}

// heldBy describes another party's hold on a node: its state and reason.
func heldBy(a Action) string {
	state := a.State
	if state == "" {
		state = "drained"
	}
	if a.Reason == "" {
		return state
	}
	return fmt.Sprintf("%s, reason %q", state, a.Reason)
}

func describeAccel(a Accelerators) string {
	if a.Count.None() {
		return vendors.NoneFound()
	}
	var parts []string
	for _, v := range vendors.Table {
		if n := a.Count[benchmarks.Vendor(v.Name)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, v.Maker))
		}
	}
	return strings.Join(parts, ", ")
}

func describeValue(v benchmarks.Value) string {
	s := fmt.Sprintf("%s = %s", v.Name, human(v.Value))
	if v.Unit != "" {
		s += " " + v.Unit
	}
	if v.Threshold != nil {
		s += fmt.Sprintf(" (want %s %s)", v.Op, human(*v.Threshold))
	}
	return s
}

// human prints a value for people: at most four significant digits after
// the point, no exponent for everyday magnitudes (the JSON report and the
// textfile keep full precision).
func human(f float64) string {
	if f == float64(int64(f)) && f < 1e15 && f > -1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	a := f
	if a < 0 {
		a = -a
	}
	if a >= 100 {
		return strconv.FormatFloat(f, 'f', 1, 64)
	}
	return strconv.FormatFloat(f, 'g', 4, 64)
}

// clip shortens s to at most n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-3]) + "..."
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// Progress shows checks as they run, one line each, for a terminal.
type Progress struct {
	// W is where progress goes (stderr or stdout when it is a terminal).
	W io.Writer
}

// Start announces a check (attempt counts from 1).
func (p *Progress) Start(name string, attempt int) {
	if attempt > 1 {
		fmt.Fprintf(p.W, "  %-24s retry %d ...\r", name, attempt-1)
		return
	}
	fmt.Fprintf(p.W, "  %-24s running ...\r", name)
}

// Done shows a check's result.
func (p *Progress) Done(res benchmarks.Result) {
	fmt.Fprintf(p.W, "\033[K  %-24s %-7s %s %v\n", res.Check, res.Status, res.Reason, res.Duration.Round(time.Millisecond))
}
