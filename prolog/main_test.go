package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
)

func TestMain(m *testing.M) {
	if benchmarks.IsChild(os.Args) {
		os.Exit(benchmarks.ChildMain(os.Args, os.Stdin, os.NewFile(3, "result"), os.Stderr))
	}
	// Runs started here (runAs) keep the record paths of valid configs in a
	// directory of their own, not in the machine's /var/lib/vigil.
	state, err := os.MkdirTemp("", "vigil-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("VIGIL_STATE_DIR", state)
	code := m.Run()
	os.RemoveAll(state)
	os.Exit(code)
}

func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(bad, []byte("[prolog]\nbudget = 5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.toml")
	if err := os.WriteFile(good, []byte("[prolog]\nchecks = [\"fault-inject\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		code     int
		contains string
	}{
		{"help", []string{"--help"}, 0, "EXIT STATUS"},
		{"bad flag", []string{"--nope"}, 2, "flag provided but not defined"},
		{"stray argument", []string{"now"}, 2, "unexpected argument"},
		{"list checks", []string{"--list-checks"}, 0, "fault-inject              health  none    no       test aid"},
		{"list checks reasons", []string{"--list-checks"}, 0, "\n                          reasons: FaultInjected FaultNeedsChild\n"},
		{"list check names", []string{"--list-checks=names"}, 0, "\nfault-inject\n"},
		{"list checks table by name", []string{"--list-checks=table"}, 0, "CHECK  "},
		{"list checks bad form", []string{"--list-checks=json"}, 2, `"json": want names or table`},
		{"check-config invalid", []string{"--check-config", "--config", bad}, 3, "bad.toml:2: prolog.budget: invalid value"},
		{"check-config valid", []string{"--check-config", "--config", good}, 0, "[checks.fault-inject]"},
		{"check-config flag override", []string{"--check-config", "--config", good, "--budget", "7m"}, 0, `budget = "7m0s"`},
		{"explicit missing config", []string{"--dry-run", "--config", filepath.Join(dir, "none.toml")}, 3, "INVALID"},
		{"dry run", []string{"--dry-run", "--config", good, "--log-level", "error"}, 0, "ran:          fault-inject"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tt.args, &out, &errb)
			all := out.String() + errb.String()
			if code != tt.code || !strings.Contains(all, tt.contains) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, tt.code, tt.contains, all)
			}
		})
	}
}

// TestListCheckNames: --list-checks=names prints exactly the registered
// names, one a line, for scripts (benchmarks/gpu/validate.sh greps it).
func TestListCheckNames(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--list-checks=names"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	want := strings.Join(benchmarks.Names(), "\n") + "\n"
	if out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
	out.Reset()
	run([]string{"--list-checks"}, &out, &errb)
	// A header, a line a check and its reasons' line, a blank line and
	// the tokens any check can give.
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2*len(benchmarks.Names())+3 || !strings.HasPrefix(lines[0], "CHECK ") ||
		!strings.HasPrefix(lines[len(lines)-1], "any check: CheckTimedOut ") {
		t.Fatalf("table of %d lines for %d checks:\n%s", len(lines), len(benchmarks.Names()), out.String())
	}
}

// TestFlagErrors: a bad command line is one line on stderr that names the
// flag (never a config file) and points at --help, exit 2.
func TestFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--nope"}, "flag provided but not defined: -nope"},
		{"bad suite", []string{"--suite", "fast"}, `flag --suite="fast": invalid value: "fast": want "full" or "health"`},
		{"bad retries", []string{"--retries", "99"}, `flag --retries="99": invalid value: 99: want 0 to 10`},
		{"retries not a number", []string{"--retries", "two"}, `flag --retries="two"`},
		{"bad budget", []string{"--check-config", "--budget", "10ms"}, `flag --budget="10ms": invalid value: 10ms: want at least 1s`},
		{"bad timing", []string{"--dry-run", "--timing", "after"}, `flag --timing="after"`},
		{"unknown check", []string{"--checks", "gemm,nosuch"}, `flag --checks/--skip: unknown check "nosuch"`},
		{"bad log level", []string{"--log-level", "loud"}, `--log-level "loud": want debug, info, warn or error`},
		{"stray argument", []string{"now"}, `unexpected argument "now"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(tt.args, &out, &errb)
			msg := errb.String()
			if code != 2 || out.Len() != 0 {
				t.Fatalf("exit %d (want 2), stdout %q", code, out.String())
			}
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "vigil-prolog: ") ||
				!strings.Contains(msg, tt.want) || !strings.HasSuffix(msg, " (see vigil-prolog --help)\n") {
				t.Fatalf("want one line with %q and a pointer to --help, got:\n%s", tt.want, msg)
			}
			if strings.Contains(msg, ".toml") {
				t.Fatalf("a flag error names a config file: %s", msg)
			}
		})
	}
}

// TestHelpListsOverrides: the OVERRIDES of --help are the table's, each
// flag with its variable.
func TestHelpListsOverrides(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"--help"}, &out, io.Discard); code != 0 {
		t.Fatalf("exit %d", code)
	}
	_, overrides, ok := strings.Cut(out.String(), "\nOVERRIDES ")
	overrides, _, _ = strings.Cut(overrides, "\nEXIT STATUS")
	if !ok {
		t.Fatal("--help has no OVERRIDES")
	}
	for _, k := range config.PrologOverrides().Keys {
		if !strings.Contains(overrides, "    --"+k.Flag+" ") || !strings.Contains(strings.Join(strings.Fields(overrides), " "), "env "+k.Env) {
			t.Errorf("OVERRIDES lacks --%s or env %s:\n%s", k.Flag, k.Env, overrides)
		}
	}
}

// TestHelpOnStdout: --help and -h print the manual on stdout, exit 0.
func TestHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"policy-check", "--help"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 || errb.Len() != 0 || !strings.Contains(out.String(), "vigil-prolog") {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q", args, code, out.Len(), errb.String())
		}
	}
}

// TestCheckConfigWholeFile: --check-config validates every section with
// the code that later uses it, and names file, line, key and what is
// allowed; the effective [watch] and [policy] are printed too.
func TestCheckConfigWholeFile(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name, body, want string
	}{
		{"watch typo", "[watch]\nwindwo = \"2m\"\n", ":2: watch.windwo: unknown key (keys of [watch]: action,"},
		{"watch range", "[watch]\nwindow = \"2m\"\n\nmin_coverage = 1.5\n", ":4: watch.min_coverage: invalid value: 1.5, want in (0, 1]"},
		{"watch action", "[watch]\naction = \"drain\"\n", `:2: watch.action: invalid value: "drain": want "notify" (or "none"), "cancel", "requeue" or "requeue-exclude"`},
		{"disk size", "[checks.disk]\npath = \"/tmp\"\nsize_mib = 0\n", ":3: checks.disk.size_mib: invalid value: 0: want 1 to 1024"},
		{"gemm sizes", "# sizes\n[checks.gemm]\nsizes = [17]\n", ":3: checks.gemm.sizes: invalid value: 17: want a multiple of 16 from 16 to 32768"},
		{"policy hang time", "[policy]\nmin_hang_time = \"10m\"\nmax_hang_time = \"5m\"\n", ":3: policy.max_hang_time: invalid value: 5m0s: shorter than min_hang_time 10m0s"},
		{"policy action", "[policy]\nhang_actions = [\"notify\", \"drain\"]\n", `:2: policy.hang_actions: invalid value: "drain": want`},
		{"epilog", "[epilog]\nkill_grace = \"-1s\"\n", ":2: epilog.kill_grace: invalid value: -1s: must be 0 or more"},
		{"disk block", "[checks.disk]\nsize_mib = 1\nblock_kib = 2048\n", ":3: checks.disk.block_kib: invalid value: 2048: want a multiple of 4 from 4 to size_mib*1024 (1024)"},
		{"gemm dtype", "[checks.gemm]\ndtypes = [\"int8\"]\n", `:2: checks.gemm.dtypes: invalid value: "int8": want bf16, fp16, tf32 or fp8`},
		{"gemm peers", "[checks.gemm]\npeer_fraction = 2.0\n", ":2: checks.gemm.peer_fraction: invalid value: 2: want 0 to 1"},
		{"launch", "[checks.kernel-launch]\nlaunches = 5\n", ":2: checks.kernel-launch.launches: invalid value: 5: want 10 or more"},
		{"copy", "[checks.copy]\nbytes = 1000\n", ":2: checks.copy.bytes: invalid value: 1000: want a multiple of 4, at least 1 MiB"},
		{"allreduce", "[checks.allreduce]\niters = 0\n", ":2: checks.allreduce.iters: invalid value: 0: want 1 or more"},
		{"overlap", "[checks.overlap]\nsize = 100\n", ":2: checks.overlap.size: invalid value: 100: want a multiple of 16"},
		{"command", "[checks.command]\ntimeout = \"0s\"\n", ":2: checks.command.timeout: invalid value: 0s: must be positive"},
		{"gpu-count", "[checks.gpu-count]\nexpected = -1\n", ":2: checks.gpu-count.expected: invalid value: -1: want 0"},
		{"xid", "[checks.xid]\nfault_xids = [0]\n", ":2: checks.xid.fault_xids: invalid value: 0: not an XID"},
		{"throttle", "[checks.throttle]\nreasons = [\"hot\"]\n", `:2: checks.throttle.reasons: invalid value: unknown reason "hot" (known:`},
		{"npu-gemm", "[checks.npu-gemm]\nsizes = [8]\n", ":2: checks.npu-gemm.sizes: invalid value: 8: want a multiple of 16"},
		{"npu-ecc", "[checks.npu-ecc]\nmax_uncorrectable = -1\n", ":2: checks.npu-ecc.max_uncorrectable: invalid value: -1: want 0 or more"},
		{"fault mode", "[checks.fault-inject]\nmode = \"explode\"\n", `:2: checks.fault-inject.mode: invalid value: "explode": want pass, fail`},
		{"check library key", "[checks.gemm]\nsizes = [32]\ncuda_libraries = [\"/opt/libcuda.so.1\"]\n",
			":3: checks.gemm.cuda_libraries: invalid value: vendor libraries are set once per vendor: move it to [vendor.nvidia] cuda_libraries"},
		{"check library path", "[checks.npu-health]\nlibrary_paths = [\"/opt/dcmi\"]\n",
			":2: checks.npu-health.library_paths: invalid value: vendor libraries are set once per vendor: move it to [vendor.ascend] library_paths"},
		{"neutral check library path", "[checks.disk]\nlibrary_paths = []\n",
			":2: checks.disk.library_paths: invalid value: vendor libraries are set once per vendor: move it to [vendor.ascend] library_paths or [vendor.nvidia] library_paths"},
		{"vendor typo", "[vendor.nvidia]\ncuda_librarys = []\n", ":2: vendor.nvidia.cuda_librarys: unknown key (keys of [vendor.nvidia]: cuda_libraries, cublaslt_libraries,"},
		{"unknown vendor", "[vendor.amd]\nlibraries = []\n", ":2: vendor.amd.libraries: unknown key (known sections: prolog, epilog, notify, guard, repair, watch, policy, idle, vendor.NAME for the vendors nvidia, ascend,"},
		{"unknown section", "[wach]\nwindow = \"2m\"\n", ":2: wach.window: unknown key (known sections: prolog, epilog, notify, guard, repair, watch, policy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".toml")
			if err := os.WriteFile(path, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, errb bytes.Buffer
			code := run([]string{"--check-config", "--config", path}, &out, &errb)
			if code != 3 || !strings.Contains(out.String(), path+tt.want) {
				t.Fatalf("exit %d (want 3), output lacks %q:\n%s%s", code, path+tt.want, out.String(), errb.String())
			}
		})
	}
	good := filepath.Join(dir, "good.toml")
	if err := os.WriteFile(good, []byte("[watch]\nwindow = \"20m\"\naction = \"notify\"\n[policy]\nauto_watch = true\n[vendor.ascend]\nlibrary_paths = [\"/opt/cann/lib64\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"--check-config", "--config", good}, &out, &errb); code != 0 {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"[watch]\n", `window = "20m0s"`, `grace = "10m0s"`, `action = "notify"`, "[policy]\n", "auto_watch = true", `hang_actions = ["notify", "cancel", "requeue", "requeue-exclude"]`,
		"[vendor.ascend]\n", `library_paths = ["/opt/cann/lib64"]`, "[vendor.nvidia]\n", `nccl_libraries = ["libnccl.so.2", "libnccl.so"]`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("effective config lacks %q:\n%s", want, out.String())
		}
	}
}

// TestMultinodeSelftestDispatch: vigil-prolog multinode-selftest reaches its
// command: --help prints its manual, and on a machine without libcuda it
// says so at once and exits 3 (nothing could run).
func TestMultinodeSelftestDispatch(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"multinode-selftest", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String()+errb.String(), "multinode-selftest") {
		t.Fatalf("--help: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	t.Setenv("VIGIL_LIBRARY_PATH", t.TempDir())
	conf := filepath.Join(t.TempDir(), "vigil.toml")
	if err := os.WriteFile(conf, []byte("[vendor.nvidia]\ncuda_libraries = [\"libcuda-absent.so.1\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code := run([]string{"multinode-selftest", "--config", conf, "--timeout", "20s"}, &out, &errb)
	if code != 3 || !strings.Contains(out.String(), "verdict: unknown LibraryMissing") {
		t.Fatalf("without libcuda: exit %d, want 3 and an unknown verdict\n%s%s", code, out.String(), errb.String())
	}
}

// TestHelpSlurmSetupIsMakeInstalls: the slurm.conf lines of --help are
// those make install prints (PrologFlags=Alloc,Contain: the SPANK plugin's
// watch=auto, which make install turns on, needs the extern step), with
// its default PREFIX.
func TestHelpSlurmSetupIsMakeInstalls(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"--help"}, &out, io.Discard); code != 0 {
		t.Fatalf("exit %d", code)
	}
	_, setup, ok := strings.Cut(out.String(), "Slurm setup (slurm.conf)")
	setup, _, _ = strings.Cut(setup, "\n    (")
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if !ok || err != nil {
		t.Fatalf("--help has no Slurm setup, or %v", err)
	}
	var lines []string
	for _, l := range strings.Split(setup, "\n")[1:] {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	var printed []string
	for _, l := range strings.Split(string(mk), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), `@echo "    `); ok && strings.Contains(v, "=") {
			printed = append(printed, strings.ReplaceAll(strings.TrimSuffix(v, `"`), "$(BINDIR)", "/usr/local/bin"))
		}
	}
	if !slices.Equal(lines, printed) {
		t.Errorf("--help's slurm.conf lines\n  %q\nmake install prints\n  %q", lines, printed)
	}
}
