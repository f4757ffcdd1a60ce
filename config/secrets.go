package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// The admins' webhook URL is a secret: whoever holds it can post into the
// admins' channel as vigil. vigil.toml cannot hold it, since vigil-watch
// runs as the job's user and reads that file, so it must be readable by
// every user. The URL (and, where the site wants them hidden, the mail
// recipients) live in a file only root reads, [notify] secrets_file,
// which vigil-prolog and vigil-epilog (root) load and vigil-watch never
// opens:
//
//	# /etc/vigil/secrets.toml, owner root, mode 0600
//	[notify]
//	webhook_url = "https://hooks.slack.com/services/T0/B0/XXXX"
//	mail = ["hpc-admins@example.org"]
//
// Loading refuses a secrets file that is not a regular file owned by root
// (or by the user loading it), or that its group or other users may read
// or write, and a webhook_url in a config file others may read.

// DefaultSecretsFile is where the admins' [notify] secrets live unless
// [notify] secrets_file names another file.
const DefaultSecretsFile = "/etc/vigil/secrets.toml"

// ErrSecretsExposed is wrapped by errors about a secret that users other
// than root may read.
var ErrSecretsExposed = errors.New("secret readable by others")

// notifySecrets are the [notify] keys the secrets file may set.
type notifySecrets struct {
	WebhookURL string   `toml:"webhook_url"`
	Mail       []string `toml:"mail"`
}

// access is who may read the open file fh.
func access(fh *os.File) fileAccess {
	st, err := fh.Stat()
	if err != nil {
		return fileAccess{}
	}
	a := fileAccess{known: true, mode: st.Mode(), uid: -1}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		a.uid = int(sys.Uid)
	}
	return a
}

// LoadSecrets reads the [notify] section of the secrets file at path: its
// webhook_url and mail. A missing file is no secrets when explicit is
// false (the default path) and an error when the config named another.
func LoadSecrets(path string, explicit bool) (webhookURL string, mail []string, err error) {
	fh, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !explicit:
		return "", nil, nil
	case err != nil:
		return "", nil, fmt.Errorf("[notify] secrets_file: %w", err)
	}
	defer fh.Close()
	if err := checkPrivate(path, access(fh)); err != nil {
		return "", nil, err
	}
	f, err := Parse(fh, path)
	if err != nil {
		return "", nil, fmt.Errorf("[notify] secrets_file: %w", err)
	}
	var s notifySecrets
	errs := []error{f.Decode("notify", &s)}
	errs = append(errs, f.Unused()...)
	if s.WebhookURL != "" {
		if err := checkWebhook(s.WebhookURL); err != nil {
			errs = append(errs, f.Errorf("notify.webhook_url", "%v", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return "", nil, fmt.Errorf("[notify] secrets_file: %w", err)
	}
	return s.WebhookURL, s.Mail, nil
}

// checkPrivate refuses a secrets file that is not a regular file owned by
// root or by this process's user, or whose group or others have any
// access to it.
func checkPrivate(path string, a fileAccess) error {
	fix := fmt.Sprintf("chown root:root %s && chmod 600 %s", path, path)
	switch {
	case !a.known:
		return fmt.Errorf("[notify] secrets_file %s: cannot tell who may read it", path)
	case !a.mode.IsRegular():
		return fmt.Errorf("[notify] secrets_file %s: not a regular file (%v)", path, a.mode.Type())
	case a.uid != 0 && a.uid != os.Geteuid():
		return fmt.Errorf("%w: [notify] secrets_file %s is owned by uid %d, not root: %s", ErrSecretsExposed, path, a.uid, fix)
	case a.mode.Perm()&0o077 != 0:
		return fmt.Errorf("%w: [notify] secrets_file %s is mode %04o: its group or other users may read it: %s",
			ErrSecretsExposed, path, a.mode.Perm(), fix)
	}
	return nil
}
