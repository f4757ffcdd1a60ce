package loop

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/vigil-hpc/vigil/slurm"
)

// TestJobViewSaysWhyItActsAlone: a watcher that acts for its node alone
// says why in its log: at info level where that was chosen (a one-node
// job, port 0), as a warning naming the reason and the error where the
// job's watchers should have met (scontrol could not give the nodes'
// addresses, munged does not answer at the socket named).
func TestJobViewSaysWhyItActsAlone(t *testing.T) {
	bin := t.TempDir()
	down := "#!/bin/sh\necho 'slurm_load_node error: Unable to contact slurm controller (connect failure)' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte(down), 0o755); err != nil {
		t.Fatal(err)
	}
	two := func() *slurm.Job { return &slurm.Job{ID: "7", NodeName: "n1", Nodes: []string{"n1", "n2"}, UID: 1000} }
	addrs := map[string]string{"n1": "127.0.0.1", "n2": "127.0.0.2"}
	for _, tc := range []struct {
		name  string
		job   *slurm.Job
		o     Options
		set   func(*Settings)
		level logrus.Level
		why   string
		err   string // in the log line's error ("" for none)
	}{
		{"one node", &slurm.Job{ID: "7", NodeName: "n1", Nodes: []string{"n1"}, UID: 1000}, Options{}, nil,
			logrus.InfoLevel, "a one-node job", ""},
		{"port 0", two(), Options{}, func(s *Settings) { s.Port = 0 }, logrus.InfoLevel, "[watch] port = 0", ""},
		{"no addresses", two(), Options{}, func(s *Settings) { s.SlurmBinDir = bin }, logrus.WarnLevel,
			"the job's node addresses are unknown", "Unable to contact slurm controller"},
		{"no munged", two(), Options{NodeAddrs: addrs}, func(s *Settings) { s.MungeSocket = filepath.Join(bin, "no-munged") },
			logrus.WarnLevel, "MUNGE is not available to seal the watchers' messages", filepath.Join(bin, "no-munged")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := DefaultSettings()
			if tc.set != nil {
				tc.set(&s)
			}
			log, hook := test.NewNullLogger()
			view, done := jobView(context.Background(), tc.o, s, tc.job, nil, nil, log)
			defer done()
			if view == nil {
				t.Fatal("no view")
			}
			var lines []string
			for _, e := range hook.AllEntries() {
				if e.Data["why"] != tc.why {
					lines = append(lines, e.Level.String()+": "+e.Message)
					continue
				}
				errText := ""
				if err, ok := e.Data[logrus.ErrorKey].(error); ok {
					errText = err.Error()
				}
				if e.Level != tc.level || (tc.err == "") != (errText == "") || !strings.Contains(errText, tc.err) {
					t.Errorf("%s: %q (error %q); want level %s, error with %q", e.Level, e.Message, errText, tc.level, tc.err)
				}
				return
			}
			t.Errorf("no log line says why=%q; got %q", tc.why, lines)
		})
	}
}
