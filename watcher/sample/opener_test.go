package sample

import (
	"testing"

	"github.com/vigil-hpc/vigil/internal/vendors"
)

// TestEveryVendorHasAnOpener: each row of the vendor table names a sampler
// whose file registers its opener, so that vigil-watch chooses the sampler
// by the table alone.
func TestEveryVendorHasAnOpener(t *testing.T) {
	for _, r := range vendors.Table {
		if _, ok := OpenerOf(r.Sampler); !ok {
			t.Errorf("vendor %s: no opener registered for sampler %q", r.Name, r.Sampler)
		}
	}
}

func TestRegisterOpenerTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a second opener of nvml did not panic")
		}
	}()
	RegisterOpener(vendors.SamplerNVML, openNVML)
}
