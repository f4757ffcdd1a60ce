package baseline

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// stamp writes a time for the fleet view: UTC, to the second.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

// WriteFleet writes the fleet view for people: what was read, the checks'
// drains and precision beside the limits proposed for them, the lemons,
// every drain with its outcome, and the history of every component that
// failed or had a remedy of its own.
func WriteFleet(w io.Writer, v *View) error {
	fmt.Fprintf(w, "reports: %d from %d nodes, %s to %s (UTC); %d components with a stable identity\n",
		v.Reports, v.Nodes, stamp(v.From), stamp(v.To), v.Identified)
	fmt.Fprintf(w, "lemon rule: %s\n\n", v.Rule)
	if err := writeChecks(w, v.Checks); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := writeLemons(w, v.Lemons); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if len(v.Drains) == 0 {
		fmt.Fprintln(w, "no drains")
	}
	for _, d := range v.Drains {
		fmt.Fprintf(w, "drain: %s %s %s %s%s: %s: %s\n", stamp(d.At), d.Node, d.Check, d.Reason, drainedPart(d), d.Outcome, d.Why)
	}
	for _, h := range v.Histories {
		fmt.Fprintln(w)
		if err := writeHistory(w, h); err != nil {
			return err
		}
	}
	return nil
}

// writeChecks writes the table of checks that drained.
func writeChecks(w io.Writer, checks []CheckPrecision) error {
	if len(checks) == 0 {
		_, err := fmt.Fprintln(w, "no check drained a node")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tDRAINS\tCONFIRMED\tLIKELY-FALSE\tUNRESOLVED\tPRECISION\tTHRESHOLDS")
	for _, c := range checks {
		prec := "-"
		if p, ok := c.Precision(); ok {
			prec = fmt.Sprintf("%.2f", p)
		}
		thr := "-"
		if len(c.Thresholds) > 0 {
			thr = strings.Join(c.Thresholds, "; ")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%s\n", c.Check, c.Drains, c.Confirmed, c.LikelyFalse, c.Unresolved, prec, thr)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "precision = confirmed / (confirmed + likely-false); unresolved drains do not count")
	return err
}

// writeLemons writes the table of lemons.
func writeLemons(w io.Writer, lemons []*History) error {
	if len(lemons) == 0 {
		_, err := fmt.Fprintln(w, "no lemons")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LEMON\tMODEL\tNODES\tFAILED-RUNS\tEPISODES\tWHY")
	for _, h := range lemons {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", h.ID, orDash(h.Component.Model), strings.Join(h.Nodes, ">"),
			h.FailedRuns, len(h.Episodes), h.Lemon)
	}
	return tw.Flush()
}

// drainedPart names a drain's device and its identity: " gpu3
// (gpu:GPU-...)", " /scratch", "" for the node.
func drainedPart(d *Drain) string {
	switch {
	case d.Device == "":
		return ""
	case d.Component == "":
		return " " + d.Device
	}
	return fmt.Sprintf(" %s (%s)", d.Device, d.Component)
}

// writeHistory writes one component: what it is, a summary, its events.
func writeHistory(w io.Writer, h *History) error {
	c := h.Component
	var facts []string
	for _, f := range [][2]string{{"", c.Model}, {"serial ", c.Serial}, {"pci ", c.PCI}} {
		if f[1] != "" {
			facts = append(facts, f[0]+f[1])
		}
	}
	fmt.Fprintf(w, "component %s", h.ID)
	if len(facts) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(facts, ", "))
	}
	fmt.Fprintf(w, ": in %s; failed runs %d, episodes %d, drains %d, remedies %d", strings.Join(h.Nodes, " > "),
		h.FailedRuns, len(h.Episodes), h.Drains, h.Remedies)
	if h.Lemon != "" {
		fmt.Fprintf(w, "; LEMON: %s", h.Lemon)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i := 0; i < len(h.Events); {
		e, n := h.Events[i], repeats(h.Events[i:])
		text := eventText(e)
		if n > 1 {
			text += fmt.Sprintf(", %d runs to %s", n, stamp(h.Events[i+n-1].At))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", stamp(e.At), e.Node, e.Name, text)
		i += n
	}
	return tw.Flush()
}

// repeats is how many of events, from the first, are the same failure
// again (same node, name, check, reason and mode, no drain): a fault that
// persists run after run is one line.
func repeats(events []Event) int {
	first := events[0]
	n := 1
	for first.Kind == EventFail && n < len(events) {
		e := events[n]
		if e.Kind != EventFail || e.Drain != nil || e.Node != first.Node || e.Name != first.Name ||
			e.Check != first.Check || e.Reason != first.Reason || e.Mode != first.Mode {
			break
		}
		n++
	}
	return n
}

// eventText says what an event was.
func eventText(e Event) string {
	switch e.Kind {
	case EventFail:
		s := fmt.Sprintf("fail %s %s (%s)", e.Check, e.Reason, e.Mode)
		if e.Drain != nil {
			s += ", drained: " + string(e.Drain.Outcome)
		}
		return s
	case EventMoved:
		return "moved from " + e.Detail
	case EventRemedy:
		return "remedy " + e.Detail
	}
	return e.Kind
}
