package nvidia

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/internal/cmdline"
)

// selftestCommandName is the vigil-prolog subcommand that runs
// multinodeSelftest: a validation tool for one GPU machine, without Slurm.
const selftestCommandName = "multinode-selftest"

func init() { benchmarks.RegisterCommand(selftestCommandName, selftestCommand) }

// Exit codes of the multinode-selftest command.
const (
	// selftestPass: every simulated node passed.
	selftestPass = 0
	// selftestFail: a node failed, hung or met an NCCL error.
	selftestFail = 1
	// selftestBadUsage: bad command line.
	selftestBadUsage = 2
	// selftestUnknown: nothing could be measured (no library, no GPU, an
	// unreadable or invalid config).
	selftestUnknown = 3
)

const selftestUsage = `usage: vigil-prolog multinode-selftest [--config FILE] [--nodes K] [--timeout D]

Runs nccl-allreduce-multinode's cross-node path on this machine alone, as
a validation tool: its GPUs (CUDA_VISIBLE_DEVICES honoured) are split into
K simulated nodes (default 2; fewer when there are fewer GPUs), and, in one
process, NCCL's unique id is made once and every simulated node joins one
communicator with its own GPUs and first rank, verifies an all-reduce and
times it. No Slurm, MUNGE or network peer is needed. NCCL sees one host and
may pick its in-node transports; NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 make
it use its network transport instead.

Settings come from [checks.nccl-allreduce-multinode] of the config (default
/etc/vigil/vigil.toml; a missing default file means the shipped settings).
--timeout (default 2m) bounds the whole run. Prints each simulated node's
result (status, reason, busbw_gbps and algbw_gbps, message) and a verdict.
Exit status: 0 every node passed, 1 a node failed (a hang or NCCL error is
this machine's here), 2 bad usage, 3 unknown (no library, no GPU, bad config).
`

// selftestCommand runs vigil-prolog multinode-selftest: it parses the flags,
// reads the config, runs multinodeSelftest within --timeout of ctx, prints
// the report on stdout and returns the exit code.
func selftestCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := cmdline.New("vigil-prolog", selftestCommandName, selftestUsage)
	path := cmd.Flags.String("config", config.DefaultPath, "config file")
	nodes := cmd.Flags.Int("nodes", 2, "simulated nodes")
	timeout := cmd.Flags.Duration("timeout", 2*time.Minute, "deadline of the whole run")
	switch err := cmd.Parse(args, stdout, stderr, func() error {
		switch {
		case *nodes < 1:
			return fmt.Errorf("--nodes %d: want 1 or more", *nodes)
		case *timeout <= 0:
			return fmt.Errorf("--timeout %v: must be positive", *timeout)
		}
		return nil
	}); {
	case errors.Is(err, flag.ErrHelp):
		return selftestPass
	case err != nil:
		return selftestBadUsage
	}
	env, err := selftestEnv(*path, cmd.Given("config"))
	if err != nil {
		fmt.Fprintf(stderr, "vigil-prolog %s: %v\n", selftestCommandName, err)
		return selftestUnknown
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	rep := multinodeSelftest(ctx, env, *nodes)
	rep.Write(stdout)
	switch rep.Status {
	case benchmarks.StatusPass:
		return selftestPass
	case benchmarks.StatusFail:
		return selftestFail
	}
	return selftestUnknown
}

// selftestEnv is the Env of the self-test: the settings of
// [checks.nccl-allreduce-multinode] and [vendor.nvidia] in the file at
// path, the shipped ones when the file is missing and was not named
// explicitly.
func selftestEnv(path string, explicit bool) (*benchmarks.Env, error) {
	env := &benchmarks.Env{Node: "selftest"}
	f, err := config.Load(path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !explicit:
		return env, nil
	case err != nil:
		return nil, err
	}
	env.Settings = benchmarks.SettingsFrom(f, multinodeName)
	env.Libraries = benchmarks.LibrariesFrom(f, multinodeName)
	return env, nil
}
