package settings

import "testing"

func TestNumberedToken(t *testing.T) {
	for key, want := range map[string]bool{"XID79": true, "XID": false, "XIDx": false, "XID79a": false, "xid79": false} {
		if got := numberedToken("XID<code>", key); got != want {
			t.Errorf("numberedToken(XID<code>, %q) = %v, want %v", key, got, want)
		}
	}
	if numberedToken("GEMMBelowThreshold", "GEMMBelowThreshold") {
		t.Error("a plain token is no family")
	}
}
