package archtest

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vigil-hpc/vigil/internal/vendors"
)

// vendorTable is the package whose table alone names PCI vendor ids.
const vendorTable = "internal/vendors"

// vendorIDs matches any PCI vendor id of the vendor table as code or a
// comment would spell it: "0x10de", "10de", "0X10DE".
func vendorIDs(t *testing.T) *regexp.Regexp {
	t.Helper()
	var alts []string
	for _, r := range vendors.Table {
		for _, id := range r.PCIVendors {
			alts = append(alts, regexp.QuoteMeta(strings.TrimPrefix(strings.ToLower(id), "0x")))
		}
	}
	if len(alts) == 0 {
		t.Fatal("the vendor table names no PCI vendor id")
	}
	return regexp.MustCompile(`(?i)\b(?:0x)?(?:` + strings.Join(alts, "|") + `)\b`)
}

// TestVendorIDsOnlyInTheTable: no Go file outside the vendor table's
// package names a PCI vendor id, in code or in a comment, so that the
// prolog's vendor selection, the device-count checks and the watcher's
// sampler choice cannot disagree on which devices are whose. Tests and
// testdata/ are fixtures (fake sysfs trees, expected messages) and spell
// the ids as the kernel writes them.
func TestVendorIDsOnlyInTheTable(t *testing.T) {
	dir := root(t)
	re := vendorIDs(t)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if b := d.Name(); b == "testdata" || (strings.HasPrefix(b, ".") && path != dir) || filepath.ToSlash(name) == vendorTable {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := re.FindString(line); m != "" {
				t.Errorf("%s:%d names PCI vendor id %s: only the vendor table (%s) may; read it from there", name, i+1, m, vendorTable)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// samplerHome is the package whose files register the samplers' openers.
const samplerHome = "watcher/sample"

// TestSamplerChoiceIsTableDriven: no Go file outside the vendor table and
// watcher/sample names a sampler (vendors.SamplerNVML, ...) or a vendor's
// sampler type, so that vigil-watch opens the sampler a row names through
// the openers its files register (sample.OpenerOf), and a new vendor's
// sampler is one new file in watcher/sample.
func TestSamplerChoiceIsTableDriven(t *testing.T) {
	dir := root(t)
	re := regexp.MustCompile(`\bvendors\.Sampler[A-Z]\w*|\bsample\.(?:New)?(?:NVML|DCMI)\b`)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if b := d.Name(); b == "testdata" || (strings.HasPrefix(b, ".") && path != dir) ||
				filepath.ToSlash(name) == vendorTable || filepath.ToSlash(name) == samplerHome {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := re.FindString(line); m != "" {
				t.Errorf("%s:%d names %s: open the sampler the vendor table's row names (sample.OpenerOf)", name, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
