package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/report/promtest"
)

// The example alert rules and Grafana dashboard under docs/monitoring.
var (
	alertRules = filepath.Join("..", "docs", "monitoring", "alerts.yml")
	dashboard  = filepath.Join("..", "docs", "monitoring", "grafana-dashboard.json")
)

// writtenMetrics are the metric names in a textfile vigil writes (the
// sample report has every family).
func writtenMetrics(t *testing.T) []string {
	t.Helper()
	var b bytes.Buffer
	if err := Prometheus(&b, sampleReport()); err != nil {
		t.Fatal(err)
	}
	samples, err := promtest.Parse(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range samples {
		if !slices.Contains(names, s.Name) {
			names = append(names, s.Name)
		}
	}
	if !slices.Equal(names, MetricNames()) {
		t.Fatalf("the textfile has %v, MetricNames says %v", names, MetricNames())
	}
	return names
}

// TestAlertRules: promtool accepts docs/monitoring/alerts.yml, its unit
// tests (testdata/alerts_test.yml) pass, and it names only metrics vigil
// writes.
func TestAlertRules(t *testing.T) {
	promtest.CheckRules(t, alertRules)
	promtest.RuleTests(t, filepath.Join("testdata", "alerts_test.yml"))
	b, err := os.ReadFile(alertRules)
	if err != nil {
		t.Fatal(err)
	}
	known := writtenMetrics(t)
	for _, name := range regexp.MustCompile(`\bvigil_[a-z_]+`).FindAllString(string(b), -1) {
		if !slices.Contains(known, name) {
			t.Errorf("%s names %s, which vigil does not write", alertRules, name)
		}
	}
}

// TestGrafanaDashboard: the dashboard is JSON, every PromQL expression in
// it parses (promtool checks each one as a recording rule, Grafana's
// variables replaced) and names only metrics vigil writes.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile(dashboard)
	if err != nil {
		t.Fatal(err)
	}
	var d any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboard, err)
	}
	var exprs []string
	collectExprs(d, &exprs)
	if len(exprs) < 10 {
		t.Fatalf("%s: only %d expressions found: %q", dashboard, len(exprs), exprs)
	}
	known := writtenMetrics(t)
	var rules strings.Builder
	rules.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	for i, e := range exprs {
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("%q names no metric", e)
		}
		for _, n := range names {
			if !slices.Contains(known, n) {
				t.Errorf("%q names %s, which vigil does not write", e, n)
			}
		}
		q, _ := json.Marshal(grafanaVars.ReplaceAllString(e, ".*"))
		fmt.Fprintf(&rules, "      - record: vigil_dashboard:expr_%d\n        expr: %s\n", i, q)
	}
	p := filepath.Join(t.TempDir(), "dashboard-rules.yml")
	if err := os.WriteFile(p, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	promtest.CheckRules(t, p)
}

// labelValues is Grafana's variable query label_values(metric, label).
var labelValues = regexp.MustCompile(`^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?),\s*[a-zA-Z_]+\)$`)

// collectExprs finds the PromQL in a dashboard: panel targets' "expr", and
// the metric selectors of label_values variable queries.
func collectExprs(v any, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			s, ok := x.(string)
			switch {
			case ok && k == "expr":
				*out = append(*out, s)
			case ok && (k == "query" || k == "definition") && strings.HasPrefix(s, "label_values("):
				if m := labelValues.FindStringSubmatch(s); m != nil {
					*out = append(*out, m[1])
				} else {
					*out = append(*out, s) // fails the metric name check
				}
			default:
				collectExprs(x, out)
			}
		}
	case []any:
		for _, x := range v {
			collectExprs(x, out)
		}
	}
}

var (
	grafanaVars = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*\}?`)
	// promqlStrip removes what holds no metric name: strings, label
	// matchers, grouping clauses, range and offset durations.
	promqlStrip = []*regexp.Regexp{
		regexp.MustCompile(`"(?:\\.|[^"\\])*"`),
		regexp.MustCompile(`\{[^}]*\}`),
		regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`),
		regexp.MustCompile(`\[[^\]]*\]`),
	}
	promqlIdent = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*`)
	// promqlWords are PromQL's keywords and the functions the examples use.
	promqlWords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right",
		"sum", "min", "max", "avg", "count", "topk", "bottomk", "count_values", "quantile", "stddev",
		"time", "vector", "scalar", "abs", "rate", "increase", "delta", "changes", "resets", "timestamp",
		"max_over_time", "min_over_time", "avg_over_time", "last_over_time", "absent", "label_replace", "clamp_min", "clamp_max"}
)

// metricNames returns the metric names an expression selects.
func metricNames(expr string) []string {
	e := grafanaVars.ReplaceAllString(expr, "")
	for _, re := range promqlStrip {
		e = re.ReplaceAllString(e, " ")
	}
	var names []string
	for _, id := range promqlIdent.FindAllString(e, -1) {
		if !slices.Contains(promqlWords, id) && !slices.Contains(names, id) {
			names = append(names, id)
		}
	}
	return names
}

func TestMetricNamesOfPromQL(t *testing.T) {
	for _, tt := range []struct{ expr, want string }{
		{`count by (check) (max by (instance, check) (vigil_check_status{status="fail"}) == 1) or vector(0)`, "vigil_check_status"},
		{`time() - max by (instance) (vigil_run_timestamp_seconds{instance=~"$instance"}) > 3600`, "vigil_run_timestamp_seconds"},
		{`rate(node_cpu_seconds_total{mode="idle"}[$__rate_interval]) and on (instance) vigil_config_valid`, "node_cpu_seconds_total vigil_config_valid"},
		{`sum(up{job="a}b"})`, "up"},
	} {
		if got := strings.Join(metricNames(tt.expr), " "); got != tt.want {
			t.Errorf("metricNames(%q) = %q, want %q", tt.expr, got, tt.want)
		}
	}
}
