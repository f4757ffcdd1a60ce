package slurm

import (
	"context"
	"errors"
	"github.com/vigil-hpc/vigil/slurm/hostlist"
	"reflect"
	"strings"
	"testing"
)

func TestExcludeCommands(t *testing.T) {
	sc := bin + "/scontrol"
	ctx := context.Background()
	c, f := newClient(reply{}, reply{})
	if err := c.SetJobExcludedNodes(ctx, "12", []string{"n5", "n1", "n3", "gpu07"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(ctx, "12"); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{sc, "update", "JobId=12", "ExcNodeList=gpu07,n[1,3,5]"}, {sc, "release", "12"}}
	if !reflect.DeepEqual(f.calls, want) {
		t.Errorf("argv %q, want %q", f.calls, want)
	}
	for _, bad := range [][]string{nil, {"n[1-3]"}, {"n1,n2"}, {"-h"}, {"a b"}} {
		c, f := newClient()
		if err := c.SetJobExcludedNodes(ctx, "12", bad); !errors.Is(err, ErrBadName) || len(f.calls) != 0 {
			t.Errorf("SetJobExcludedNodes(%q) = %v after %q, want ErrBadName and no command", bad, err, f.calls)
		}
	}
	c, f = newClient()
	if err := c.Release(ctx, "12 13"); !errors.Is(err, ErrBadName) || len(f.calls) != 0 {
		t.Errorf("Release(12 13) = %v", err)
	}
}

// A running job's exclusions cannot change: Slurm's own refusal, as 22.05
// and 24.11 print it, is ErrJobNotPending; an unknown job ErrNoSuchJob.
func TestExcludeRefused(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		msg  []byte
		want error
	}{
		{"22.05 running", readTestdata(t, "job-exclude-running.stderr"), ErrJobNotPending},
		{"24.11 running", read2411(t, "job-exclude-running.stderr"), ErrJobNotPending},
		{"no such job", readTestdata(t, "job-nosuch.stderr"), ErrNoSuchJob},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newClient(reply{err: &CommandError{ExitCode: 1, Stderr: strings.TrimSpace(string(tc.msg)), Err: errors.New("exit status 1")}})
			if err := c.SetJobExcludedNodes(ctx, "1", []string{"n1"}); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	c, _ := newClient(reply{err: &CommandError{ExitCode: 1, Stderr: "slurm_update error: Access/permission denied", Err: errors.New("exit status 1")}})
	if err := c.Release(ctx, "1"); err == nil || errors.Is(err, ErrNoSuchJob) {
		t.Errorf("release refused: %v", err)
	}
}

// The job as Slurm shows it before, during and after a requeue without a
// node: running with the submitter's exclusion, requeued held (COMPLETING,
// Restarts already 1) with the new list, and running again elsewhere.
func TestExcludedJobFixtures(t *testing.T) {
	for _, tc := range []struct {
		version, file string
		read          func(testing.TB, string) []byte
		state         string
		exc           string
		restarts      int
		nodes         int // a completing job counts the nodes still completing
	}{
		{"22.05", "job-exclude-before.txt", readTestdata, "RUNNING", "aywi5", 0, 3},
		{"22.05", "job-requeueheld-excluded.txt", readTestdata, "COMPLETING", "aywi1,aywi5", 1, 1},
		{"22.05", "job-released-excluded.txt", readTestdata, "RUNNING", "aywi1,aywi5", 1, 3},
		{"24.11", "job-exclude-before.txt", read2411, "RUNNING", "pirp5", 0, 3},
		{"24.11", "job-requeueheld-excluded.txt", read2411, "COMPLETING", "pirp1,pirp5", 1, 1},
		{"24.11", "job-released-excluded.txt", read2411, "RUNNING", "pirp1,pirp5", 1, 3},
	} {
		t.Run(tc.version+"/"+tc.file, func(t *testing.T) {
			j, err := ParseJob(tc.read(t, tc.file), "1")
			if err != nil {
				t.Fatal(err)
			}
			exc, err := j.ExcludedNodes()
			if err != nil || strings.Join(exc, ",") != tc.exc {
				t.Errorf("ExcludedNodes = %v, %v; want %s", exc, err, tc.exc)
			}
			if req, err := j.RequestedNodes(); err != nil || req != nil {
				t.Errorf("RequestedNodes = %v, %v; want none", req, err)
			}
			if j.State != tc.state || j.Restarts != tc.restarts || j.NumNodes() != tc.nodes || j.Partition != "debug" {
				t.Errorf("state %s restarts %d nodes %d partition %s; want %s %d %d debug", j.State, j.Restarts, j.NumNodes(), j.Partition, tc.state, tc.restarts, tc.nodes)
			}
			if tc.state == "COMPLETING" && j.Reason != "job_requeued_in_held_state" {
				t.Errorf("reason %q, want job_requeued_in_held_state", j.Reason)
			}
			if tc.file == "job-released-excluded.txt" {
				for _, n := range exc {
					if nodes, _ := hostlist.Expand(j.NodeList); contains(nodes, n) {
						t.Errorf("restarted on %s (%s), which it excludes", j.NodeList, n)
					}
				}
			}
		})
	}
	for in, want := range map[string]int{"4": 4, "2-4": 2, "": 0, "x": 0} {
		if got := (JobInfo{Fields: map[string]string{"NumNodes": in}}).NumNodes(); got != want {
			t.Errorf("NumNodes(%q) = %d, want %d", in, got, want)
		}
	}
	req := JobInfo{Fields: map[string]string{"ReqNodeList": "n[1-3]"}}
	if got, err := req.RequestedNodes(); err != nil || strings.Join(got, ",") != "n1,n2,n3" {
		t.Errorf("RequestedNodes(n[1-3]) = %v, %v", got, err)
	}
}

func TestNodeUsable(t *testing.T) {
	for _, tc := range []struct {
		file string
		want map[string]bool
	}{
		// cn2, cn3 drained; cn4 in a maintenance reservation; cn5 down.
		{"nodes-1.txt", map[string]bool{"cn1": true, "cn2": false, "cn3": false, "cn4": false, "cn5": false}},
		// cn1 drained to reboot, cn3 down and not responding; cn5 powered down.
		{"nodes-6.txt", map[string]bool{"cn1": false, "cn2": false, "cn3": false, "cn4": false, "cn5": true}},
		// cn3 drained and not responding, cn5 powering down.
		{"nodes-5.txt", map[string]bool{"cn3": false, "cn5": true}},
	} {
		nodes, err := ParseNodes(readTestdata(t, tc.file))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if p := n.Partitions(); len(p) != 1 || p[0] != "debug" {
				t.Errorf("%s %s: partitions %q, want debug", tc.file, n.Name, p)
			}
			if want, ok := tc.want[n.Name]; ok && n.Usable() != want {
				t.Errorf("%s %s (%s): Usable = %v, want %v", tc.file, n.Name, n.stateString(), n.Usable(), want)
			}
		}
	}
	if p := (Node{Fields: map[string]string{"Partitions": "(null)"}}).Partitions(); p != nil {
		t.Errorf("Partitions of (null) = %q", p)
	}
}
