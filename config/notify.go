package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-hpc/vigil/notify"
)

// Notify is the [notify] section: whom vigil-prolog, vigil-epilog and
// health runs tell when they drain a node or the guard stops draining for a
// check, and how often. See docs/notify.md.
type Notify struct {
	// WebhookURL receives one JSON POST per message (Slack-compatible
	// "text" plus structured fields); "" sends none. It is a secret: set
	// it in SecretsFile. Here it is refused unless only the config file's
	// owner may read the file (vigil-watch, which runs as the job's user,
	// reads vigil.toml: it is usually readable by every user).
	WebhookURL string `toml:"webhook_url,omitempty"`
	// SecretsFile is a TOML file only root may read (mode 0600, owner
	// root) whose [notify] section holds webhook_url and mail; a missing
	// file at the default path holds nothing, "" reads none (secrets.go).
	SecretsFile string `toml:"secrets_file"`
	// WebhookTimeout bounds each POST ("5s").
	WebhookTimeout time.Duration `toml:"webhook_timeout"`
	// WebhookAttempts is how many times a failed POST is tried in all.
	WebhookAttempts int `toml:"webhook_attempts"`
	// Mail lists the recipients (user names or addresses) mailed through
	// MailProg; empty mails nobody.
	Mail []string `toml:"mail"`
	// MailProg is the mail program, called as MailProg -s SUBJECT RECIPIENT;
	// "" means Slurm's MailProg (scontrol show config).
	MailProg string `toml:"mail_prog"`
	// Timeout bounds all of one run's notifications together ("20s"),
	// within the run's budget.
	Timeout time.Duration `toml:"timeout"`
	// Burst is how many nodes drained by vigil for one check within Window
	// get a message each; the next one sends one summary, and further
	// drains for that check send nothing until Window has passed.
	Burst int `toml:"burst"`
	// Window is the period over which drains are counted ("1h").
	Window time.Duration `toml:"window"`
}

// Enabled reports whether n sends anything at all.
func (n Notify) Enabled() bool { return n.WebhookURL != "" || len(n.Mail) > 0 }

// DefaultNotify returns the shipped [notify] settings: nobody is told
// until webhook_url or mail is set.
func DefaultNotify() Notify {
	return Notify{SecretsFile: DefaultSecretsFile, WebhookTimeout: 5 * time.Second, WebhookAttempts: 2,
		Timeout: 20 * time.Second, Burst: 5, Window: time.Hour}
}

// LoadNotify decodes [notify] of f over the defaults, adds the webhook URL
// and mail recipients of its secrets file, and validates the result. A
// webhook_url in f itself is refused when users other than the file's
// owner may read f. Errors name the key and line.
func LoadNotify(f *File) (Notify, error) {
	n := DefaultNotify()
	if err := f.Decode("notify", &n); err != nil {
		return n, err
	}
	var errs []error
	if others, mode := f.OthersMayRead(); others && n.WebhookURL != "" {
		// One error naming the file, line and key (a joined error would be
		// printed as two, the first without them).
		errs = append(errs, &KeyError{File: f.Name, Line: f.Line("notify.webhook_url"), Key: "notify.webhook_url",
			Err: fmt.Errorf("%w: %w: %s is mode %04o, readable by every user (vigil-watch reads it as the job's user): move webhook_url to [notify] secrets_file (%s, owner root, mode 0600)",
				ErrInvalid, ErrSecretsExposed, f.Name, mode, n.SecretsFile)})
		n.WebhookURL = ""
	}
	if n.SecretsFile != "" {
		url, mail, err := LoadSecrets(n.SecretsFile, n.SecretsFile != DefaultSecretsFile)
		switch {
		case err != nil:
			errs = append(errs, err)
		case url != "" && n.WebhookURL != "":
			errs = append(errs, f.Errorf("notify.webhook_url", "set here and in %s: keep it in the secrets file only", n.SecretsFile))
		case url != "":
			n.WebhookURL = url
		}
		n.Mail = append(n.Mail, mail...)
	}
	errs = append(errs, n.Validate(f))
	return n, errors.Join(errs...)
}

// Redacted is n as --check-config prints it: the webhook URL cut to its
// scheme and host.
func (n Notify) Redacted() Notify {
	if n.WebhookURL != "" {
		n.WebhookURL = notify.RedactURL(n.WebhookURL)
	}
	return n
}

// Validate checks n's values, naming the key and line of each bad one in f.
func (n Notify) Validate(f *File) error {
	var errs []error
	if n.WebhookURL != "" {
		if err := checkWebhook(n.WebhookURL); err != nil {
			errs = append(errs, f.Errorf("notify.webhook_url", "%v", err))
		}
	}
	if n.SecretsFile != "" && !strings.HasPrefix(n.SecretsFile, "/") {
		errs = append(errs, f.Errorf("notify.secrets_file", "%q: want an absolute path, or \"\" for none", n.SecretsFile))
	}
	if n.WebhookTimeout < 100*time.Millisecond {
		errs = append(errs, f.Errorf("notify.webhook_timeout", "%v: want at least 100ms (write durations as strings: \"5s\")", n.WebhookTimeout))
	}
	if n.WebhookAttempts < 1 || n.WebhookAttempts > 10 {
		errs = append(errs, f.Errorf("notify.webhook_attempts", "%d: want 1 to 10", n.WebhookAttempts))
	}
	for _, to := range n.Mail {
		if to == "" || strings.ContainsAny(to, " \t\n") || strings.HasPrefix(to, "-") {
			errs = append(errs, f.Errorf("notify.mail", "%q: want a user name or an address, without spaces or a leading '-'", to))
		}
	}
	if n.MailProg != "" && !strings.HasPrefix(n.MailProg, "/") {
		errs = append(errs, f.Errorf("notify.mail_prog", "%q: want an absolute path, or \"\" for Slurm's MailProg", n.MailProg))
	}
	if n.Timeout < time.Second {
		errs = append(errs, f.Errorf("notify.timeout", "%v: want at least 1s", n.Timeout))
	}
	if n.Burst < 1 {
		errs = append(errs, f.Errorf("notify.burst", "%d: want 1 or more", n.Burst))
	}
	if n.Window < time.Minute {
		errs = append(errs, f.Errorf("notify.window", "%v: want at least 1m (write durations as strings: \"1h\")", n.Window))
	}
	return errors.Join(errs...)
}

// checkWebhook says what is wrong with a webhook URL, naming it only by
// its scheme and host: the rest is the secret.
func checkWebhook(u string) error {
	if notify.CheckURL(u) != nil {
		return fmt.Errorf("%s: want an http:// or https:// URL", notify.RedactURL(u))
	}
	return nil
}

// Guard is the [guard] section: vigil stops draining for a check when too
// many nodes were drained for it within Window, since a fleet-wide failure
// of one check is more likely a wrong threshold than broken hardware.
type Guard struct {
	// MaxShare is the share of the cluster's nodes (0 to 1) that may be
	// drained by vigil for one check within Window; a drain that would go
	// above it is not made. 0 turns the guard off.
	MaxShare float64 `toml:"max_share"`
	// MinNodes is how many nodes may always be drained for one check within
	// Window, whatever the share, so that a small cluster does not trip on
	// one node.
	MinNodes int `toml:"min_nodes"`
	// Window is the period over which drains are counted ("1h").
	Window time.Duration `toml:"window"`
}

// DefaultGuard returns the shipped [guard] settings.
func DefaultGuard() Guard {
	return Guard{MaxShare: 0.1, MinNodes: 3, Window: time.Hour}
}

// Validate checks g's values, naming the key and line of each bad one in f.
func (g Guard) Validate(f *File) error {
	var errs []error
	if g.MaxShare < 0 || g.MaxShare > 1 {
		errs = append(errs, f.Errorf("guard.max_share", "%v: want 0 (off) to 1 (a share of the nodes: 0.1 is 10%%)", g.MaxShare))
	}
	if g.MinNodes < 0 {
		errs = append(errs, f.Errorf("guard.min_nodes", "%d: must be 0 or more", g.MinNodes))
	}
	if g.Window < time.Minute {
		errs = append(errs, f.Errorf("guard.window", "%v: want at least 1m (write durations as strings: \"1h\")", g.Window))
	}
	return errors.Join(errs...)
}
