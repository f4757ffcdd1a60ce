package sample

import (
	"errors"
	"testing"
)

// TestParseCPUThrottled: v2's throttled_usec, v1's throttled_time in
// nanoseconds, neither (no cpu controller), and a bad value.
func TestParseCPUThrottled(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		ok   bool
		err  bool
	}{
		{"usage_usec 5\nnr_periods 10\nnr_throttled 4\nthrottled_usec 1234567\n", 1234567, true, false},
		{"nr_periods 10\nnr_throttled 4\nthrottled_time 9876543210\n", 9876543, true, false},
		{"usage_usec 5\nuser_usec 3\nsystem_usec 2\n", 0, false, false},
		{"throttled_usec 12x\n", 0, false, true},
	} {
		v, ok, err := ParseCPUThrottled([]byte(tc.in))
		if v != tc.want || ok != tc.ok || (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrFormat)) {
			t.Errorf("ParseCPUThrottled(%q) = %d, %v, %v; want %d, %v, error %v", tc.in, v, ok, err, tc.want, tc.ok, tc.err)
		}
	}
}
