package watchcfg

import (
	"errors"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/config"
)

// TestValidateNamesFileLineKey: every bad [watch] value is an error that
// names the file, the line, the key and what is allowed.
func TestValidateNamesFileLineKey(t *testing.T) {
	for _, tt := range []struct {
		name, body, want string
	}{
		{"typo", "[watch]\nwindwo = \"2m\"\n", "w.toml:2: watch.windwo: unknown key (keys of [watch]: action,"},
		{"wrong type", "[watch]\n\nio_bytes = \"lots\"\n", "w.toml:3: watch.io_bytes: invalid value"},
		{"window", "[watch]\nwindow = \"-1m\"\n", "w.toml:2: watch.window: invalid value: -1m0s: must be positive"},
		{"period", "[watch]\nwindow = \"2m\"\nperiod = \"2m\"\n", "w.toml:3: watch.period: invalid value: 2m0s: must be at most half the window"},
		{"grace", "[watch]\ngrace = \"-1s\"\n", "w.toml:2: watch.grace: invalid value: -1s: must be 0 or more"},
		{"action", "[watch]\naction = \"drain\"\n", `w.toml:2: watch.action: invalid value: "drain": want "notify" (or "none"), "cancel", "requeue" or "requeue-exclude"`},
		{"max_requeues", "[watch]\nmax_requeues = -1\n", "w.toml:2: watch.max_requeues: invalid value: -1: must be 0 or more"},
		{"webhook_url", "[watch]\naction = \"notify\"\nwebhook_url = \"https://hooks.example.org/services/T0/s3cr3t\"\n",
			"w.toml:3: watch.webhook_url: invalid value: a site-wide webhook in [watch] is no longer read: vigil-watch runs as the job's user"},
		{"webhook_attempts", "[watch]\nwebhook_attempts = 0\n", "w.toml:2: watch.webhook_attempts: invalid value: 0: want 1 to 10"},
		{"min_coverage", "[watch]\nmin_coverage = 0.0\n", "w.toml:2: watch.min_coverage: invalid value: 0, want in (0, 1]"},
		{"high_util", "[watch]\n\n\nhigh_util = 5.0\n", "w.toml:4: watch.high_util: invalid value: 5, want in [idle_util, 100]"},
		{"idle_util", "[watch]\nidle_util = 101.0\n", "w.toml:2: watch.idle_util: invalid value: 101, want in [0, 100]"},
		{"cpu_idle_cores", "[watch]\ncpu_idle_cores = -1.0\n", "w.toml:2: watch.cpu_idle_cores: invalid value: -1, want >= 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := config.Parse(strings.NewReader(tt.body), "w.toml")
			if err != nil {
				t.Fatal(err)
			}
			s := Default()
			err = s.Load(f)
			if err == nil {
				err = s.Final().Validate(f)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
	f, _ := config.Parse(strings.NewReader("[watch]\nwindow = \"20m\"\naction = \"notify\"\n"), "w.toml")
	s := Default()
	if err := s.Load(f); err != nil {
		t.Fatal(err)
	}
	if err := s.Final().Validate(f); err != nil {
		t.Fatalf("a valid section: %v", err)
	}
	if got := s.Final(); got.Grace != DefaultHang().Grace || got.Period > got.Window/6 {
		t.Fatalf("derived values: %+v", got)
	}
}

// TestSiteWebhookRefused: a [watch] webhook_url in vigil.toml (which every
// user may read) is an error naming the file, line and key, saying where
// the admins' webhook goes instead; it is not a key of [watch], and the
// flag still sets the job's own webhook.
func TestSiteWebhookRefused(t *testing.T) {
	f, err := config.Parse(strings.NewReader("[watch]\n\nwebhook_url = \"https://hooks.example.org/services/T0/s3cr3t\"\n"), "/etc/vigil/vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	s := Default()
	err = s.Load(f)
	var ke *config.KeyError
	if !errors.As(err, &ke) || ke.File != "/etc/vigil/vigil.toml" || ke.Line != 3 || ke.Key != "watch.webhook_url" ||
		!errors.Is(err, ErrSiteWebhook) || !errors.Is(err, config.ErrInvalid) {
		t.Fatalf("got %#v (%v): want a KeyError at /etc/vigil/vigil.toml:3 watch.webhook_url wrapping ErrSiteWebhook", err, err)
	}
	for _, want := range []string{"[notify] webhook_url", "secrets file", "vigil-epilog forwards each job's hang digest", "--webhook-url", "remove webhook_url from [watch]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: lacks %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "s3cr3t") || s.WebhookURL != "" {
		t.Errorf("the refused URL leaks: error %v, settings %q", err, s.WebhookURL)
	}
	if strings.Contains(" "+strings.Join(Keys(), " ")+" ", " webhook_url ") {
		t.Errorf("Keys() lists webhook_url: %v", Keys())
	}
	if k, ok := Overrides().Lookup("webhook_url"); !ok || k.Flag != "webhook-url" || k.Env != "" {
		t.Errorf("the job's webhook flag: %+v, %v: want --webhook-url, no variable", k, ok)
	}
}

func TestParseAction(t *testing.T) {
	for in, want := range map[string]string{"": ActionNone, "none": ActionNone, "notify": ActionNone, "cancel": ActionCancel, "requeue": ActionRequeue} {
		if got, err := ParseAction(in); err != nil || got != want {
			t.Errorf("ParseAction(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"drain", "Cancel", "notify "} {
		if _, err := ParseAction(in); !errors.Is(err, ErrBadAction) {
			t.Errorf("ParseAction(%q) = %v, want ErrBadAction", in, err)
		}
	}
}

func TestKeysCoverTheSection(t *testing.T) {
	keys := strings.Join(Keys(), " ")
	for _, k := range []string{"window", "period", "grace", "io_bytes", "cpu_spin_is_hang", "action", "report_dir", "slurm_bin_dir"} {
		if !strings.Contains(" "+keys+" ", " "+k+" ") {
			t.Errorf("Keys() lacks %q: %s", k, keys)
		}
	}
	if strings.Contains(keys, "-") {
		t.Errorf("Keys() lists a field that is not a key: %s", keys)
	}
}
