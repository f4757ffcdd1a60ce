package settings

import (
	"errors"
	"fmt"
	"strings"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/config"
)

// VendorLibraries decodes [vendor.NAME] of f over the shipped library
// search of vendor v: what every check of v opens its libraries with. It
// returns nil for a vendor that declares no library settings.
func VendorLibraries(f *config.File, v benchmarks.Vendor) (any, error) {
	d, ok := benchmarks.LibraryDefaults(v)
	if !ok {
		return nil, nil
	}
	return d, f.Decode(benchmarks.VendorSection+"."+string(v), d)
}

// movedLibraryKeys turns the unknown-key errors of a [checks.NAME] section
// that name a vendor library key (cuda_libraries, library_paths, ...) into
// errors that say where the key went: [vendor.VENDOR], set once for every
// check of the vendor. The check's own vendor is named when it has one.
func movedLibraryKeys(err error, check string) error {
	if err == nil {
		return nil
	}
	moved := benchmarks.LibraryKeys()
	vendor := benchmarks.VendorNone
	if c, ok := benchmarks.Lookup(check); ok {
		vendor = benchmarks.Describe(c).Vendor
	}
	var out []error
	for _, e := range splitErrors(err) {
		var ke *config.KeyError
		if errors.As(e, &ke) && errors.Is(e, config.ErrUnknownKey) {
			key := ke.Key[strings.LastIndex(ke.Key, ".")+1:]
			if vs := moved[key]; len(vs) > 0 {
				to := vs
				for _, v := range vs {
					if v == vendor {
						to = []benchmarks.Vendor{v}
					}
				}
				var where []string
				for _, v := range to {
					where = append(where, fmt.Sprintf("[%s.%s] %s", benchmarks.VendorSection, v, key))
				}
				e = &config.KeyError{File: ke.File, Line: ke.Line, Key: ke.Key, Err: fmt.Errorf(
					"%w: vendor libraries are set once per vendor: move it to %s", config.ErrInvalid, strings.Join(where, " or "))}
			}
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}

// vendorNames are the names [vendor.NAME] takes, for messages.
func vendorNames() string {
	var out []string
	for _, v := range benchmarks.LibraryVendors() {
		out = append(out, string(v))
	}
	return strings.Join(out, ", ")
}
