package slurm

import "errors"

// errTODO marks a stub not yet replaced by its implementation.
var errTODO = errors.New("slurm: not implemented yet")
