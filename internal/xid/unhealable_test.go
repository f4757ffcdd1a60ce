package xid

import "testing"

// TestUnhealable pins which XIDs no job recovers from, as NVIDIA's
// immediate actions give them: a device gone or needing a reset (RESET_GPU,
// RESTART_BM, the NVLink workflow). 94, a contained ECC error, is
// RESTART_APP: the GPU goes on, so it waits for its confirmation like 13.
func TestUnhealable(t *testing.T) {
	var got []int
	for _, i := range Catalogue() {
		if i.Unhealable() {
			got = append(got, i.Code)
		}
	}
	want := []int{46, 48, 62, 64, 74, 79, 95, 119, 120, 136, 140, 143, 144, 145, 146, 147, 148, 149, 150, 151, 155, 156}
	if len(got) != len(want) {
		t.Fatalf("unhealable codes %v\nwant               %v", got, want)
	}
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("unhealable codes %v\nwant               %v", got, want)
		}
	}
	for _, c := range []struct {
		name string
		ev   Event
		want bool
	}{
		{"79 fallen off the bus", Event{Code: 79, Text: "GPU has fallen off the bus."}, true},
		{"74 NVLink error", Event{Code: 74, Text: "NVLINK: fatal error"}, true},
		{"95 uncontained ECC", Event{Code: 95}, true},
		{"119 GSP RPC timeout", Event{Code: 119}, true},
		{"154 reset required", Event{Code: 154, Text: "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)"}, true},
		{"154 node reboot", Event{Code: 154, Text: "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"}, true},
		{"154 back to none", Event{Code: 154, Text: "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)"}, false},
		{"154 without its words (an NVML event)", Event{Code: 154}, false},
		{"94 contained ECC", Event{Code: 94}, false},
		{"13 graphics exception", Event{Code: 13}, false},
		{"31 page fault", Event{Code: 31}, false},
		{"45 after 79", Event{Code: 45, Previous: 79}, true},
		{"45 after 13", Event{Code: 45, Previous: 13}, false},
		{"145 nonfatal", Event{Code: 145, Text: "RLW_SRC_TRACK Nonfatal XC1 i0 Link 17 (0x04084507 0x0)"}, false},
		{"not in the catalogue", Event{Code: 999}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.ev.Unhealable(); got != c.want {
				t.Errorf("Unhealable(%+v) = %v, want %v (remedy %q)", c.ev, got, c.want, c.ev.Remedy())
			}
		})
	}
}
