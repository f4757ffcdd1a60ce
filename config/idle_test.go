package config

import (
	"strings"
	"testing"
	"time"
)

func TestParseDays(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"7d": 7 * day, "1d12h": 36 * time.Hour, "36h": 36 * time.Hour, "90m": 90 * time.Minute, " 2d ": 2 * day,
		"0d1h": time.Hour,
	} {
		got, err := ParseDays(in)
		if err != nil || time.Duration(got) != want {
			t.Errorf("ParseDays(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "d", "7", "-1d", "1.5d", "7days", "1d-1h", "0d", "9999d"} {
		if got, err := ParseDays(bad); err == nil {
			t.Errorf("ParseDays(%q) = %v, want an error", bad, got)
		}
	}
	for d, want := range map[time.Duration]string{7 * day: "7d", 36 * time.Hour: "1d12h0m0s", 90 * time.Minute: "1h30m0s"} {
		if got := Days(d).String(); got != want {
			t.Errorf("Days(%v) = %q, want %q", d, got, want)
		}
		if back, err := ParseDays(Days(d).String()); err != nil || time.Duration(back) != d {
			t.Errorf("%q reads back as %v, %v", Days(d).String(), back, err)
		}
	}
}

func TestIdleDecodesAndValidates(t *testing.T) {
	f, err := Parse(strings.NewReader("[idle]\npartition = \"vigil,spare\"\ninterval = \"3d\"\nchecks = [\"gemm\"]\ntime_limit = \"4h\"\nbudget = \"3h\"\n"), "vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	i := DefaultIdle()
	if err := f.Decode("idle", &i); err != nil {
		t.Fatal(err)
	}
	if err := i.Validate(f); err != nil {
		t.Fatal(err)
	}
	if time.Duration(i.Interval) != 3*day || i.Partition != "vigil,spare" || !i.Configured() || i.JobName != "vigil-idle" {
		t.Fatalf("idle = %+v", i)
	}
	if DefaultIdle().Configured() || DefaultIdle().Validate(Empty("x")) != nil {
		t.Fatal("the defaults submit nothing and are valid")
	}

	bad := "[idle]\npartition = \"a b\"\nqos = \"-x\"\nreservation = \"r,s\"\naccount = \"x=y\"\njob_name = \"\"\n" +
		"interval = \"30m\"\nmax_nodes_per_run = 0\ntime_limit = \"1m\"\nbudget = \"1h\"\ncheck_timeout = \"1ms\"\n" +
		"state_dir = \"rel\"\nprogram = \"vigil-prolog\"\noutput = \"out\"\n"
	f, err = Parse(strings.NewReader(bad), "vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	i = DefaultIdle()
	if err := f.Decode("idle", &i); err != nil {
		t.Fatal(err)
	}
	msg := i.Validate(f).Error()
	for _, key := range []string{"partition", "qos", "reservation", "account", "job_name", "interval", "max_nodes_per_run",
		"time_limit", "budget", "check_timeout", "state_dir", "program", "output"} {
		if !strings.Contains(msg, "idle."+key+":") {
			t.Errorf("no error for idle.%s in:\n%s", key, msg)
		}
	}
	if !strings.Contains(msg, "vigil.toml:7: idle.interval") {
		t.Errorf("errors do not name the line:\n%s", msg)
	}

	f, _ = Parse(strings.NewReader("[idle]\ninterval = 7\n"), "vigil.toml")
	i = DefaultIdle()
	if err := f.Decode("idle", &i); err == nil || !strings.Contains(err.Error(), "idle.interval") {
		t.Errorf("an integer interval: %v", err)
	}
}
