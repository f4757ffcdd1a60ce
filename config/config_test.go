package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type gemm struct {
	MinTFLOPS float64            `toml:"min_tflops"`
	Timeout   time.Duration      `toml:"timeout"`
	Models    map[string]float64 `toml:"models"`
}

const sample = `# vigil
[prolog]
budget = "10m"
retries = 1

[checks.gemm]
min_tflops = 600.5
timeout = "90s"
  [checks.gemm.models]
  "H100 80GB HBM3" = 700.0

[checks.typo]
x = 1

[prolgo]
budget = "1m"
`

func TestDecodeKeepsDefaultsAndReadsValues(t *testing.T) {
	f, err := Parse(strings.NewReader(sample), "vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultProlog()
	if err := f.Decode("prolog", &p); err != nil {
		t.Fatal(err)
	}
	if p.Budget != 10*time.Minute || p.Retries != 1 || p.CheckTimeout != 6*time.Minute || p.Suite != SuiteFull {
		t.Fatalf("prolog = %+v", p)
	}
	g := gemm{MinTFLOPS: 1}
	if err := f.Decode("checks.gemm", &g); err != nil {
		t.Fatal(err)
	}
	if g.MinTFLOPS != 600.5 || g.Timeout != 90*time.Second || g.Models["H100 80GB HBM3"] != 700 {
		t.Fatalf("gemm = %+v", g)
	}
	var none gemm
	if err := f.Decode("checks.absent", &none); err != nil || none.MinTFLOPS != 0 {
		t.Fatalf("absent section: %+v, %v", none, err)
	}
	unused := f.Unused()
	var got []string
	for _, e := range unused {
		if !errors.Is(e, ErrUnknownKey) {
			t.Errorf("%v does not wrap ErrUnknownKey", e)
		}
		got = append(got, e.Error())
	}
	want := []string{
		"vigil.toml:13: checks.typo.x: unknown key",
		"vigil.toml:16: prolgo.budget: unknown key",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Unused =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	f.Claim("prolgo")
	if n := len(f.Unused()); n != 1 {
		t.Fatalf("after Claim: %d unused", n)
	}
}

func TestDecodeErrorsNameKeyAndLine(t *testing.T) {
	tests := []struct {
		name, doc, section, want string
	}{
		{"unknown key", "[prolog]\nbudget = \"1m\"\nbugdet = \"2m\"\n", "prolog", "x.toml:3: prolog.bugdet: unknown key"},
		{"wrong type", "[prolog]\n\nretries = \"two\"\n", "prolog", "x.toml:3: prolog.retries: invalid value"},
		{"bad duration", "[prolog]\nbudget = \"ten minutes\"\n", "prolog", "x.toml:2: prolog.budget: invalid value"},
		{"nested unknown", "[checks.gemm]\nmin_tflops = 1.0\nmax = 2\n", "checks.gemm", "x.toml:3: checks.gemm.max: unknown key"},
		{"dotted key", "checks.gemm.min_tflops = \"x\"\n", "checks.gemm", "x.toml:1: checks.gemm.min_tflops: invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse(strings.NewReader(tt.doc), "x.toml")
			if err != nil {
				t.Fatal(err)
			}
			var v any = &gemm{}
			if tt.section == "prolog" {
				p := DefaultProlog()
				v = &p
			}
			err = f.Decode(tt.section, v)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestSyntaxErrorNamesLine(t *testing.T) {
	_, err := Parse(strings.NewReader("[prolog]\nbudget = \"1m\"\nretries = = 2\n"), "bad.toml")
	if err == nil || !strings.HasPrefix(err.Error(), "bad.toml:3:") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadMissing(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "none.toml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
	p := filepath.Join(t.TempDir(), "v.toml")
	if err := os.WriteFile(p, []byte("[epilog]\nkill_grace = \"1s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	e := DefaultEpilog()
	if err := f.Decode("epilog", &e); err != nil || e.KillGrace != time.Second || !e.KillProcesses {
		t.Fatalf("%+v %v", e, err)
	}
}

func TestValidate(t *testing.T) {
	doc := "[prolog]\nsuite = \"fast\"\nbudget = \"-1s\"\nretries = 11\ntiming = \"sometimes\"\n"
	f, err := Parse(strings.NewReader(doc), "v.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultProlog()
	if err := f.Decode("prolog", &p); err != nil {
		t.Fatal(err)
	}
	err = p.Validate(f)
	for _, want := range []string{"v.toml:2: prolog.suite", "v.toml:3: prolog.budget", "v.toml:4: prolog.retries", "v.toml:5: prolog.timing"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in %v", want, err)
		}
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("%v does not wrap ErrInvalid", err)
	}
	if err := DefaultProlog().Validate(Empty("x")); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
	if err := DefaultEpilog().Validate(Empty("x")); err != nil {
		t.Errorf("defaults invalid: %v", err)
	}
}

func TestKeyLinesSkipsMultiline(t *testing.T) {
	doc := "a = \"\"\"\nb = 1\n\"\"\"\nc = [\n  1,\n]\n[t]\nd = 2\n"
	l := keyLines([]byte(doc))
	if l["a"] != 1 || l["c"] != 4 || l["t.d"] != 8 || l["b"] != 0 {
		t.Fatalf("lines = %v", l)
	}
}

func TestValidateSlurmConf(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		ok          bool
	}{
		{"absolute", "/etc/slurm-site/slurm.conf", true},
		{"absent file is fine here", "/nonexistent/slurm.conf", true},
		{"relative", "slurm.conf", false},
		{"dot relative", "./etc/slurm.conf", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "[prolog]\n\nslurm_conf = \"" + tc.value + "\"\n"
			f, err := Parse(strings.NewReader(doc), "v.toml")
			if err != nil {
				t.Fatal(err)
			}
			p := DefaultProlog()
			if err := f.Decode("prolog", &p); err != nil {
				t.Fatal(err)
			}
			if p.SlurmConf != tc.value {
				t.Fatalf("SlurmConf = %q", p.SlurmConf)
			}
			err = p.Validate(f)
			if tc.ok && err != nil {
				t.Errorf("want valid, got %v", err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "v.toml:3: prolog.slurm_conf") || !strings.Contains(err.Error(), "absolute path")) {
				t.Errorf("want an error naming v.toml:3: prolog.slurm_conf and what to write, got %v", err)
			}
		})
	}
}
