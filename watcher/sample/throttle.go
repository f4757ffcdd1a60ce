package sample

import (
	"fmt"
	"path/filepath"
)

// ParseCPUThrottled returns the time a cgroup was held back by its CPU
// quota, in microseconds, from its cpu.stat: v2 "throttled_usec", v1
// "throttled_time" (nanoseconds). ok is false when the file has neither (a
// v2 cgroup without the cpu controller, a v1 cpuacct-only one).
func ParseCPUThrottled(b []byte) (usec uint64, ok bool, err error) {
	v, ok, err := keyValue(b, "throttled_usec", ' ')
	if err == nil && !ok {
		v, ok, err = keyValue(b, "throttled_time", ' ')
		v /= 1000
	}
	if err != nil {
		return 0, false, fmt.Errorf("cpu.stat: %w", err)
	}
	return v, ok, nil
}

// cpuThrottled sums the time the job's cgroups were held back by their CPU
// quota (ParseCPUThrottled), microseconds; 0 when none says: the straggler
// rule reads its growth, and a cgroup without a quota never grows it.
func (s *Sampler) cpuThrottled() uint64 {
	var sum uint64
	for _, d := range s.topCgroups() {
		b, err := s.readFile(filepath.Join(d, "cpu.stat"))
		if err != nil {
			continue
		}
		if v, ok, err := ParseCPUThrottled(b); err == nil && ok {
			sum += v
		}
	}
	return sum
}
