package slurmtest

import (
	"strings"
	"testing"
)

func TestPartitionConf(t *testing.T) {
	if got := strings.Join(Options{}.partitionConf(), "\n"); got != "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" {
		t.Errorf("default: %q", got)
	}
	o := Options{PreemptType: "preempt/partition_prio", PreemptMode: "CANCEL", Partitions: []Partition{
		{Name: "batch", Default: true, PriorityTier: 10, PreemptMode: "OFF"},
		{Name: "vigil", Nodes: "n[1-2]", PriorityTier: 1, PreemptMode: "CANCEL", GraceTime: 30},
	}}
	want := []string{
		"PreemptType=preempt/partition_prio",
		"PreemptMode=CANCEL",
		"PartitionName=batch Nodes=ALL Default=YES PriorityTier=10 PreemptMode=OFF MaxTime=INFINITE State=UP",
		"PartitionName=vigil Nodes=n[1-2] PriorityTier=1 PreemptMode=CANCEL GraceTime=30 MaxTime=INFINITE State=UP",
	}
	if got := o.partitionConf(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
