package health

import (
	"context"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-hpc/vigil/benchmarks"
)

// TestGPUCountInventory: gpu-count names every GPU NVML sees by its UUID
// and serial (go-nvml's mock behind the whole-node fake), with its product
// name and PCI address, under the name the other checks' results use; the
// job's devices do not narrow it, and a fact NVML cannot read is left empty
// without changing the verdict.
func TestGPUCountInventory(t *testing.T) {
	node := newHealthyNode()
	node.gpus[5].errs["serial"] = nvml.ERROR_NOT_SUPPORTED
	node.gpus[6].errs["uuid"] = nvml.ERROR_GPU_IS_LOST
	env := &benchmarks.Env{Devices: []int{0, 1}, Settings: settings(t, "sysfs = '"+sysfsFixture(t, "dgx-h100.txt")+"'\nexpected = 8")}
	r := (&gpuCount{nvmlCheck{node.library()}}).Run(context.Background(), env)
	require.Equal(t, benchmarks.StatusPass, r.Status, r.Message)
	require.Len(t, r.Components, 8)
	assert.Equal(t, benchmarks.Component{Kind: "gpu", Name: "gpu3", UUID: fakeUUID(3), Serial: "1652023000003",
		Model: "NVIDIA H100 80GB HBM3", PCI: "0000:5d:00.0"}, r.Components[3])
	assert.Equal(t, "gpu:"+fakeUUID(3), r.Components[3].ID())
	assert.Empty(t, r.Components[5].Serial)
	assert.Equal(t, "gpu:"+fakeUUID(5), r.Components[5].ID(), "the UUID is the identity")
	assert.Empty(t, r.Components[6].UUID)
	assert.Equal(t, "gpu:sn-1652023000006", r.Components[6].ID(), "without a UUID, the serial")
	seen := map[string]bool{}
	for i, c := range r.Components {
		assert.Equal(t, gpu{index: i}.id(), c.Name)
		assert.False(t, seen[c.ID()], "identities are unique: %s", c.ID())
		seen[c.ID()] = true
	}

	// Fewer GPUs than expected: the ones NVML still sees are named.
	node.visible = 6
	r = (&gpuCount{nvmlCheck{node.library()}}).Run(context.Background(), env)
	assert.Equal(t, benchmarks.StatusFail, r.Status, r.Message)
	assert.Len(t, r.Components, 6)

	// No NVML: no components.
	r = (&gpuCount{nvmlCheck{(&fakeNVMLNode{initRet: nvml.ERROR_LIBRARY_NOT_FOUND}).library()}}).Run(context.Background(), env)
	assert.Empty(t, r.Components)
}
