package node

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// TestRDMAComponents: the rdma check names every port it read by the
// adapter's node GUID and the port's number (testdata/rdma/dgx has
// node_guid and the device link of a real sysfs), with the adapter's
// hca_type and PCI address, under the name its results use ("mlx5_3/1");
// a tree without them (port-down, as some kernels' software devices)
// gives ports without an identity, and a failing port is named all the
// same.
func TestRDMAComponents(t *testing.T) {
	r := (&rdma{}).Run(context.Background(), rdmaEnv(t, rdmaFixture("dgx"), "", "expect_active = ['mlx5_*']\n"))
	require.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	require.Len(t, r.Components, 8)
	assert.Equal(t, benchmarks.Component{Kind: "hca", Name: "mlx5_3/1", GUID: "a088:c203:0045:6d03", Port: 1,
		Model: "MT4129", PCI: "0000:5e:00.0"}, r.Components[3])
	assert.Equal(t, "hca:a088:c203:0045:6d03/1", r.Components[3].ID())
	for i, c := range r.Components {
		assert.Equal(t, fmt.Sprintf("mlx5_%d/1", i), c.Name)
		assert.Equal(t, fmt.Sprintf("hca:a088:c203:0045:6d%02x/1", i), c.ID())
	}

	r = (&rdma{}).Run(context.Background(), rdmaEnv(t, rdmaFixture("port-down"), "", "expect_active = ['mlx5_*/1']\n"))
	require.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
	require.Len(t, r.Components, 3)
	assert.Equal(t, benchmarks.Component{Kind: "hca", Name: "mlx5_1/1", Port: 1, Model: "MT4129"}, r.Components[1])
	assert.Empty(t, r.Components[1].ID(), "no node_guid: no identity")

	r = (&rdma{}).Run(context.Background(), rdmaEnv(t, t.TempDir(), "", ""))
	assert.Empty(t, r.Components, "no RDMA devices")
}

// TestPCIOf: the device link's last element is the address when it is
// one; a link elsewhere or none is no address.
func TestPCIOf(t *testing.T) {
	assert.Equal(t, "0000:1b:00.0", pciOf(rdmaFixture("dgx")+"/sys/class/infiniband/mlx5_0"))
	assert.Empty(t, pciOf(rdmaFixture("roce")+"/sys/class/infiniband/mlx5_0"))
}
