package coord

import (
	"encoding/json"
	"maps"
	"sort"
	"sync"
)

// The job's rank map: which host holds each global rank, from the ranks
// each node's watcher reads in its own processes' environment
// (sample.Sampler.Ranks) and sends in its summaries. The coordinator
// gathers it and hands it to every member with its tick, so that the
// watcher that follows the job's output (the batch host) writes it into
// the layout record (joblog.Layout.Ranks) whichever node coordinates.

// MaxSummaryRanks bounds the ranks one summary may carry.
const MaxSummaryRanks = 1 << 16

// maxRank bounds a rank a summary may carry (sample.MaxRank).
const maxRank = 1 << 24

// RankMap is the job's global ranks by host, as last seen. A rank keeps
// its host once its process has exited (the lines it printed before are
// still attributed); it moves when another host alone claims it (an
// elastic restart), and stays where it was while two hosts claim it at
// once.
type RankMap struct {
	mu sync.Mutex
	m  map[int]string
}

// Update takes one round of claims (the ranks each host holds now) and
// reports whether the map changed.
func (r *RankMap) Update(claims map[string][]int) bool {
	by := map[int][]string{}
	hosts := make([]string, 0, len(claims))
	for h := range claims {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	for _, h := range hosts {
		for _, rank := range claims[h] {
			by[rank] = append(by[rank], h)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for rank, hs := range by {
		if len(hs) != 1 || r.m[rank] == hs[0] {
			continue
		}
		if r.m == nil {
			r.m = map[int]string{}
		}
		r.m[rank], changed = hs[0], true
	}
	return changed
}

// Merge takes another map's entries (the coordinator's word) and reports
// whether the map changed.
func (r *RankMap) Merge(m map[int]string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed := false
	for rank, h := range m {
		if h == "" || r.m[rank] == h {
			continue
		}
		if r.m == nil {
			r.m = map[int]string{}
		}
		r.m[rank], changed = h, true
	}
	return changed
}

// Map returns a copy of the map; nil when empty.
func (r *RankMap) Map() map[int]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.m) == 0 {
		return nil
	}
	return maps.Clone(r.m)
}

// tickRanks starts the payload of the coordinator's tick that carries the
// job's rank map (JSON after it).
const tickRanks = "ranks"

// ranksTick is the tick's payload for the map m; nil for an empty one.
func ranksTick(m map[int]string) []byte {
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return append([]byte(tickRanks), b...)
}

// tickRankMap reads the rank map of a tick's payload (after tickRanks);
// a map with a rank out of range or an empty host is not taken.
func tickRankMap(b string) (map[int]string, bool) {
	var m map[int]string
	if json.Unmarshal([]byte(b), &m) != nil || len(m) > MaxSummaryRanks*64 {
		return nil, false
	}
	for rank, h := range m {
		if rank < 0 || rank >= maxRank || h == "" {
			return nil, false
		}
	}
	return m, true
}

// validRanks checks a summary's ranks.
func validRanks(ranks []int) bool {
	if len(ranks) > MaxSummaryRanks {
		return false
	}
	for _, r := range ranks {
		if r < 0 || r >= maxRank {
			return false
		}
	}
	return true
}
