package ascend

import (
	"context"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/benchmarks/device"
)

// Ranks is how many ranks this node brings: the job's NPUs (env.Devices),
// or every NPU ACL shows when that is nil; 0 when CANN cannot be opened.
func (c *multinode) Ranks(env *benchmarks.Env) int {
	if len(env.Devices) > 0 {
		return len(env.Devices)
	}
	_, libs, err := c.settings(env)
	if err != nil {
		return 0
	}
	node, err := openACL(c.cann, libs, nil)
	if err != nil {
		return 0
	}
	defer node.Close()
	return len(node.Devices())
}

// Setup makes the communicator's root info (newRootInfo) on the
// coordinator, in the prolog process that stays alive while the ranks join.
func (c *multinode) Setup(env *benchmarks.Env) ([]byte, error) { return c.newRootInfo(env) }

// RunRanks runs this node's ranks first .. first+Ranks-1 of total.
func (c *multinode) RunRanks(ctx context.Context, env *benchmarks.Env, setup []byte, first, total int) benchmarks.Result {
	return c.run(ctx, env, device.MultinodeRole{ID: setup, NRanks: total, FirstRank: first})
}

// The cross-node phase drives the check as a benchmarks.CollectiveCheck.
var _ benchmarks.CollectiveCheck = (*multinode)(nil)
