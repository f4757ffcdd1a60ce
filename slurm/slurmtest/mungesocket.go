package slurmtest

// MungeSocket is the socket of the cluster's private munged, for programs
// under test that seal MUNGE credentials themselves (vigil-watch's
// meeting of a job's watchers).
func (c *Cluster) MungeSocket() string { return c.mungeSocket() }
