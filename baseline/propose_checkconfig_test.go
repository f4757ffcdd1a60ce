package baseline_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/vigil-hpc/vigil/baseline"
	"github.com/vigil-hpc/vigil/benchmarks"
	_ "github.com/vigil-hpc/vigil/benchmarks/all" // every check, as vigil-prolog --check-config has them
	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/lifecycle/settings"
	"github.com/vigil-hpc/vigil/report"
)

// everyValue is one value of every kind the checks write with a unit that
// vigil-baseline reads (check, value name, unit, device): device metrics
// with and without a config key, per-node values, per-link values of the
// cross-node checks and the command check's own values.
var everyValue = []struct{ check, name, unit, device string }{
	{"gemm", "tflops_bf16_8192", "TFLOPS", "gpu0"},
	{"gemm", "tflops_bf16_4096", "TFLOPS", "gpu0"},
	{"gemm", "tflops_fp8_8192", "TFLOPS", "gpu0"},
	{"npu-gemm", "tflops_fp16_8192", "TFLOPS", "npu0"},
	{"kernel-launch", "event_us", "us", "gpu0"},
	{"kernel-launch", "wall_us", "us", "gpu0"},
	{"kernel-launch", "wall_us_p99", "us", "gpu0"},
	{"npu-kernel-launch", "event_us", "us", "npu0"},
	{"copy", "h2d_gbps", "GB/s", "gpu0"},
	{"copy", "d2d_gbps", "GB/s", "gpu0"},
	{"npu-copy", "d2h_gbps", "GB/s", "npu0"},
	{"allreduce", "busbw_gbps", "GB/s", ""},
	{"allreduce", "algbw_gbps", "GB/s", ""},
	{"multi-allreduce", "busbw_gbps", "GB/s", ""},
	{"nccl-allreduce-multinode", "busbw_gbps", "GB/s", ""},
	{"nccl-allreduce-multinode", "algbw_gbps", "GB/s", ""},
	{"npu-alltoall", "busbw_gbps", "GB/s", ""},
	{"overlap", "gemm_alone_ms", "ms", ""},
	{"overlap", "together_ms", "ms", ""},
	{"disk", "write_mib_s", "MiB/s", "/scratch"},
	{"disk", "read_mib_s", "MiB/s", "/scratch"},
	{"disk", "read_latency_ms", "ms", "/scratch"},
	{"net-connect", "rtt_us", "us", "PEER"},
	{"command", "step_ms", "ms", ""},
	{"model-gpt", "step_ms", "ms", ""},
	{"model-gpt", "tokens_per_s", "tokens/s", ""},
	{"model-gpt", "compute_ms", "ms", "gpu0"},
	{"model-resnet", "step_ms", "ms", ""},
	{"model-resnet", "images_per_s", "images/s", ""},
	{"model-gpt-multinode", "step_ms", "ms", ""},
}

// writeEveryValue writes one report per node with everyValue, the values
// spread a little, and returns the directory.
func writeEveryValue(t *testing.T, nodes int) string {
	t.Helper()
	dir := t.TempDir()
	start := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for n := range nodes {
		node := fmt.Sprintf("n%02d", n+1)
		r := &report.Report{V: report.Version, Program: "vigil-prolog", Mode: "prolog", Node: node,
			Start: start.Add(time.Duration(n) * time.Minute), Verdict: benchmarks.StatusPass}
		byCheck := map[string]*benchmarks.Result{}
		var order []string
		for _, v := range everyValue {
			res := byCheck[v.check]
			if res == nil {
				res = &benchmarks.Result{Check: v.check, Status: benchmarks.StatusPass, Attempts: 1}
				byCheck[v.check] = res
				order = append(order, v.check)
			}
			dev := v.device
			if dev == "PEER" {
				dev = fmt.Sprintf("n%02d", (n+1)%nodes+1)
			}
			res.Values = append(res.Values, benchmarks.Value{Device: dev, Name: v.name, Value: 100 + float64(n),
				Unit: v.unit, Status: benchmarks.StatusPass})
		}
		for _, c := range order {
			r.Results = append(r.Results, *byCheck[c])
		}
		if _, err := report.WriteJSON(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// proposedTOML runs vigil-baseline on args and returns its TOML part and
// the whole output.
func proposedTOML(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := baseline.Command(args, &out, &errb); code != baseline.ExitOK {
		t.Fatalf("vigil-baseline %v: exit %d\n%s%s", args, code, out.String(), errb.String())
	}
	i := strings.Index(out.String(), "# Proposed by vigil-baseline")
	if i < 0 {
		t.Fatalf("no TOML in:\n%s", out.String())
	}
	return out.String()[i:], out.String()
}

// TestProposalLoadsInCheckConfig: the whole TOML that vigil-baseline
// prints, for reports holding every kind of value, is a config that
// vigil-prolog --check-config accepts, with and without a model given
// (the "MODEL" placeholder). An invalid config turns the prolog's checks
// off, so one bad proposed key would cost the fleet its checks.
func TestProposalLoadsInCheckConfig(t *testing.T) {
	dir := writeEveryValue(t, 6)
	for _, args := range [][]string{{"--model", "NVIDIA H100 80GB HBM3", dir}, {dir}} {
		doc, _ := proposedTOML(t, args...)
		if !strings.Contains(doc, "[checks.model-gpt.thresholds.") || !strings.Contains(doc, "step_ms") {
			t.Errorf("vigil-baseline %v proposes no model-gpt step_ms floor:\n%s", args[:len(args)-1], doc)
		}
		path := filepath.Join(t.TempDir(), "vigil.toml")
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		noEnv := func(string) (string, bool) { return "", false }
		if code := settings.CheckConfig(&out, path, true, noEnv, nil); code != decide.ExitOK {
			t.Errorf("vigil-baseline %v proposes a config that --check-config rejects (exit %d):\n%s\n%s", args[:len(args)-1], code, out.String(), doc)
		}
	}
}

// TestProposalNoPerLinkValues: the cross-node checks' values are per
// link (node to peer), not per device: vigil-baseline neither proposes a
// limit for them nor lists the peers as outlier devices, and says so.
func TestProposalNoPerLinkValues(t *testing.T) {
	dir := writeEveryValue(t, 6)
	var out, errb bytes.Buffer
	if code := baseline.Command([]string{dir}, &out, &errb); code != baseline.ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), "net-connect") || strings.Contains(out.String(), "rtt_us") {
		t.Errorf("per-link values in the output:\n%s", out.String())
	}
	if !strings.Contains(errb.String(), "net-connect") || !strings.Contains(errb.String(), "per link") {
		t.Errorf("stderr does not say why net-connect is left out: %q", errb.String())
	}
}

// TestProposalKeysAreTheChecksOwn: every key proposed under
// [checks.NAME.thresholds."MODEL"] is a metric the check compares with a
// limit, i.e. one of the keys of its shipped thresholds (a thresholds
// table accepts any key, so --check-config alone cannot tell), and every
// key proposed directly under [checks.NAME] is one of its settings.
func TestProposalKeysAreTheChecksOwn(t *testing.T) {
	doc, _ := proposedTOML(t, "--model", "H100", writeEveryValue(t, 6))
	var cfg struct {
		Checks map[string]map[string]any `toml:"checks"`
	}
	if _, err := toml.Decode(doc, &cfg); err != nil {
		t.Fatal(err)
	}
	if len(cfg.Checks) == 0 {
		t.Fatalf("nothing proposed:\n%s", doc)
	}
	for name, table := range cfg.Checks {
		c, ok := benchmarks.Lookup(name)
		if !ok {
			t.Errorf("proposal for unknown check %q", name)
			continue
		}
		d := c.Spec().Settings
		if d == nil {
			t.Errorf("proposal for %s, which publishes no settings", name)
			continue
		}
		shipped := shippedMetricKeys(d())
		for key, v := range table {
			if key != "thresholds" {
				continue
			}
			for model, limits := range v.(map[string]any) {
				for metric := range limits.(map[string]any) {
					if len(shipped) > 0 && !shipped[metric] {
						t.Errorf("[checks.%s.thresholds.%q] %s: not a metric the check has limits for (shipped: %v)", name, model, metric, shipped)
					}
				}
			}
		}
	}
}

// shippedMetricKeys returns the metric keys of the thresholds field of a
// check's default settings (any model), empty when it ships none.
func shippedMetricKeys(defaults any) map[string]bool {
	keys := map[string]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for v.Kind() == reflect.Pointer {
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.Tag.Get("toml") == "thresholds" && v.Field(i).Kind() == reflect.Map {
				iter := v.Field(i).MapRange()
				for iter.Next() {
					for _, k := range iter.Value().MapKeys() {
						keys[k.String()] = true
					}
				}
			}
			if f.Anonymous {
				walk(v.Field(i))
			}
		}
	}
	walk(reflect.ValueOf(defaults))
	return keys
}
