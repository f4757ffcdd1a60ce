package report

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/vendors"
)

// families are the textfile's metric families, in the order they are
// written. Every one is a gauge, and every series carries the mode of the
// run that wrote it (prolog, epilog, health) as its first label: each mode
// writes its own file (see WriteTextfile), and node_exporter serves the
// modes' series side by side.
var families = []struct{ name, help string }{
	{"vigil_run_timestamp_seconds", "Unix time the last vigil run of this mode on this node started."},
	{"vigil_run_duration_seconds", "Wall time of the last vigil run of this mode."},
	{"vigil_config_valid", "1 when the config file parsed and validated, else 0 (vigil then changes nothing)."},
	{"vigil_budget_expired", "1 when the run's total budget ran out."},
	{"vigil_node_verdict", "The node's verdict of the last run: 1 for the status it had, 0 for the others."},
	{"vigil_action", "What the last run did about the node: 1 for its action."},
	{"vigil_accelerators", "Accelerators the host shows, by vendor."},
	{"vigil_check_status", "A check's outcome: 1 for the status it had, 0 for the others."},
	{"vigil_check_duration_seconds", "Wall time of a check's last attempt."},
	{"vigil_check_attempts", "How many times a check ran (retries included)."},
	{"vigil_check_value", "A value a check measured or read, per device."},
	{"vigil_check_threshold", "The limit a check compared a value with."},
	{"vigil_guard_active", "1 for a check that failed but did not drain the node: too many nodes were drained for it ([guard])."},
	{"vigil_net_bad_link", "1 for a bad link of the last job's cross-node phase with this node at one end that blames neither end (nobody drained), by peer and state (link-fault, undecided)."},
}

// series are one run's sample lines by family name, each line a whole
// "name{labels} value".
type series map[string][]string

// add appends one sample: the mode label first, then kv's pairs.
func (s series) add(name, mode string, value string, kv ...string) {
	s[name] = append(s[name], name+labels(append([]string{"mode", mode}, kv...)...)+" "+value)
}

// seriesOf renders one report's series.
func seriesOf(r *Report) series {
	s := series{}
	m := r.Mode
	s.add("vigil_run_timestamp_seconds", m, num(float64(r.Start.UnixNano())/1e9))
	s.add("vigil_run_duration_seconds", m, num(r.Duration.Seconds()))
	s.add("vigil_config_valid", m, boolNum(r.Config.Valid))
	s.add("vigil_budget_expired", m, boolNum(r.BudgetExpired))
	for _, st := range statuses {
		s.add("vigil_node_verdict", m, boolNum(r.Verdict == st), "status", string(st))
	}
	s.add("vigil_action", m, "1", "action", r.Action.Kind, "done", strconv.FormatBool(r.Action.Done))
	for _, v := range vendors.Table {
		s.add("vigil_accelerators", m, strconv.Itoa(r.Accelerators.Count[benchmarks.Vendor(v.Name)]), "vendor", v.Name)
	}
	for _, res := range r.Results {
		for _, st := range statuses {
			s.add("vigil_check_status", m, boolNum(res.Status == st),
				"check", res.Check, "device", res.Device, "reason", res.Reason, "status", string(st))
		}
	}
	for _, res := range r.Results {
		s.add("vigil_check_duration_seconds", m, num(res.Duration.Seconds()), "check", res.Check)
	}
	for _, res := range r.Results {
		s.add("vigil_check_attempts", m, strconv.Itoa(res.Attempts), "check", res.Check)
	}
	for _, res := range r.Results {
		for _, v := range res.Values {
			s.add("vigil_check_value", m, num(v.Value), "check", res.Check, "device", v.Device, "name", v.Name, "unit", v.Unit)
			if v.Threshold != nil {
				s.add("vigil_check_threshold", m, num(*v.Threshold),
					"check", res.Check, "device", v.Device, "name", v.Name, "op", v.Op, "unit", v.Unit)
			}
		}
	}
	for _, g := range r.Guarded {
		s.add("vigil_guard_active", m, "1", "check", g.Check)
	}
	for _, l := range r.BadLinks {
		switch r.Node {
		case l.A:
			s.add("vigil_net_bad_link", m, "1", "peer", l.B, "state", l.State)
		case l.B:
			s.add("vigil_net_bad_link", m, "1", "peer", l.A, "state", l.State)
		}
	}
	return s
}

// Prometheus writes the report in the Prometheus text exposition format
// for node_exporter's textfile collector: the series of the report's mode
// alone, each family's HELP and TYPE once and then its samples (the
// exposition format wants a family's samples together). A series written
// twice keeps its first value, since node_exporter rejects a repeated
// series.
func Prometheus(w io.Writer, r *Report) error {
	var b bytes.Buffer
	s := seriesOf(r)
	seen := map[string]bool{}
	for _, f := range families {
		head := false
		for _, line := range s[f.name] {
			id := line[:strings.LastIndexByte(line, ' ')]
			if seen[id] {
				continue
			}
			seen[id] = true
			if !head {
				fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", f.name, f.help, f.name)
				head = true
			}
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

var statuses = []benchmarks.Status{benchmarks.StatusPass, benchmarks.StatusFail, benchmarks.StatusUnknown}

func boolNum(v bool) string {
	if v {
		return "1"
	}
	return "0"
}

func num(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// labels renders name/value pairs as {a="x",b="y"}.
func labels(kv ...string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(kv[i])
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(kv[i+1]))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}
