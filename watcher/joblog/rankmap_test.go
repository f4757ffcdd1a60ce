package joblog

import "testing"

// With the job's rank map (Layout.Ranks, read from the ranks' own
// environment) a rank is placed through it alone: never through the srun
// task of the same number, which under torchrun is another process.
func TestRankPlacedOnlyThroughTheRankMap(t *testing.T) {
	l := Layout{Nodes: []string{"n1", "n2", "n3"}, Tasks: map[int]string{0: "n1", 1: "n2", 2: "n3"},
		Ranks: map[int]string{0: "n1", 1: "n1", 2: "n2", 3: "n2", 4: "n3", 5: "n3"}}
	noRanks := Layout{Nodes: l.Nodes, Tasks: l.Tasks}
	for _, c := range []struct {
		name, line string
		l          Layout
		want       Source
	}{
		{"rank through the map", "[rank3]: RuntimeError: boom", l, Source{Host: "n2", By: ByRank}},
		{"rank 1 is not task 1", "[rank1]: Traceback (most recent call last):", l, Source{Host: "n1", By: ByRank}},
		{"torchrun tee", "[default1]:[rank5]: ValueError: x", l, Source{Host: "n3", By: ByRank}},
		{"PyTorch's PG tag", "[PG ID 0 PG GUID 0(default_pg) Rank 4] Timeout", l, Source{Host: "n3", By: ByRank}},
		{"rank the map lacks", "[rank9]: RuntimeError: boom", l, Source{}},
		{"a rank past the map is not a task", "[rank2]: boom", Layout{Nodes: l.Nodes, Tasks: l.Tasks, Ranks: map[int]string{0: "n1"}}, Source{}},
		{"without a map, a rank is the task of its number", "[rank2]: boom", noRanks, Source{Host: "n3", By: ByRank}},
		{"torchrun without a map places nothing", "[default0]:[rank2]: boom", noRanks, Source{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Attribute(c.line, c.l); got != c.want {
				t.Errorf("Attribute(%q) = %+v, want %+v", c.line, got, c.want)
			}
		})
	}
}
