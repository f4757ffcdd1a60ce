package config

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const secretURL = "https://hooks.example.com/services/T0/B0/s3cr3t"

// writeMode writes doc to dir/name with mode (chmod after the write, so
// the umask does not narrow it).
func writeMode(t *testing.T, dir, name, doc string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(doc), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// nobody is the uid and gid of the user "nobody".
func nobody(t *testing.T) (int, int) {
	t.Helper()
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return uid, gid
}

// TestSecretsFile: the admins' webhook URL and mail come from a root-only
// secrets file; one that others may read, or that another user owns, is
// refused, and so is a webhook_url in a config file every user may read.
func TestSecretsFile(t *testing.T) {
	// A directory every user may enter (t.TempDir's parent is 0700), so
	// that only the files' own modes keep the user nobody out.
	dir, err := os.MkdirTemp("", "vigil-secrets-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	secrets := fmt.Sprintf("[notify]\nwebhook_url = %q\nmail = [\"hpc-admins\"]\n", secretURL)
	private := writeMode(t, dir, "private.toml", secrets, 0o600)
	load := func(t *testing.T, doc string, mode os.FileMode) (Notify, error) {
		t.Helper()
		f, err := Load(writeMode(t, t.TempDir(), "vigil.toml", doc, mode))
		if err != nil {
			t.Fatal(err)
		}
		return LoadNotify(f)
	}
	t.Run("root-only file", func(t *testing.T) {
		n, err := load(t, fmt.Sprintf("[notify]\nsecrets_file = %q\nmail = [\"ops\"]\n", private), 0o644)
		if err != nil || n.WebhookURL != secretURL || strings.Join(n.Mail, ",") != "ops,hpc-admins" {
			t.Fatalf("LoadNotify = %+v, %v", n, err)
		}
		if r := n.Redacted(); strings.Contains(fmt.Sprint(r), "s3cr3t") || r.WebhookURL != "https://hooks.example.com/…" {
			t.Errorf("Redacted = %+v", r)
		}
	})
	for _, mode := range []os.FileMode{0o640, 0o644, 0o604, 0o660} {
		t.Run(fmt.Sprintf("mode %04o refused", mode), func(t *testing.T) {
			p := writeMode(t, dir, fmt.Sprintf("open-%o.toml", mode), secrets, mode)
			n, err := load(t, fmt.Sprintf("[notify]\nsecrets_file = %q\n", p), 0o644)
			if !errors.Is(err, ErrSecretsExposed) || !strings.Contains(err.Error(), "chmod 600 "+p) || n.WebhookURL != "" {
				t.Fatalf("LoadNotify = %+v, %v; want ErrSecretsExposed naming the fix", n, err)
			}
		})
	}
	t.Run("owned by another user", func(t *testing.T) {
		uid, gid := nobody(t)
		p := writeMode(t, dir, "theirs.toml", secrets, 0o600)
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
		if _, err := load(t, fmt.Sprintf("[notify]\nsecrets_file = %q\n", p), 0o644); !errors.Is(err, ErrSecretsExposed) {
			t.Fatalf("LoadNotify = %v; want ErrSecretsExposed (owned by uid %d)", err, uid)
		}
	})
	t.Run("inline webhook in a file every user reads", func(t *testing.T) {
		_, err := load(t, fmt.Sprintf("[notify]\nburst = 2\nwebhook_url = %q\n", secretURL), 0o644)
		if !errors.Is(err, ErrSecretsExposed) || !strings.Contains(err.Error(), "vigil.toml:3: notify.webhook_url") ||
			!strings.Contains(err.Error(), "secrets_file") || strings.Contains(err.Error(), "s3cr3t") {
			t.Fatalf("LoadNotify = %v; want the key and line, the fix, and no URL", err)
		}
	})
	t.Run("inline webhook in a root-only file", func(t *testing.T) {
		n, err := load(t, fmt.Sprintf("[notify]\nwebhook_url = %q\n", secretURL), 0o600)
		if err != nil || n.WebhookURL != secretURL {
			t.Fatalf("LoadNotify = %+v, %v", n, err)
		}
	})
	t.Run("missing default file: no secrets", func(t *testing.T) {
		if err := LoadSecretsMissing(t); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("missing named file", func(t *testing.T) {
		if _, err := load(t, fmt.Sprintf("[notify]\nsecrets_file = %q\n", filepath.Join(dir, "none.toml")), 0o644); err == nil {
			t.Fatal("a secrets_file that does not exist was accepted")
		}
	})
	t.Run("unknown key", func(t *testing.T) {
		p := writeMode(t, dir, "typo.toml", "[notify]\nwebhook = \"https://x/y\"\n", 0o600)
		if _, err := load(t, fmt.Sprintf("[notify]\nsecrets_file = %q\n", p), 0o644); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("LoadNotify = %v; want an unknown key", err)
		}
	})
	t.Run("a non-root user cannot read what loading accepts", func(t *testing.T) {
		uid, gid := nobody(t)
		cmd := exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(gid), "--clear-groups", "cat", private)
		out, err := cmd.CombinedOutput()
		if err == nil || strings.Contains(string(out), "s3cr3t") || !strings.Contains(string(out), "Permission denied") {
			t.Fatalf("nobody read the secrets file: err %v, output %q", err, out)
		}
		conf := writeMode(t, dir, "vigil.toml", fmt.Sprintf("[notify]\nsecrets_file = %q\n", private), 0o644)
		out, err = exec.Command("setpriv", "--reuid="+strconv.Itoa(uid), "--regid="+strconv.Itoa(gid), "--clear-groups", "cat", conf).CombinedOutput()
		if err != nil || strings.Contains(string(out), "s3cr3t") {
			t.Fatalf("nobody reading vigil.toml: err %v, output %q: want it readable and without the URL", err, out)
		}
	})
}

// LoadSecretsMissing loads the default secrets path when it does not exist
// on this machine: no secrets and no error.
func LoadSecretsMissing(t *testing.T) error {
	t.Helper()
	if _, err := os.Stat(DefaultSecretsFile); err == nil {
		t.Skipf("%s exists on this machine", DefaultSecretsFile)
	}
	url, mail, err := LoadSecrets(DefaultSecretsFile, false)
	if url != "" || mail != nil {
		return fmt.Errorf("LoadSecrets of a missing default = %q, %v", url, mail)
	}
	return err
}
