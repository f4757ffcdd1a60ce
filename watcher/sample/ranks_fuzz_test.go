package sample

import (
	"bytes"
	"testing"
)

// FuzzParseRankEnv: a process's environment is the job's user's to write;
// whatever it holds, the parser does not panic, and a rank it reads is in
// range (below the world size when one is given) and comes from a
// variable the environment has.
func FuzzParseRankEnv(f *testing.F) {
	f.Add([]byte("RANK=12\x00LOCAL_RANK=4\x00GROUP_RANK=1\x00WORLD_SIZE=16\x00SLURM_PROCID=1\x00SLURM_STEP_ID=0\x00"))
	f.Add([]byte("OMPI_COMM_WORLD_RANK=3\x00OMPI_COMM_WORLD_SIZE=4\x00"))
	f.Add([]byte("SLURM_PROCID=2\x00SLURM_STEP_ID=0\x00"))
	f.Add([]byte("RANK=99999999999999999999\x00RANK=-1\x00=x\x00RANK\x00"))
	f.Fuzz(func(t *testing.T, environ []byte) {
		env, ok := ParseRankEnv(environ)
		if !ok {
			return
		}
		if env.Rank < 0 || (env.World > 0 && env.Rank >= env.World) {
			t.Fatalf("rank %d of world %d from %q", env.Rank, env.World, environ)
		}
		if env.From == "" || !bytes.Contains(environ, []byte(env.From+"=")) {
			t.Fatalf("rank from %q, which the environment %q does not set", env.From, environ)
		}
	})
}
