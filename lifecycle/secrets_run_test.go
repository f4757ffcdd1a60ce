package lifecycle

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/vigil-hpc/vigil/lifecycle/decide"
	"github.com/vigil-hpc/vigil/slurm"
)

// secretsFile writes a root-only [notify] secrets file naming url as the
// admins' webhook and returns its path.
func secretsFile(t *testing.T, url string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secrets.toml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf("[notify]\nwebhook_url = %q\n", url)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFailedPostLeavesNoSecret: the admins' webhook answers 500, or
// nothing listens at its address; the report (in memory and on disk, mode
// 0644) and the log name the webhook by its host alone.
func TestFailedPostLeavesNoSecret(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	const secret, token = "T0/B0/s3cr3tPath", "k3yInQuery"
	for name, base := range map[string]string{"500": srv.URL, "refused": closed} {
		t.Run(name, func(t *testing.T) {
			url := base + "/services/" + secret + "?token=" + token
			dir, conf := setup(t, fmt.Sprintf("checks = [\"t-fail\"]\n[notify]\nsecrets_file = %q\nwebhook_attempts = 1\n", secretsFile(t, url)))
			var logs bytes.Buffer
			l := logrus.New()
			l.SetOutput(&logs)
			f := &fleetFake{fakeSlurm: fakeSlurm{node: slurm.Node{Name: "n1", State: "IDLE"}}, others: idleOthers(20)}
			o := Options{Program: "vigil-test", Mode: decide.ModeProlog, ConfigPath: conf, ConfigExplicit: true, Node: "n1",
				Lookup: env{}.lookup, Slurm: f, Log: l, Root: t.TempDir()}
			out := Run(context.Background(), o)
			r := out.Report
			if len(r.Notices) != 1 || r.Notices[0].Sent || r.Notices[0].Error == "" {
				t.Fatalf("notices %+v: want one failed webhook notice", r.Notices)
			}
			host := strings.TrimPrefix(base, "http://")
			if !strings.Contains(r.Notices[0].Error, host) {
				t.Errorf("notice error %q does not name the host %s", r.Notices[0].Error, host)
			}
			texts := map[string]string{"log": logs.String(), "notice": r.Notices[0].Error}
			files, _ := filepath.Glob(filepath.Join(dir, "reports", "*"))
			if len(files) == 0 {
				t.Fatalf("no report written in %s", filepath.Join(dir, "reports"))
			}
			for _, p := range files {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				texts[p] = string(b)
			}
			for what, text := range texts {
				if strings.Contains(text, "s3cr3tPath") || strings.Contains(text, token) {
					t.Errorf("%s holds the webhook's secret:\n%s", what, text)
				}
			}
		})
	}
}
