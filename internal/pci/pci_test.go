package pci

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeDevice adds a PCI device with the given vendor and class below root.
func writeDevice(t *testing.T, root, addr, vendor, class string) {
	t.Helper()
	dir := filepath.Join(root, "bus", "pci", "devices", addr)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "vendor"), []byte(vendor+"\n"), 0o444))
	if class != "" {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "class"), []byte(class+"\n"), 0o444))
	}
}

func TestDevices(t *testing.T) {
	root := t.TempDir()
	writeDevice(t, root, "0000:3B:00.0", "0x10de", "0x030200") // 3D controller
	writeDevice(t, root, "0000:18:00.0", "0x10de", "0x030000") // VGA
	writeDevice(t, root, "0000:18:00.1", "0x10de", "0x040300") // its audio function
	writeDevice(t, root, "0000:5d:00.0", "0x8086", "0x030200") // another vendor
	writeDevice(t, root, "0000:c1:00.0", "0x19e5", "0x120000") // an Ascend NPU
	writeDevice(t, root, "0000:99:00.0", "0x10de", "")         // vanished while listed

	got, err := Devices(root, "0x10de", "0x0300", "0x0302")
	require.NoError(t, err)
	assert.Equal(t, []string{"0000:18:00.0", "0000:3b:00.0"}, got)
	got, err = Devices(root, "0x19e5", "0x1200")
	require.NoError(t, err)
	assert.Equal(t, []string{"0000:c1:00.0"}, got)

	got, err = Devices(t.TempDir(), "0x10de", "0x0302")
	require.NoError(t, err, "a sysfs without a PCI bus has no devices")
	assert.Empty(t, got)

	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.MkdirAll(filepath.Join(file, "bus", "pci"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(file, "bus", "pci", "devices"), nil, 0o644))
	_, err = Devices(file, "0x10de", "0x0302")
	assert.ErrorContains(t, err, "PCI devices")
}

func TestNormalisePCI(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:3B:00.0": "0000:3b:00.0",
		"0000:3b:00.0":     "0000:3b:00.0",
		" 0001:01:00.1\n":  "0001:01:00.1",
		"3b:00.0":          "3b:00.0",
	} {
		t.Run(strings.TrimSpace(in), func(t *testing.T) { assert.Equal(t, want, Normalise(in)) })
	}
}
