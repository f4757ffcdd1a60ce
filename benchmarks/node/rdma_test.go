package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// rdmaFixture is testdata/rdma/<name>, a sysfs tree (sys/class/infiniband,
// sys/module, proc/sys/kernel/random/boot_id).
func rdmaFixture(name string) string { return filepath.Join("testdata", "rdma", name) }

// rdmaEnv runs the check on root with a fresh state directory and extra settings.
func rdmaEnv(t *testing.T, root, state, extra string) *benchmarks.Env {
	if state == "" {
		state = t.TempDir()
	}
	return &benchmarks.Env{Settings: settings(t, "root = '"+root+"'\nstate_dir = '"+state+"'\n"+extra)}
}

func TestReadRDMASummary(t *testing.T) {
	tests := []struct {
		fixture string
		want    RDMASummary
	}{
		{"one-port", RDMASummary{Devices: 1, Ports: 1, ActivePorts: 1, MinRateGbps: 400, TotalRateGbps: 400, GDR: true, GDRModule: "nvidia_peermem"}},
		{"dgx", RDMASummary{Devices: 8, Ports: 8, ActivePorts: 8, MinRateGbps: 400, TotalRateGbps: 3200, GDR: true, GDRModule: "nvidia_peermem"}},
		{"dgx-no-gdr", RDMASummary{Devices: 8, Ports: 8, ActivePorts: 8, MinRateGbps: 400, TotalRateGbps: 3200}},
		{"port-down", RDMASummary{Devices: 3, Ports: 3, ActivePorts: 2, MinRateGbps: 200, TotalRateGbps: 600, GDR: true, GDRModule: "nvidia_peermem"}},
		{"roce", RDMASummary{Devices: 2, Ports: 2, ActivePorts: 2, MinRateGbps: 100, TotalRateGbps: 200, GDR: true, GDRModule: "nv_peer_mem"}},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			got, err := ReadRDMASummary(rdmaFixture(tt.fixture))
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
	t.Run("root from [checks.rdma]", func(t *testing.T) {
		got, err := RDMASummaryFrom(settings(t, "root = '"+rdmaFixture("dgx-no-gdr")+"'\n"))
		require.NoError(t, err)
		assert.Equal(t, tests[2].want, got)
	})
	t.Run("no infiniband class", func(t *testing.T) {
		got, err := ReadRDMASummary(t.TempDir())
		require.NoError(t, err)
		assert.Equal(t, RDMASummary{}, got)
	})
}

func TestRDMAPortParsing(t *testing.T) {
	ports, err := readRDMAPorts(rdmaFixture("port-down"))
	require.NoError(t, err)
	require.Len(t, ports, 3)
	p := ports[1]
	assert.Equal(t, "mlx5_1/1", p.Name())
	assert.Equal(t, "DOWN", p.State)
	assert.Equal(t, "Polling", p.PhysState)
	assert.False(t, p.Active())
	assert.Equal(t, "MT4129", p.HCA)
	assert.Equal(t, "InfiniBand", p.LinkLayer)
	assert.Equal(t, uint64(123456789), p.Counters["port_xmit_data"])
	_, err = parseRate("fast")
	assert.Error(t, err)
}

func TestRDMACheck(t *testing.T) {
	tests := []struct {
		name, fixture, settings string
		status                  benchmarks.Status
		reason, device, message string
	}{
		{"one port", "one-port", "", benchmarks.StatusPass, "", "",
			"1 RDMA ports on 1 devices, 1 active (slowest 400 Gb/s), GPUDirect RDMA (nvidia_peermem)"},
		{"dgx all expected", "dgx", "expect_active = ['mlx5_*']\nmin_rate_gbps = 400\n", benchmarks.StatusPass, "", "",
			"8 RDMA ports on 8 devices, 8 active (slowest 400 Gb/s), GPUDirect RDMA (nvidia_peermem)"},
		{"no gdr noted", "dgx-no-gdr", "", benchmarks.StatusPass, "", "",
			"8 RDMA ports on 8 devices, 8 active (slowest 400 Gb/s); no GPUDirect RDMA (nvidia_peermem not loaded)"},
		{"no gdr required", "dgx-no-gdr", "require_gdr = true\n", benchmarks.StatusFail, ReasonGDRMissing, "",
			"no GPUDirect RDMA: neither nvidia_peermem nor nv_peer_mem is loaded"},
		{"down port not expected", "port-down", "", benchmarks.StatusPass, "", "",
			"3 RDMA ports on 3 devices, 2 active (slowest 200 Gb/s), GPUDirect RDMA (nvidia_peermem)"},
		{"down port expected", "port-down", "expect_active = ['mlx5_*/1']\n", benchmarks.StatusFail, ReasonRDMAPortDown, "mlx5_1/1",
			"mlx5_1/1 DOWN (Polling), expected active"},
		{"slow port by hca", "port-down", "expect_active = ['mlx5_0', 'mlx5_2']\n[hca_min_rate_gbps]\nMT4129 = 400\n", benchmarks.StatusFail, ReasonRDMARateLow, "mlx5_2/1",
			"mlx5_2/1 InfiniBand at 200 Gb/s < 400"},
		{"rate only on expected ports", "port-down", "expect_active = ['mlx5_0']\nmin_rate_gbps = 400\n", benchmarks.StatusPass, "", "",
			"3 RDMA ports on 3 devices, 2 active (slowest 200 Gb/s), GPUDirect RDMA (nvidia_peermem)"},
		{"expected device missing", "roce", "expect_active = ['mlx5_0', 'ibp*']\n", benchmarks.StatusFail, ReasonRDMADeviceMissing, "",
			`no RDMA port matches "ibp*" (ports: mlx5_0/1, mlx5_1/1)`},
		{"roce legacy module", "roce", "min_rate_gbps = 100\n", benchmarks.StatusPass, "", "",
			"2 RDMA ports on 2 devices, 2 active (slowest 100 Gb/s), GPUDirect RDMA (nv_peer_mem)"},
		{"no devices", "", "", benchmarks.StatusPass, "", "", "no RDMA devices"},
		{"no devices but expected", "", "expect_active = ['mlx5_0']\n", benchmarks.StatusFail, ReasonRDMADeviceMissing, "",
			"no RDMA devices; expect_active names mlx5_0"},
		{"bad pattern", "one-port", "expect_active = ['mlx5_[']\n", benchmarks.StatusUnknown, benchmarks.ReasonInvalidSettings, "",
			`settings of [checks.rdma]: expect_active = "mlx5_[": want "dev" or "dev/port" (glob patterns allowed)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if tt.fixture != "" {
				root = rdmaFixture(tt.fixture)
			}
			r := (&rdma{}).Run(context.Background(), rdmaEnv(t, root, "", tt.settings))
			assert.Equal(t, tt.status, r.Status, r.Message)
			assert.Equal(t, tt.reason, r.Reason)
			assert.Equal(t, tt.device, r.Device)
			assert.Equal(t, tt.message, r.Message)
		})
	}
}

// TestRDMACounters: the first run takes the baseline, growth within the
// limit passes, growth beyond it fails the port; a dry run saves nothing;
// a new boot or a counter that went down starts a new baseline.
func TestRDMACounters(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.CopyFS(root, os.DirFS(rdmaFixture("dgx"))))
	state := t.TempDir()
	counter := func(port, name, v string) {
		p := filepath.Join(root, ibClass, port, "ports", "1", "counters", name)
		require.NoError(t, os.Chmod(p, 0o644))
		require.NoError(t, os.WriteFile(p, []byte(v+"\n"), 0o644))
	}
	run := func(dry bool) benchmarks.Result {
		env := rdmaEnv(t, root, state, "")
		env.DryRun = dry
		return (&rdma{}).Run(context.Background(), env)
	}
	r := run(false)
	require.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	assert.FileExists(t, filepath.Join(state, "rdma.json"))

	counter("mlx5_3", "symbol_error", "900")
	counter("mlx5_3", "link_downed", "1")
	r = run(false)
	require.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	assert.Contains(t, r.Values, benchmarks.Value{Device: "mlx5_3/1", Name: "symbol_error_increase", Value: 900, Unit: "count",
		Threshold: ptr(1000.0), Op: "<=", Status: benchmarks.StatusPass})

	counter("mlx5_3", "link_downed", "4")
	for range 2 { // the dry run leaves the baseline where it was
		r = run(true)
		assert.Equal(t, benchmarks.StatusFail, r.Status)
		assert.Equal(t, ReasonRDMAPortErrors, r.Reason)
		assert.Equal(t, "mlx5_3/1", r.Device)
		assert.Equal(t, "mlx5_3/1 link_downed grew by 3 since the last run (limit 1)", r.Message)
	}
	assert.Equal(t, benchmarks.StatusFail, run(false).Status)
	assert.Equal(t, benchmarks.StatusPass, run(false).Status, "the growth counts once")

	counter("mlx5_3", "link_downed", "0") // driver reloaded: counters reset
	assert.Equal(t, benchmarks.StatusPass, run(false).Status)
	counter("mlx5_3", "link_downed", "9")
	bootID := filepath.Join(root, "proc", "sys", "kernel", "random", "boot_id")
	require.NoError(t, os.Chmod(bootID, 0o644))
	require.NoError(t, os.WriteFile(bootID, []byte("another boot\n"), 0o644))
	assert.Equal(t, benchmarks.StatusPass, run(false).Status, "a new boot is a new baseline")
}

func ptr[T any](v T) *T { return &v }

func TestOddOneOut(t *testing.T) {
	dgx := RDMASummary{Devices: 8, Ports: 8, ActivePorts: 8, MinRateGbps: 400, TotalRateGbps: 3200, GDR: true}
	with := func(f func(*RDMASummary)) RDMASummary { s := dgx; f(&s); return s }
	noGDR := with(func(s *RDMASummary) { s.GDR = false })
	tests := []struct {
		name  string
		nodes map[string]RDMASummary
		want  []RDMAFinding
	}{
		{"one node", map[string]RDMASummary{"a": noGDR}, nil},
		{"all alike", map[string]RDMASummary{"a": dgx, "b": dgx, "c": dgx}, nil},
		{"all without gdr", map[string]RDMASummary{"a": noGDR, "b": noGDR}, nil},
		{"the seed case: one node without gdr", map[string]RDMASummary{"a": dgx, "b": noGDR, "c": dgx, "d": dgx},
			[]RDMAFinding{{"b", ReasonGDRMissing, "b: no GPUDirect RDMA (nvidia_peermem not loaded), 3 of 4 nodes have it"}}},
		{"two nodes, one without gdr", map[string]RDMASummary{"a": dgx, "b": noGDR},
			[]RDMAFinding{{"b", ReasonGDRMissing, "b: no GPUDirect RDMA (nvidia_peermem not loaded), 1 of 2 nodes have it"}}},
		{"most without gdr: none named", map[string]RDMASummary{"a": dgx, "b": noGDR, "c": noGDR}, nil},
		{"a port down", map[string]RDMASummary{"a": dgx, "b": dgx,
			"c": with(func(s *RDMASummary) { s.ActivePorts, s.TotalRateGbps = 7, 2800 })},
			[]RDMAFinding{{"c", ReasonRDMAPortsBelowPeers, "c: 7 active RDMA ports, most nodes have 8"}}},
		{"two nodes, tie goes to more ports", map[string]RDMASummary{"a": dgx, "b": with(func(s *RDMASummary) { s.ActivePorts = 7 })},
			[]RDMAFinding{{"b", ReasonRDMAPortsBelowPeers, "b: 7 active RDMA ports, most nodes have 8"}}},
		{"a slow port", map[string]RDMASummary{"a": dgx, "b": dgx, "c": with(func(s *RDMASummary) { s.MinRateGbps = 200 })},
			[]RDMAFinding{{"c", ReasonRDMARateBelowPeers, "c: slowest active RDMA port 200 Gb/s, most nodes 400 Gb/s"}}},
		{"no rdma among rdma nodes, sorted findings", map[string]RDMASummary{"b": dgx, "a": {}, "c": dgx},
			[]RDMAFinding{
				{"a", ReasonGDRMissing, "a: no GPUDirect RDMA (nvidia_peermem not loaded), 2 of 3 nodes have it"},
				{"a", ReasonRDMAPortsBelowPeers, "a: 0 active RDMA ports, most nodes have 8"}}},
		{"cpu nodes alike", map[string]RDMASummary{"a": {}, "b": {}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, OddOneOut(tt.nodes))
		})
	}
}
