package sample

import "fmt"

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
