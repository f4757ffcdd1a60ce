package rendezvous

import (
	"fmt"

	"github.com/vigil-hpc/vigil/slurm"
	"github.com/vigil-hpc/vigil/slurm/hostlist"
)

// ForJob fills the job's part of a Config from the job as the prolog sees
// it (slurm.JobFromEnv): the job id, the restart count, this node's name
// and the job's nodes, expanded in process from SLURM_JOB_NODELIST with
// hostlist.Expand (no scontrol call). The caller adds Port, Auth and
// the rest.
func ForJob(job *slurm.Job) (Config, error) {
	nodes := job.Nodes
	if len(nodes) == 0 && job.NodeList != "" {
		var err error
		if nodes, err = hostlist.Expand(job.NodeList); err != nil {
			return Config{}, fmt.Errorf("rendezvous: %w", err)
		}
	}
	switch {
	case job.ID == "":
		return Config{}, fmt.Errorf("rendezvous: no job id")
	case job.NodeName == "":
		return Config{}, fmt.Errorf("rendezvous: no node name")
	case len(nodes) == 0:
		return Config{}, fmt.Errorf("rendezvous: job %s has no node list", job.ID)
	case job.RestartCount < 0:
		return Config{}, fmt.Errorf("rendezvous: restart count %d", job.RestartCount)
	}
	return Config{Job: job.ID, Restart: uint32(job.RestartCount), Self: job.NodeName, Nodes: nodes}, nil
}
