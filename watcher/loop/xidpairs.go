package loop

import (
	nvxid "github.com/vigil-hpc/vigil/internal/xid"
	"github.com/vigil-hpc/vigil/watcher/trace"
)

// The two sources of XIDs.
const (
	fromKmsg   = 0 // /dev/kmsg's lines
	fromDevice = 1 // the device library's events (JobLogs.Device)
)

// xidPairs keeps one XID that both /dev/kmsg and the device library
// report from counting twice. The driver logs an XID and delivers its NVML
// event at the same moment; the watcher reads both once a period, so the
// two copies come in the same poll, or in consecutive polls when the XID
// fell between the two reads. A line of one source whose XID and PCI
// address match a line of the other from this poll or the previous one is
// the same event and is dropped; each line pairs with at most one of the
// other source, so a GPU that logs the same XID again still counts every
// time. The first copy read is the one kept (the kernel's own line, when
// both come in one poll). Other lines (uncorrectable ECC, lines without an
// XID) are never paired.
type xidPairs struct {
	poll   int
	unpair [2]map[xidKey][]int // per source: the polls of the lines not paired yet
}

// xidKey is what makes two XID lines the same event.
type xidKey struct {
	pci string // normalised, no function: "0000:3b:00"
	xid int
}

// lineXID is the XID and the PCI address of an XID line (nvxid.Parse, the
// one parser of the driver's line).
func lineXID(line string) (xidKey, bool) {
	e, ok := nvxid.Parse(line)
	if !ok {
		return xidKey{}, false
	}
	return xidKey{pci: e.PCI, xid: e.Code}, true
}

// keepEvent says whether a device event counts: false when it is the copy
// of an XID line /dev/kmsg gave. Events other than XIDs always count.
func (p *xidPairs) keepEvent(e trace.DeviceEvent) bool {
	if e.Kind != trace.DeviceXID {
		return true
	}
	return p.keepKey(fromDevice, xidKey{pci: e.PCI, xid: e.XID})
}

// next starts a poll and forgets the lines older than the previous one.
func (p *xidPairs) next() {
	p.poll++
	for src := range p.unpair {
		for k, polls := range p.unpair[src] {
			i := 0
			for i < len(polls) && polls[i] < p.poll-1 {
				i++
			}
			if i == len(polls) {
				delete(p.unpair[src], k)
			} else {
				p.unpair[src][k] = polls[i:]
			}
		}
	}
}

// keep says whether a line read from src counts: false when it is the
// copy of a line the other source gave.
func (p *xidPairs) keep(src int, line string) bool {
	k, ok := lineXID(line)
	if !ok {
		return true
	}
	return p.keepKey(src, k)
}

// keepKey says whether the XID k read from src counts.
func (p *xidPairs) keepKey(src int, k xidKey) bool {
	if polls := p.unpair[1-src][k]; len(polls) > 0 {
		p.unpair[1-src][k] = polls[1:]
		return false
	}
	if p.unpair[src] == nil {
		p.unpair[src] = map[xidKey][]int{}
	}
	p.unpair[src][k] = append(p.unpair[src][k], p.poll)
	return true
}
