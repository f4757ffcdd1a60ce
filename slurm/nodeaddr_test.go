package slurm

import (
	"context"
	"reflect"
	"testing"
)

func TestNodeAddrsOneCall(t *testing.T) {
	out := "NodeName=n1 Arch=x86_64 NodeAddr=127.0.1.1 NodeHostName=localhost State=IDLE\n" +
		"NodeName=n2 NodeAddr=127.0.1.2 NodeHostName=localhost State=IDLE\n" +
		"NodeName=n3 NodeHostName=h3 State=IDLE\n" +
		"NodeName=n9 NodeAddr=127.0.1.9 State=IDLE\n"
	c, r := newClient(reply{out: out})
	got, err := c.NodeAddrs(context.Background(), []string{"n1", "n2", "n3"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"n1": "127.0.1.1", "n2": "127.0.1.2", "n3": "h3"}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(r.calls, [][]string{showNode("n[1-3]")}) {
		t.Fatalf("got %v after %v, want %v in one call", got, r.calls, want)
	}
	if _, err := c.NodeAddrs(context.Background(), []string{"-x"}); err == nil {
		t.Fatal("a bad name passed")
	}
}

func TestParseConfFile(t *testing.T) {
	cfg := ParseConfFile([]byte("# c\nAuthInfo=socket=/tmp/m/sock # private\nprologflags=Alloc,Contain\n" +
		"NodeName=n1 NodeAddr=1.2.3.4\nPrologFlags = Alloc\n"))
	if v, _ := ConfValue(cfg, "AuthInfo"); AuthSocket(v) != "/tmp/m/sock" {
		t.Errorf("AuthInfo %q", v)
	}
	if v, ok := ConfValue(cfg, "PrologFlags"); !ok || !PrologFlagsAlloc(v) {
		t.Errorf("PrologFlags %q %v", v, ok)
	}
	if _, ok := cfg["NodeName"]; ok {
		t.Error("node line read as a setting")
	}
	for flags, want := range map[string]bool{"": false, "(null)": false, "Contain": true, "X11,alloc": true, "NoHold": false} {
		if PrologFlagsAlloc(flags) != want {
			t.Errorf("PrologFlagsAlloc(%q) != %v", flags, want)
		}
	}
}
