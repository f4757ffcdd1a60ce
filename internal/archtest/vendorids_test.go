package archtest

import (
	"fmt"
	"go/scanner"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

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
	re := vendorIDs(t)
	eachSourceFile(t, []string{vendorTable}, func(name string, src []byte) {
		for i, line := range strings.Split(string(src), "\n") {
			if m := re.FindString(line); m != "" {
				t.Errorf("%s:%d names PCI vendor id %s: only the vendor table (%s) may; read it from there", name, i+1, m, vendorTable)
			}
		}
	})
}

// eachSourceFile calls fn with the path (from the module's root) and the
// text of each Go file of the tree that is not a test, outside testdata/,
// hidden folders and the folders skip names.
func eachSourceFile(t *testing.T, skip []string, fn func(name string, src []byte)) {
	t.Helper()
	dir := root(t)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name, _ := filepath.Rel(dir, path)
		name = filepath.ToSlash(name)
		if d.IsDir() {
			if b := d.Name(); b == "testdata" || (strings.HasPrefix(b, ".") && path != dir) || slices.Contains(skip, name) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(name, src)
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
	re := regexp.MustCompile(`\bvendors\.Sampler[A-Z]\w*|\bsample\.(?:New)?(?:NVML|DCMI)\b`)
	eachSourceFile(t, []string{vendorTable, samplerHome}, func(name string, src []byte) {
		for i, line := range strings.Split(string(src), "\n") {
			if m := re.FindString(line); m != "" {
				t.Errorf("%s:%d names %s: open the sampler the vendor table's row names (sample.OpenerOf)", name, i+1, m)
			}
		}
	})
}

// TestVendorFactsOnlyInTheTable: what vigil knows of a vendor beyond its
// checks and its sampler is a column of the vendor table, so that a new
// vendor is the three files docs/architecture.md counts. No Go file
// outside internal/vendors names, in code:
//   - a device node of a row ("/dev/davinci", "nvidia%d", "davinci[0-7]",
//     "/dev/nvidia3"; the epilog finds the job's device nodes with
//     vendors.Row.DevNodePath);
//   - a row's PyTorch device type ("cuda") that no other column shares,
//     outside the model checks (benchmarks/model, whose probe asks
//     PyTorch about it), nor anywhere a row's name and its device type on
//     one line (a map from vendors to device types beside the table's);
//   - a row's default reset program ("/usr/bin/nvidia-smi"; the [repair]
//     defaults are the rows' Reset).
//
// Comments and help text may describe the nodes ("/dev/nvidiaN"); tests,
// testdata/ and the test-only packages are fixtures.
func TestVendorFactsOnlyInTheTable(t *testing.T) {
	facts := vendorFacts()
	eachSourceFile(t, append([]string{vendorTable}, testOnly...), func(name string, src []byte) {
		for _, f := range facts.find(name, src) {
			t.Errorf("%s: %s: read it from the vendor table (%s)", name, f, vendorTable)
		}
	})
}

// torchHome is the package that asks PyTorch about its device types.
const torchHome = "benchmarks/model"

// facts are the vendor table's columns that only the table may name.
type facts struct {
	devNode *regexp.Regexp      // a string literal naming a device node
	torch   map[string]string   // PyTorch device type → vendor name
	resets  map[string]string   // reset program → vendor name
	names   map[string]struct{} // the rows' names
}

func vendorFacts() facts {
	f := facts{torch: map[string]string{}, resets: map[string]string{}, names: map[string]struct{}{}}
	shared := map[string]bool{}
	var nodes []string
	for _, r := range vendors.Table {
		f.names[r.Name] = struct{}{}
		shared[r.Name], shared[r.DevNode], shared[r.DevPrefix] = true, true, true
		q := regexp.QuoteMeta(r.DevNode)
		// "/dev/davinci", "/dev/davinci3", "davinci%d", "davinci[0-7]",
		// and "davinci" alone where it is not also the vendor's name.
		nodes = append(nodes, `/dev/`+q+`(?:[0-9%\[]|$)`, `^`+q+`[0-9%\[]`)
		if r.DevNode != r.Name {
			nodes = append(nodes, `^`+q+`$`)
		}
		if len(r.Reset) > 0 {
			f.resets[r.Reset[0]] = r.Name
		}
	}
	for _, r := range vendors.Table {
		if r.TorchDevice != "" && !shared[r.TorchDevice] {
			f.torch[r.TorchDevice] = r.Name
		}
	}
	f.devNode = regexp.MustCompile(strings.Join(nodes, "|"))
	return f
}

// find returns what file name (its source src) names of the facts, as
// "line N names ...".
func (f facts) find(name string, src []byte) []string {
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile(name, -1, len(src)), src, nil, 0)
	var out []string
	lineNames := map[int][]string{} // vendor names per line
	lineTorch := map[int][]string{} // PyTorch device types per line
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok != token.STRING {
			continue
		}
		v, err := strconv.Unquote(lit)
		if err != nil {
			continue
		}
		line := fset.Position(pos).Line
		if m := f.devNode.FindString(v); m != "" {
			out = append(out, fmt.Sprintf("line %d names device node %q (vendors.Row.DevNode, DevNodePath)", line, v))
		}
		if vendor, ok := f.resets[v]; ok {
			out = append(out, fmt.Sprintf("line %d names %s's reset program %q (vendors.Row.Reset)", line, vendor, v))
		}
		if _, ok := f.names[v]; ok {
			lineNames[line] = append(lineNames[line], v)
		}
		if vendor, ok := f.torch[v]; ok {
			lineTorch[line] = append(lineTorch[line], v)
			if !under(name, torchHome) {
				out = append(out, fmt.Sprintf("line %d names %s's PyTorch device type %q (vendors.Row.TorchDevice)", line, vendor, v))
			}
		}
	}
	for line, kinds := range lineTorch {
		if len(lineNames[line]) > 0 {
			out = append(out, fmt.Sprintf("line %d pairs vendor %s with PyTorch device type %s (vendors.Row.TorchDevice)", line, strings.Join(lineNames[line], ", "), strings.Join(kinds, ", ")))
		}
	}
	sort.Strings(out)
	return out
}

// TestVendorFactsFound: the search of TestVendorFactsOnlyInTheTable finds
// what the tree used to hold beside the table, and leaves prose and the
// vendors' names alone.
func TestVendorFactsFound(t *testing.T) {
	f := vendorFacts()
	for _, c := range []struct {
		file, src string
		want      int
	}{
		{"lifecycle/procs.go", `package p; var a = filepath.Join(root, "dev", fmt.Sprintf("nvidia%d", i)), filepath.Join(root, "dev", fmt.Sprintf("davinci%d", i))`, 2},
		{"lifecycle/procs.go", `package p; var a = []string{"/dev/davinci3", "/dev/nvidia", "davinci[0-7]", "davinci"}`, 4},
		{"benchmarks/model/model.go", `package p; var torchDevice = map[string]string{"nvidia": "cuda", "ascend": "npu"}`, 1},
		{"benchmarks/model/model.go", "package p\nvar torchDevice = map[string]string{\n\t\"nvidia\": \"cuda\",\n}", 1},
		{"lifecycle/other.go", `package p; const kind = "cuda"`, 1},
		{"benchmarks/model/model.go", `package p; var ok = kind == "cuda"`, 0},
		{"config/repair.go", `package p; var r = map[string][]string{"nvidia": {"/usr/bin/nvidia-smi", "-r"}, "ascend": {"/usr/local/sbin/npu-smi"}}`, 2},
		{"prolog/main.go", "package p\n// /dev/nvidia0 in a comment\nconst help = `files on /dev/nvidiaN or /dev/davinciN`", 0},
		{"benchmarks/vendor.go", `package p; const VendorNVIDIA = "nvidia"; const npu = "npu"`, 0},
	} {
		got := f.find(c.file, []byte(c.src))
		assert.Len(t, got, c.want, "%s: %s: %v", c.file, c.src, got)
	}
}
