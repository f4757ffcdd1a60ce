package baseline

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Rule describes how limits are proposed, for people and for the TOML's
// header comment.
var Rule = fmt.Sprintf("floor = min(median - %d*1.4826*MAD, %.1f*median); "+
	"for lower-is-better metrics limit = max(median + %d*1.4826*MAD, median/%.1f); "+
	"rounded to 3 significant digits the permissive way; outliers are the devices beyond it",
	K, MaxFraction, K, MaxFraction)

// WriteTable writes the groups' statistics as a table, then the outliers
// one a line.
func WriteTable(w io.Writer, groups []*Group) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tCHECK\tMETRIC\tUNIT\tN\tMEDIAN\tMAD\tP1\tP5\tP95\tP99\tCURRENT\tPROPOSED\tOUTLIERS")
	for _, g := range groups {
		s := g.Stats
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n",
			orDash(g.Model), g.Check, g.Name, g.Unit, s.N, num(s.Median), num(s.MAD),
			num(s.P1), num(s.P5), num(s.P95), num(s.P99), limitText(g.Current, g.Lower), proposedText(g), len(g.Outliers))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, g := range groups {
		for _, o := range g.Outliers {
			fmt.Fprintf(w, "outlier: %s %s %s %s %s %s (median %s, proposed %s)\n", orDash(g.Model), g.Check, g.Name,
				o.Label(), num(o.Value), g.Unit, num(g.Stats.Median), proposedText(g))
		}
	}
	return nil
}

// WriteTOML writes the proposed limits as config tables, ready to paste:
// [checks.NAME.thresholds."MODEL"] for per-model limits, [checks.NAME] for
// the others. Each key carries its statistics in a comment.
func WriteTOML(w io.Writer, groups []*Group) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Proposed by vigil-baseline. Rule: %s.\n", Rule)
	table := ""
	for _, g := range groups {
		if !g.HasProposal {
			continue
		}
		t := fmt.Sprintf("[checks.%s]", bareOrQuoted(g.Check))
		if g.PerModel {
			model := g.Model
			if model == "" {
				model = "MODEL"
			}
			t = fmt.Sprintf("[checks.%s.thresholds.%s]", bareOrQuoted(g.Check), strconv.Quote(model))
		}
		if t != table {
			if g.PerModel && g.Model == "" {
				fmt.Fprintf(&b, "\n# The reports do not name the device model: replace MODEL, or give MODEL=DIR.\n%s\n", t)
			} else {
				fmt.Fprintf(&b, "\n%s\n", t)
			}
			table = t
		}
		op := ">="
		if g.Lower {
			op = "<="
		}
		fmt.Fprintf(&b, "%s = %s  # %s %s; n %d, median %s, MAD %s, outliers %d; current %s\n",
			g.ConfigKey, strconv.FormatFloat(g.Proposed, 'f', -1, 64), op, g.Unit, g.Stats.N,
			num(g.Stats.Median), num(g.Stats.MAD), len(g.Outliers), limitText(g.Current, g.Lower))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// bareOrQuoted returns a TOML key as a bare key when it may be one.
func bareOrQuoted(k string) string {
	for _, r := range k {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return strconv.Quote(k)
		}
	}
	return k
}

func num(x float64) string { return strconv.FormatFloat(x, 'g', 5, 64) }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func limitText(l *float64, lower bool) string {
	if l == nil {
		return "none"
	}
	if lower {
		return "<= " + num(*l)
	}
	return ">= " + num(*l)
}

func proposedText(g *Group) string {
	if !g.HasProposal {
		return "-"
	}
	return limitText(&g.Proposed, g.Lower)
}
