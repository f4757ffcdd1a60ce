package report

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// Prometheus writes the report in the Prometheus text exposition format
// for node_exporter's textfile collector.
func Prometheus(w io.Writer, r *Report) error {
	var b bytes.Buffer
	run := labels("mode", r.Mode)
	family(&b, "vigil_run_timestamp_seconds", "gauge", "Unix time the last vigil run on this node started.")
	fmt.Fprintf(&b, "vigil_run_timestamp_seconds%s %s\n", run, num(float64(r.Start.UnixNano())/1e9))
	family(&b, "vigil_run_duration_seconds", "gauge", "Wall time of the last vigil run.")
	fmt.Fprintf(&b, "vigil_run_duration_seconds%s %s\n", run, num(r.Duration.Seconds()))
	family(&b, "vigil_config_valid", "gauge", "1 when the config file parsed and validated, else 0 (vigil then changes nothing).")
	fmt.Fprintf(&b, "vigil_config_valid%s %s\n", run, boolNum(r.Config.Valid))
	family(&b, "vigil_budget_expired", "gauge", "1 when the run's total budget ran out.")
	fmt.Fprintf(&b, "vigil_budget_expired%s %s\n", run, boolNum(r.BudgetExpired))
	family(&b, "vigil_node_verdict", "gauge", "The node's verdict of the last run: 1 for the status it had, 0 for the others.")
	for _, s := range statuses {
		fmt.Fprintf(&b, "vigil_node_verdict%s %s\n", labels("mode", r.Mode, "status", string(s)), boolNum(r.Verdict == s))
	}
	family(&b, "vigil_action", "gauge", "What the last run did about the node: 1 for its action.")
	fmt.Fprintf(&b, "vigil_action%s 1\n", labels("mode", r.Mode, "action", r.Action.Kind, "done", strconv.FormatBool(r.Action.Done)))
	family(&b, "vigil_accelerators", "gauge", "Accelerators the host shows, by vendor.")
	fmt.Fprintf(&b, "vigil_accelerators%s %d\n", labels("vendor", "nvidia"), r.Accelerators.NVIDIA)
	fmt.Fprintf(&b, "vigil_accelerators%s %d\n", labels("vendor", "ascend"), r.Accelerators.Ascend)

	family(&b, "vigil_check_status", "gauge", "A check's outcome: 1 for the status it had, 0 for the others.")
	for _, res := range r.Results {
		for _, s := range statuses {
			fmt.Fprintf(&b, "vigil_check_status%s %s\n",
				labels("check", res.Check, "device", res.Device, "reason", res.Reason, "status", string(s)), boolNum(res.Status == s))
		}
	}
	family(&b, "vigil_check_duration_seconds", "gauge", "Wall time of a check's last attempt.")
	for _, res := range r.Results {
		fmt.Fprintf(&b, "vigil_check_duration_seconds%s %s\n", labels("check", res.Check), num(res.Duration.Seconds()))
	}
	family(&b, "vigil_check_attempts", "gauge", "How many times a check ran (retries included).")
	for _, res := range r.Results {
		fmt.Fprintf(&b, "vigil_check_attempts%s %d\n", labels("check", res.Check), res.Attempts)
	}
	var vals, ths bytes.Buffer
	for _, res := range r.Results {
		for _, v := range res.Values {
			l := labels("check", res.Check, "device", v.Device, "name", v.Name, "unit", v.Unit)
			fmt.Fprintf(&vals, "vigil_check_value%s %s\n", l, num(v.Value))
			if v.Threshold != nil {
				fmt.Fprintf(&ths, "vigil_check_threshold%s %s\n", labels("check", res.Check, "device", v.Device, "name", v.Name, "op", v.Op, "unit", v.Unit), num(*v.Threshold))
			}
		}
	}
	if vals.Len() > 0 {
		family(&b, "vigil_check_value", "gauge", "A value a check measured or read, per device.")
		b.Write(vals.Bytes())
	}
	if ths.Len() > 0 {
		family(&b, "vigil_check_threshold", "gauge", "The limit a check compared a value with.")
		b.Write(ths.Bytes())
	}
	_, err := w.Write(b.Bytes())
	return err
}

// WriteTextfile writes the report's metrics atomically to path (its
// directory is created when missing).
func WriteTextfile(path string, r *Report) error {
	var b bytes.Buffer
	if err := Prometheus(&b, r); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return WriteAtomic(path, b.Bytes(), 0o644)
}

var statuses = []benchmarks.Status{benchmarks.StatusPass, benchmarks.StatusFail, benchmarks.StatusUnknown}

func family(b *bytes.Buffer, name, typ, help string) {
	fmt.Fprintf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

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
