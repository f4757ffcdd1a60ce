package benchmarks

import (
	"sort"
	"sync"

	"github.com/vigil-hpc/vigil/config"
	"github.com/vigil-hpc/vigil/internal/vendors"
)

// VendorSection is the config table that holds one table per vendor:
// [vendor.NAME], NAME a row of the vendor table (internal/vendors). It says
// where the vendor's libraries are, once for every check of that vendor.
const VendorSection = "vendor"

var (
	libMu       sync.Mutex
	libDefaults = map[Vendor]func() any{}
)

// RegisterLibraries declares the settings of [vendor.NAME] for vendor v:
// defaults returns a pointer to a struct holding the shipped library
// search, which the section is decoded over. It panics on a vendor outside
// the vendor table or one registered twice, like Register.
func RegisterLibraries(v Vendor, defaults func() any) {
	if _, ok := vendors.Lookup(string(v)); !ok {
		panic("benchmarks: RegisterLibraries of unknown vendor " + string(v))
	}
	libMu.Lock()
	defer libMu.Unlock()
	if _, dup := libDefaults[v]; dup {
		panic("benchmarks: RegisterLibraries called twice for " + string(v))
	}
	libDefaults[v] = defaults
}

// LibraryDefaults returns the shipped [vendor.NAME] settings of vendor v
// (a fresh pointer), false when v declares none.
func LibraryDefaults(v Vendor) (any, bool) {
	libMu.Lock()
	d, ok := libDefaults[v]
	libMu.Unlock()
	if !ok {
		return nil, false
	}
	return d(), true
}

// LibraryVendors are the vendors that declared [vendor.NAME] settings, in
// the vendor table's order.
func LibraryVendors() []Vendor {
	libMu.Lock()
	defer libMu.Unlock()
	var out []Vendor
	for _, r := range vendors.Table {
		if _, ok := libDefaults[Vendor(r.Name)]; ok {
			out = append(out, Vendor(r.Name))
		}
	}
	return out
}

// LibraryKeys are the keys of every vendor's [vendor.NAME] settings, each
// with its vendor: what a [checks.NAME] section may no longer set.
func LibraryKeys() map[string][]Vendor {
	out := map[string][]Vendor{}
	for _, v := range LibraryVendors() {
		d, _ := LibraryDefaults(v)
		for _, k := range config.Keys(d) {
			out[k] = append(out[k], v)
		}
	}
	for _, vs := range out {
		sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	}
	return out
}

// LibrariesFrom returns the Env.Libraries function of check name over f:
// it decodes [vendor.NAME] of the check's vendor. A check of no vendor
// has nothing to decode.
func LibrariesFrom(f *config.File, name string) func(v any) error {
	vendor := VendorNone
	if c, ok := Lookup(name); ok {
		vendor = Describe(c).Vendor
	}
	return func(v any) error {
		if vendor == VendorNone {
			return nil
		}
		return f.Decode(VendorSection+"."+string(vendor), v)
	}
}
