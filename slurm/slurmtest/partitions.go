package slurmtest

import (
	"fmt"
	"strings"
)

// Partition is one PartitionName line of slurm.conf (Options.Partitions).
type Partition struct {
	// Name is the partition's name.
	Name string
	// Nodes are its nodes as slurm.conf writes them; "" means ALL.
	Nodes string
	// Default makes it the default partition.
	Default bool
	// PriorityTier orders the partitions for scheduling and, with
	// PreemptType=preempt/partition_prio, for preemption (a higher tier
	// preempts a lower one); 0 keeps Slurm's default (1).
	PriorityTier int
	// PreemptMode is how its jobs are preempted (CANCEL, REQUEUE, OFF);
	// "" keeps the cluster's.
	PreemptMode string
	// GraceTime is the preemption grace time of its jobs in seconds; 0
	// keeps Slurm's default (none).
	GraceTime int
}

// line is the partition's slurm.conf line.
func (p Partition) line() string {
	nodes := p.Nodes
	if nodes == "" {
		nodes = "ALL"
	}
	f := []string{"PartitionName=" + p.Name, "Nodes=" + nodes}
	if p.Default {
		f = append(f, "Default=YES")
	}
	if p.PriorityTier > 0 {
		f = append(f, fmt.Sprintf("PriorityTier=%d", p.PriorityTier))
	}
	if p.PreemptMode != "" {
		f = append(f, "PreemptMode="+p.PreemptMode)
	}
	if p.GraceTime > 0 {
		f = append(f, fmt.Sprintf("GraceTime=%d", p.GraceTime))
	}
	return strings.Join(append(f, "MaxTime=INFINITE", "State=UP"), " ")
}

// partitionConf is the cluster's partitions and preemption: the default
// partition debug with every node unless Options.Partitions names others,
// and PreemptType and PreemptMode when set.
func (o Options) partitionConf() []string {
	var conf []string
	if o.PreemptType != "" {
		conf = append(conf, "PreemptType="+o.PreemptType)
	}
	if o.PreemptMode != "" {
		conf = append(conf, "PreemptMode="+o.PreemptMode)
	}
	if len(o.Partitions) == 0 {
		return append(conf, "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
	}
	for _, p := range o.Partitions {
		conf = append(conf, p.line())
	}
	return conf
}
