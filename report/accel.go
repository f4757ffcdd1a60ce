package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/vigil-hpc/vigil/benchmarks"
	"github.com/vigil-hpc/vigil/internal/vendors"
)

// evidenceKey is the JSON key of Accelerators.Evidence; every other key of
// the object is a vendor's name.
const evidenceKey = "evidence"

// Accelerators is what the host shows of accelerators, independent of any
// vendor library. In JSON it is one object: a key per vendor of the table,
// its name with its count, in table order and written when zero too
// ("nvidia": 2, "ascend": 0), then "evidence". A new vendor is a new key
// there and a new vendor label of vigil_accelerators, from its row alone.
type Accelerators struct {
	// Count is the number of devices seen per vendor, keyed by the vendor
	// table's name: device nodes or PCI functions, whichever are more.
	Count benchmarks.Hardware
	// Evidence says where they were seen ("/dev/nvidia0", "pci 0000:3b:00.0 nvidia").
	Evidence []string
}

// names are the vendors a's JSON lists: every row of the table, then any
// other vendor a counts (a report of a later vigil read back), sorted.
func (a Accelerators) names() []string {
	var out, extra []string
	for _, r := range vendors.Table {
		out = append(out, r.Name)
	}
	for v := range a.Count {
		if _, ok := vendors.Lookup(string(v)); !ok {
			extra = append(extra, string(v))
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

// MarshalJSON writes a as one object, the vendors' counts in table order
// and then the evidence.
func (a Accelerators) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range a.names() {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(name)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, "%s:%d", k, a.Count[benchmarks.Vendor(name)])
	}
	if len(a.Evidence) > 0 {
		e, err := json.Marshal(a.Evidence)
		if err != nil {
			return nil, err
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", evidenceKey, e)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads what MarshalJSON writes: each key but "evidence" is a
// vendor's count. A zero count is left out of Count (zero and absent mean
// the same), so that a report read back equals the one written.
func (a *Accelerators) UnmarshalJSON(data []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	*a = Accelerators{}
	for k, raw := range m {
		if k == evidenceKey {
			if err := json.Unmarshal(raw, &a.Evidence); err != nil {
				return fmt.Errorf("accelerators: %s: %w", k, err)
			}
			continue
		}
		var n int
		if err := json.Unmarshal(raw, &n); err != nil {
			return fmt.Errorf("accelerators: %s: %w", k, err)
		}
		if n == 0 {
			continue
		}
		if a.Count == nil {
			a.Count = benchmarks.Hardware{}
		}
		a.Count[benchmarks.Vendor(k)] = n
	}
	return nil
}
