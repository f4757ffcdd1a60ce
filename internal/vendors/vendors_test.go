package vendors

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// write creates file p (and its directories) below root.
func write(t *testing.T, root, p, s string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(s), 0o644))
}

// device adds a PCI function with the given vendor and class below root/sys.
func device(t *testing.T, root, addr, vendor, class string) {
	t.Helper()
	write(t, root, "sys/bus/pci/devices/"+addr+"/vendor", vendor+"\n")
	write(t, root, "sys/bus/pci/devices/"+addr+"/class", class+"\n")
}

func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Table {
		assert.False(t, seen[r.Name], "vendor %s twice", r.Name)
		seen[r.Name] = true
		assert.NotEmpty(t, r.PCIVendors, r.Name)
		assert.NotEmpty(t, r.PCIClasses, r.Name)
		for _, f := range []string{r.Maker, r.Noun, r.DevNode, r.DevPrefix, string(r.Sampler)} {
			assert.NotEmpty(t, f, r.Name)
		}
		got, ok := Lookup(r.Name)
		assert.True(t, ok)
		assert.Equal(t, r.Name, got.Name)
		if r.TorchDevice != "" {
			got, ok = ByTorchDevice(r.TorchDevice)
			assert.True(t, ok, r.Name)
			assert.Equal(t, r.Name, got.Name, "PyTorch device type %s of two vendors", r.TorchDevice)
		}
		if len(r.Reset) > 0 {
			assert.True(t, filepath.IsAbs(r.Reset[0]), "%s: reset program %q not an absolute path", r.Name, r.Reset[0])
			assert.Contains(t, r.Reset, IndexPlaceholder, "%s: reset command without the device index", r.Name)
		}
	}
	_, ok := Lookup("none")
	assert.False(t, ok)
	_, ok = ByTorchDevice("")
	assert.False(t, ok, "an empty device type is no vendor's")
	_, ok = ByTorchDevice("cpu")
	assert.False(t, ok)
}

func TestDevNodePath(t *testing.T) {
	nv, _ := Lookup("nvidia")
	as, _ := Lookup("ascend")
	assert.Equal(t, "/dev/nvidia3", nv.DevNodePath("/", 3))
	assert.Equal(t, "/x/dev/davinci12", as.DevNodePath("/x", 12))
	// Probe counts exactly the nodes DevNodePath names.
	root := t.TempDir()
	write(t, root, "dev/davinci0", "")
	require.NoError(t, os.WriteFile(as.DevNodePath(root, 7), nil, 0o644))
	got := Probe(root)
	require.Len(t, got, 1)
	assert.Equal(t, []string{"/dev/davinci0", "/dev/davinci7"}, got[0].Evidence)
}

func TestMessages(t *testing.T) {
	nv, _ := Lookup("nvidia")
	as, _ := Lookup("ascend")
	assert.Equal(t, "no NVIDIA GPU on this node (PCI vendor 10de not found, no /dev/nvidia[0-9]*)", nv.Absent())
	assert.Equal(t, "no Ascend NPU on this node (PCI vendor 19e5 not found, no /dev/davinci[0-9]*)", as.Absent())
	assert.Equal(t, "no NVIDIA or Ascend devices found (no /dev/nvidia[0-9]*, /dev/davinci[0-9]*, or PCI functions of vendor 10de/19e5)", NoneFound())
}

func TestPCIDevices(t *testing.T) {
	root := t.TempDir()
	device(t, root, "0000:3b:00.0", "0x10de", "0x030200") // 3D controller
	device(t, root, "0000:18:00.0", "0x10de", "0x030000") // VGA
	device(t, root, "0000:18:00.1", "0x10de", "0x040300") // its audio function
	device(t, root, "0000:c1:00.0", "0x19e5", "0x120000") // an Ascend NPU
	device(t, root, "0000:3d:00.0", "0x19e5", "0x020000") // a Huawei NIC
	nv, _ := Lookup("nvidia")
	as, _ := Lookup("ascend")
	got, err := nv.PCIDevices(filepath.Join(root, "sys"))
	require.NoError(t, err)
	assert.Equal(t, []string{"0000:18:00.0", "0000:3b:00.0"}, got)
	got, err = as.PCIDevices(filepath.Join(root, "sys"))
	require.NoError(t, err)
	assert.Equal(t, []string{"0000:c1:00.0"}, got)
	got, err = as.PCIDevices(t.TempDir())
	require.NoError(t, err, "a sysfs without a PCI bus has no devices")
	assert.Empty(t, got)
}

func TestProbe(t *testing.T) {
	root := t.TempDir()
	assert.Empty(t, Probe(root), "empty root")
	write(t, root, "dev/nvidia0", "")
	write(t, root, "dev/nvidiactl", "")
	device(t, root, "0000:3b:00.0", "0x10de", "0x030200")
	device(t, root, "0000:5e:00.0", "0x10de", "0x030200")
	device(t, root, "0000:5f:00.0", "0x10de", "0x040300") // audio function
	device(t, root, "0000:c1:00.0", "0x19e5", "0x120000")
	got := Probe(root)
	require.Len(t, got, 2)
	assert.Equal(t, "nvidia", got[0].Row.Name)
	assert.Equal(t, 2, got[0].Count)
	assert.Equal(t, []string{"/dev/nvidia0", "pci 0000:3b:00.0 nvidia", "pci 0000:5e:00.0 nvidia"}, got[0].Evidence)
	assert.Equal(t, "ascend", got[1].Row.Name)
	assert.Equal(t, 1, got[1].Count)

	npuOnly := t.TempDir()
	write(t, npuOnly, "dev/davinci0", "")
	write(t, npuOnly, "dev/davinci1", "")
	write(t, npuOnly, "dev/davinci_manager", "")
	got = Probe(npuOnly)
	require.Len(t, got, 1)
	assert.Equal(t, SamplerDCMI, got[0].Row.Sampler)
	assert.Equal(t, 2, got[0].Count)
}
