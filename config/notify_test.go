package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNotifyGuardDefaultsValid(t *testing.T) {
	f := Empty("vigil.toml")
	if err := DefaultNotify().Validate(f); err != nil {
		t.Errorf("default [notify]: %v", err)
	}
	if err := DefaultGuard().Validate(f); err != nil {
		t.Errorf("default [guard]: %v", err)
	}
	if DefaultNotify().Enabled() {
		t.Error("the default [notify] sends messages")
	}
}

func TestNotifyGuardErrorsNameKeyAndLine(t *testing.T) {
	doc := `[notify]
webhook_url = "ftp://hooks.example.com/x"
webhook_timeout = "10ms"
webhook_attempts = 0
mail = ["ops", "-f x"]
mail_prog = "mail"
timeout = "0s"
burst = 0
window = "30s"

[guard]
max_share = 1.5
min_nodes = -1
window = "5s"
`
	f, err := Parse(strings.NewReader(doc), "vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	n, g := DefaultNotify(), DefaultGuard()
	if err := f.Decode("notify", &n); err != nil {
		t.Fatal(err)
	}
	if err := f.Decode("guard", &g); err != nil {
		t.Fatal(err)
	}
	msg := errors.Join(n.Validate(f), g.Validate(f)).Error()
	for _, want := range []string{
		"vigil.toml:2: notify.webhook_url:",
		"vigil.toml:3: notify.webhook_timeout:",
		"vigil.toml:4: notify.webhook_attempts:",
		`vigil.toml:5: notify.mail: invalid value: "-f x"`,
		"vigil.toml:6: notify.mail_prog:",
		"vigil.toml:7: notify.timeout:",
		"vigil.toml:8: notify.burst:",
		"vigil.toml:9: notify.window:",
		"vigil.toml:12: guard.max_share:",
		"vigil.toml:13: guard.min_nodes:",
		"vigil.toml:14: guard.window:",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors lack %q:\n%s", want, msg)
		}
	}
}

func TestNotifyUnknownKey(t *testing.T) {
	f, err := Parse(strings.NewReader("[notify]\nwebhook = \"https://x\"\n"), "vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	n := DefaultNotify()
	err = f.Decode("notify", &n)
	if !errors.Is(err, ErrUnknownKey) || !strings.Contains(err.Error(), "vigil.toml:2: notify.webhook") {
		t.Errorf("unknown key: %v", err)
	}
}

func TestNotifyDecodes(t *testing.T) {
	f, err := Parse(strings.NewReader("[notify]\nwebhook_url = \"https://hooks.example.com/T0\"\nmail = [\"ops@example.com\"]\nburst = 2\nwindow = \"2h\"\n"), "vigil.toml")
	if err != nil {
		t.Fatal(err)
	}
	n := DefaultNotify()
	if err := f.Decode("notify", &n); err != nil {
		t.Fatal(err)
	}
	if err := n.Validate(f); err != nil {
		t.Fatal(err)
	}
	if !n.Enabled() || n.Burst != 2 || n.Window != 2*time.Hour || n.WebhookAttempts != 2 {
		t.Errorf("decoded %+v", n)
	}
}
