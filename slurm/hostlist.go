package slurm

// ExpandHostlist expands a Slurm hostlist expression as `scontrol show hostnames` does.
func ExpandHostlist(expr string) ([]string, error) { return nil, errTODO }

// CompressHostlist compresses host names as `scontrol show hostlist` does.
func CompressHostlist(hosts []string) string { return "" }
