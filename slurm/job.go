// Package slurm is vigil's seam to Slurm: the job environment, hostlists,
// scontrol, drain ownership and job cgroups.
package slurm

// Job is the job as the prolog, epilog and a job step see it.
type Job struct {
	ID           string            // SLURM_JOB_ID
	User         string            // SLURM_JOB_USER
	UID          int               // SLURM_JOB_UID
	GID          int               // SLURM_JOB_GID
	NodeList     string            // SLURM_JOB_NODELIST or SLURM_NODELIST, compressed
	Nodes        []string          // NodeList expanded
	NodeName     string            // SLURMD_NODENAME (or the step's node)
	Partition    string            // SLURM_JOB_PARTITION
	GPUs         []int             // SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES when numeric
	RestartCount int               // SLURM_RESTART_COUNT / SLURM_JOB_RESTART_COUNT
	StepID       string            // SLURM_STEP_ID, empty outside a step
	Context      string            // SLURM_SCRIPT_CONTEXT (prolog_slurmd, epilog_slurmd)
	Spank        map[string]string // SPANK_* variables, keyed without the prefix
}

// JobFromEnv reads the job from environment lookups (os.LookupEnv in mains).
func JobFromEnv(lookup func(string) (string, bool)) (*Job, error) { return nil, errTODO }
