package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRulesListShowsOrigins: `vigil-watch rules list` shows, under each
// shipped rule with one, where its wording comes from (the emitter's
// source) and the public report its example is from.
func TestRulesListShowsOrigins(t *testing.T) {
	var out, errb bytes.Buffer
	if code := realMain(context.Background(), []string{"rules", "list"}, env(), &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	got := out.String()
	for _, want := range []string{
		"srun-task-oom",
		"origin: SchedMD/slurm src/srun/launch.c:377",
		"source: https://github.com/jdh4/out_of_memory",
		"origin: openpmix/prrte src/mca/schizo/prte/help-prun.txt:677,682",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rules list lacks %q:\n%s", want, got)
		}
	}
}
