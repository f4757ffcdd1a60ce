package loop

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-hpc/vigil/slurm"
)

func TestClaimOneWatcherPerJobAndNode(t *testing.T) {
	job := "claim" + strconv.Itoa(os.Getpid())
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	release, err := Claim(job, "n1", "extern", os.Getuid(), now)
	if err != nil {
		t.Fatalf("first claim: %v", err)
	}
	_, err = Claim(job, "n1", "0", os.Getuid(), now.Add(time.Minute))
	var claimed *ClaimedError
	if !errors.As(err, &claimed) || !errors.Is(err, ErrClaimed) {
		t.Fatalf("second claim of the same job and node: %v, want a *ClaimedError", err)
	}
	if want := (Holder{PID: os.Getpid(), Step: "extern", Started: now}); claimed.Holder != want {
		t.Errorf("holder = %+v, want %+v", claimed.Holder, want)
	}
	// Another node of the same host (a test cluster) or another job: free.
	other, err := Claim(job, "n2", "0", os.Getuid(), now)
	if err != nil {
		t.Errorf("claim on another node: %v", err)
	}
	other()
	// A claim held by another uid is not the job's watcher: not ErrClaimed.
	if _, err := Claim(job, "n1", "0", os.Getuid()+1, now); err == nil || errors.Is(err, ErrClaimed) {
		t.Errorf("claim held by another uid: %v, want an error that is not ErrClaimed", err)
	}
	release()
	again, err := Claim(job, "n1", "0", os.Getuid(), now)
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	again()
}

func TestAlreadyWatched(t *testing.T) {
	job := &slurm.Job{ID: "42", NodeName: "gpu07"}
	h := Holder{PID: 99, Step: "extern", Started: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	got := AlreadyWatched(job, h)
	for _, want := range []string{"already watches job 42 on gpu07", "pid 99, step extern (started by vigil's SPANK plugin)", "--vigil-hang-time"} {
		if !strings.Contains(got, want) {
			t.Errorf("AlreadyWatched = %q, want it to say %q", got, want)
		}
	}
	if got := AlreadyWatched(job, Holder{PID: 5, Step: "0"}); strings.Contains(got, "SPANK") {
		t.Errorf("AlreadyWatched of a step's watcher = %q", got)
	}
}
