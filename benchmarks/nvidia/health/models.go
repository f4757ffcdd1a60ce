package health

// Shipped per-model defaults. Keys are NVML product names as
// `nvidia-smi --query-gpu=name --format=csv` prints them; a node whose
// devices report another name gets the check's model-independent behaviour
// unless [checks.NAME] adds an entry for it.

// nvlinkDefaults is the number of NVLink links each SXM part has.
var nvlinkDefaults = map[string]int{
	"NVIDIA A100-SXM4-40GB":   12,
	"NVIDIA A100-SXM4-80GB":   12,
	"NVIDIA H100 80GB HBM3":   18,
	"NVIDIA H200":             18,
	"NVIDIA H200 141GB HBM3e": 18,
	"NVIDIA B200":             18,
	"NVIDIA B200 180GB HBM3e": 18,
}

// pcieDefaults is the PCIe link each part must at least be able to train
// to (its maximum generation and width, as the device and host allow).
var pcieDefaults = map[string]pcieModel{
	"NVIDIA A100-SXM4-40GB":   {MinGen: 4, MinWidth: 16},
	"NVIDIA A100-SXM4-80GB":   {MinGen: 4, MinWidth: 16},
	"NVIDIA A100-PCIE-40GB":   {MinGen: 4, MinWidth: 16},
	"NVIDIA A100 80GB PCIe":   {MinGen: 4, MinWidth: 16},
	"NVIDIA H100 80GB HBM3":   {MinGen: 5, MinWidth: 16},
	"NVIDIA H100 PCIe":        {MinGen: 5, MinWidth: 16},
	"NVIDIA H200":             {MinGen: 5, MinWidth: 16},
	"NVIDIA H200 141GB HBM3e": {MinGen: 5, MinWidth: 16},
	"NVIDIA B200":             {MinGen: 5, MinWidth: 16},
	"NVIDIA B200 180GB HBM3e": {MinGen: 5, MinWidth: 16},
}

// leftoverDefaults is the device memory (MiB) an idle device of each part
// may report as used before it counts as left behind by an earlier job.
// NVML's used figure includes memory the driver reserves, which grows with
// the device's memory size.
var leftoverDefaults = map[string]float64{
	"NVIDIA A100-SXM4-40GB":   1024,
	"NVIDIA A100-SXM4-80GB":   1024,
	"NVIDIA A100-PCIE-40GB":   1024,
	"NVIDIA A100 80GB PCIe":   1024,
	"NVIDIA H100 80GB HBM3":   1024,
	"NVIDIA H100 PCIe":        1024,
	"NVIDIA H200":             1536,
	"NVIDIA H200 141GB HBM3e": 1536,
	"NVIDIA B200":             2048,
	"NVIDIA B200 180GB HBM3e": 2048,
}

// copyMap returns a copy of m, so settings decoded into it never change the
// shipped defaults.
func copyMap[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
