// Package realjob holds vigil-watch's end-to-end tests on real PyTorch
// training jobs (torch.distributed over gloo, on CPUs) on a real Slurm
// cluster, one fault per job, and the replay tests over what those jobs
// printed and what their watchers recorded (testdata/fixtures). The
// expected answer for each fault, and each known gap, is one row of the
// faults table in faults_test.go; docs/testing.md ("Real PyTorch jobs")
// lists the gaps.
package realjob
