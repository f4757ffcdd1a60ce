package dl

import (
	"path/filepath"
	"sort"
)

// DefaultDirs are directories where CUDA and NCCL are commonly installed,
// tried before the loader's own search.
var DefaultDirs = []string{
	"/usr/local/cuda/lib64",
	"/usr/local/cuda/targets/x86_64-linux/lib",
	"/usr/local/cuda/targets/sbsa-linux/lib",
	"/usr/lib/x86_64-linux-gnu",
	"/usr/lib/aarch64-linux-gnu",
	"/usr/lib64",
}

// CANNDirs are where Huawei's CANN installs its libraries: the toolkit, for
// each architecture, and the neural-network engine of training nodes.
var CANNDirs = []string{
	"/usr/local/Ascend/ascend-toolkit/latest/lib64",
	"/usr/local/Ascend/ascend-toolkit/latest/aarch64-linux/lib64",
	"/usr/local/Ascend/ascend-toolkit/latest/x86_64-linux/lib64",
	"/usr/local/Ascend/nnae/latest/lib64",
}

// PythonDirs returns the library directories that pip wheels of the NVIDIA
// libraries install under Python site-packages below each prefix, for
// example PREFIX/lib/python3.11/site-packages/nvidia/cublas/lib. Prefixes are
// typically "/usr", "/usr/local", a virtualenv ($VIRTUAL_ENV) or a conda
// environment ($CONDA_PREFIX). root is prepended to every pattern ("/" in
// production, a fixture tree in tests). The result is sorted so that newer
// Python versions come last within a prefix and is free of duplicates.
func PythonDirs(root string, prefixes []string, packages []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range prefixes {
		if p == "" {
			continue
		}
		for _, pkg := range packages {
			for _, sp := range []string{"site-packages", "dist-packages"} {
				for _, lib := range []string{"lib", "lib64"} {
					pat := filepath.Join(root, p, lib, "python3*", sp, "nvidia", pkg, "lib")
					m, _ := filepath.Glob(pat)
					sort.Strings(m)
					for _, d := range m {
						if !seen[d] {
							seen[d] = true
							out = append(out, d)
						}
					}
				}
			}
		}
	}
	return out
}
