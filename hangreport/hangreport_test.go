package hangreport

import "testing"

func TestReadersAcceptReportsWithAndWithoutDigest(t *testing.T) {
	old := `{"v":1,"event":"hung","job":"7","host":"n2","time":"2026-11-29T10:30:00Z","since":"2026-11-29T10:00:00Z","window":"30m0s","reason":"FlatUsage","flat":["io"],"culprits":[],"actions":["log"]}`
	r, err := ParseReport([]byte(old))
	if err != nil || r.Digest != nil || !r.Blames("n2") || r.Blames("n1") {
		t.Fatalf("old report: %+v %v; want no digest, blaming its own host", r, err)
	}
	withDigest := `{"v":1,"event":"hung","job":"7","host":"n1","time":"2026-11-29T10:30:00Z","since":"2026-11-29T10:00:00Z","window":"30m0s","reason":"network","flat":[],"culprits":["n3"],"actions":["log"],
"digest":{"cause":"network","culprits":[{"host":"n3","reason":"TransportErrors","evidence":{"lines":["NCCL WARN NET/IB ..."]}}],"hint":"...","hosts":["n1","n2","n3"]}}`
	r, err = ParseReport([]byte(withDigest))
	if err != nil || r.Digest == nil || r.Digest.Culprits[0].Reason != "TransportErrors" {
		t.Fatalf("digest report: %+v %v", r, err)
	}
	for node, want := range map[string]bool{"n1": false, "n2": false, "n3": true, "": false} {
		if r.Blames(node) != want {
			t.Errorf("Blames(%q) = %v, want %v (the digest's culprits, not the report's host)", node, !want, want)
		}
	}
	r.Digest.Culprits = nil
	if r.Blames("n1") || r.Blames("n3") {
		t.Errorf("a digest without culprits (cause unknown) blames nobody")
	}
}
