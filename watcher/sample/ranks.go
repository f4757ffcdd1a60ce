package sample

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// A job's output tags a line with a global rank ("[rank12]:"); which host
// holds that rank is said by the environment each rank was started with,
// which the job's user (the watcher's user) can read in /proc/PID/environ.
// Under torchrun, srun starts one task per node and torchrun the node's
// ranks: SLURM_PROCID is then the task, not the rank, and only the
// launcher's own variables say which rank a process is.

// launcherRanks are the variables that carry a process's global rank, in
// precedence order: PyTorch (torchrun, torch.distributed.launch,
// DeepSpeed's launcher, Ray Train set RANK), Open MPI, PMIx, PMI (MPICH,
// Intel MPI, srun --mpi=pmi2), Horovod, and the JAX_PROCESS_ID that JAX
// launch scripts pass to jax.distributed.initialize. JAX's own Slurm
// detection uses SLURM_PROCID (one task per process); CLOUD_TPU_TASK_ID is
// a TPU VM's worker index outside Slurm and is not read.
var launcherRanks = []string{"RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "HOROVOD_RANK", "JAX_PROCESS_ID"}

// RankFromProcID is RankEnv.From for a rank read from SLURM_PROCID.
const RankFromProcID = "SLURM_PROCID"

// MaxRank bounds the ranks taken from a process's environment: a value
// past it is not a rank (no job runs ten million processes).
const MaxRank = 1 << 24

// RankEnv is who a process says it is in its job, from the environment it
// was started with. Local, Group and World are -1 when not set.
type RankEnv struct {
	Rank int    // the global rank
	From string // the variable Rank was read from
	// Launcher reports that Rank came from a launcher's variable, not
	// SLURM_PROCID (the srun task id).
	Launcher bool
	Local    int // LOCAL_RANK (torchrun), else OMPI_COMM_WORLD_LOCAL_RANK, else SLURM_LOCALID
	Group    int // GROUP_RANK (torchrun's node rank)
	World    int // WORLD_SIZE, else OMPI_COMM_WORLD_SIZE, else PMI_SIZE
}

// ParseRankEnv reads a process's rank from its environment as
// /proc/PID/environ holds it (NAME=VALUE entries, each ended by a NUL).
// The global rank is RANK, else OMPI_COMM_WORLD_RANK, else PMIX_RANK, else
// PMI_RANK, else HOROVOD_RANK, else JAX_PROCESS_ID, else SLURM_PROCID
// (only for a task of an srun step: SLURM_STEP_ID set; the batch script
// has SLURM_PROCID 0 whatever the ranks are). A
// value that is not a decimal number in [0, MaxRank), or not below a known
// world size, is not a rank. ok is false when the process carries no rank.
func ParseRankEnv(environ []byte) (env RankEnv, ok bool) {
	vars := map[string]string{}
	for entry := range bytes.SplitSeq(environ, []byte{0}) {
		name, value, found := bytes.Cut(entry, []byte{'='})
		if !found || len(name) == 0 {
			continue
		}
		if _, seen := vars[string(name)]; !seen { // the first of a repeated name is what getenv returns
			vars[string(name)] = string(value)
		}
	}
	num := func(names ...string) int {
		for _, n := range names {
			if v, set := vars[n]; set {
				if x, err := strconv.Atoi(v); err == nil && x >= 0 && x < MaxRank && v[0] != '+' {
					return x
				}
			}
		}
		return -1
	}
	env = RankEnv{Rank: -1, Local: num("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID"),
		Group: num("GROUP_RANK"), World: num("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE")}
	if env.World == 0 {
		env.World = -1
	}
	for _, n := range launcherRanks {
		if _, set := vars[n]; set {
			env.Rank, env.From, env.Launcher = num(n), n, true
			break
		}
	}
	if !env.Launcher {
		if _, step := vars["SLURM_STEP_ID"]; !step {
			return RankEnv{}, false // the batch script's shell: task 0 of no step
		}
		env.Rank, env.From = num(RankFromProcID), RankFromProcID
	}
	if env.Rank < 0 || (env.World > 0 && env.Rank >= env.World) {
		return RankEnv{}, false
	}
	return env, true
}

// NodeRanks is the global ranks of a node's processes, sorted and
// distinct: a rank read from SLURM_PROCID counts only when no process of
// the node carries a launcher's variable, now or before (launched), so
// that a launcher (torchrun, started by srun as task N, its children
// carrying RANK) is not taken for rank N, also once its children have
// exited. launchedNow is launched or whether a process does now.
func NodeRanks(envs []RankEnv, launched bool) (ranks []int, launchedNow bool) {
	launched = launched || slices.ContainsFunc(envs, func(e RankEnv) bool { return e.Launcher })
	var out []int
	for _, e := range envs {
		if e.Launcher || !launched {
			out = append(out, e.Rank)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), launched
}

// MaxEnviron bounds what is read of one process's environment, in bytes.
const MaxEnviron = 1 << 20

// MaxRankProcs bounds the processes whose environment is read in one
// pass: the ranks come first in a job's process list (its data loader
// workers, which inherit their rank's variables, follow them).
const MaxRankProcs = 4096

// ReadRanks reads the environment of each process of pids under root's
// /proc and returns the node's ranks (NodeRanks, with launched). A process
// that has exited, or whose environment this process may not read
// (another user's; a setuid program), is skipped: fewer ranks, never an
// error.
func ReadRanks(root string, pids []int, launched bool) (ranks []int, launchedNow bool) {
	return readRanks(root, pids, launched, rankCache{})
}

// rankCache is what each process's environment said of its rank, by pid:
// the environment a process was started with does not change, so a rank
// is read once while the process lives (a pid that leaves the list is
// forgotten, so a pid the kernel hands out again is read anew). Only a
// launcher's variable is kept: an environment that names no rank, or only
// SLURM_PROCID, is read again next time. A process caught between its
// fork and its exec (torchrun starting a rank) still shows its parent's
// environment, and torchrun's, under srun, names its task
// (SLURM_PROCID): kept, it hid the rank the process execs as for the
// whole job (CI, rank 2 of a torchrun job never placed).
type rankCache map[int]rankEntry

type rankEntry struct {
	env RankEnv
	ok  bool // the environment names a rank
}

// readRanks is ReadRanks, reading only the environments c lacks and
// keeping c to pids.
func readRanks(root string, pids []int, launched bool, c rankCache) (ranks []int, launchedNow bool) {
	if root == "" {
		root = "/"
	}
	self := os.Getpid()
	seen := make(map[int]bool, len(pids))
	var envs []RankEnv
	for i, pid := range pids {
		if i >= MaxRankProcs {
			break
		}
		if pid == self {
			continue
		}
		seen[pid] = true
		e, cached := c[pid]
		if !cached {
			b, err := readEnviron(filepath.Join(root, "proc", strconv.Itoa(pid), "environ"))
			if err != nil {
				continue // gone, or not ours to read: tried again next time
			}
			e.env, e.ok = ParseRankEnv(b)
			if e.ok && e.env.Launcher {
				c[pid] = e
			}
		}
		if e.ok {
			envs = append(envs, e.env)
		}
	}
	for pid := range c {
		if !seen[pid] {
			delete(c, pid)
		}
	}
	return NodeRanks(envs, launched)
}

// readEnviron reads at most MaxEnviron bytes of an environ file.
func readEnviron(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxEnviron))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b, nil
}

// Ranks returns the global ranks of the job's processes on this node
// (ReadRanks over the processes Sample reads, the excluded ones aside;
// once a launcher's variable has been seen, SLURM_PROCID counts no more);
// nil when the processes cannot be listed.
func (s *Sampler) Ranks() []int {
	pids, err := s.listPIDs()
	if err != nil {
		return nil
	}
	pids = slices.DeleteFunc(slices.Clone(pids), s.excluded)
	var ranks []int
	if s.rankEnvs == nil {
		s.rankEnvs = rankCache{}
	}
	ranks, s.launched = readRanks(s.Root, pids, s.launched, s.rankEnvs)
	return ranks
}
