package loop

import (
	"slices"
	"testing"

	"github.com/vigil-hpc/vigil/internal/vendors"
)

func TestSamplerOrder(t *testing.T) {
	nv, _ := vendors.Lookup("nvidia")
	as, _ := vendors.Lookup("ascend")
	name := func(rs []vendors.Row) (s []string) {
		for _, r := range rs {
			s = append(s, r.Name)
		}
		return s
	}
	rows, probed := samplerOrder([]vendors.Found{{Row: as, Count: 8}})
	if !probed || !slices.Equal(name(rows), []string{"ascend"}) {
		t.Errorf("Ascend probed: %v %v, want only ascend", name(rows), probed)
	}
	rows, probed = samplerOrder([]vendors.Found{{Row: nv, Count: 2}, {Row: as, Count: 8}})
	if !probed || !slices.Equal(name(rows), []string{"nvidia", "ascend"}) {
		t.Errorf("both probed: %v %v", name(rows), probed)
	}
	rows, probed = samplerOrder(nil)
	if probed || !slices.Equal(name(rows), []string{"nvidia", "ascend"}) {
		t.Errorf("nothing probed: %v %v, want the table in order", name(rows), probed)
	}
}
