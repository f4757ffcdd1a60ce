package slurm

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestClientNodes(t *testing.T) {
	c, f := newClient(reply{out: string(readTestdata(t, "nodes-3.txt"))})
	nodes, err := c.Nodes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{bin + "/scontrol", "show", "node", "-o"}
	if !reflect.DeepEqual(f.calls, [][]string{want}) {
		t.Fatalf("argv %q, want %q", f.calls, want)
	}
	if len(nodes) < 3 {
		t.Fatalf("%d nodes", len(nodes))
	}
	n := nodes[1]
	wantTime := time.Date(2026, 11, 29, 15, 10, 16, 0, time.Local)
	if n.Name != "cn2" || !n.OwnedByVigil() || !n.ReasonTime.Equal(wantTime) {
		t.Errorf("cn2: %+v, want a vigil reason set at %v", n, wantTime)
	}
}

func TestClientNodesErrors(t *testing.T) {
	c, _ := newClient(reply{out: ""})
	if _, err := c.Nodes(context.Background()); err == nil {
		t.Error("empty output: no error")
	}
	c, _ = newClient(reply{err: errors.New("exit status 1")})
	if _, err := c.Nodes(context.Background()); err == nil {
		t.Error("failing scontrol: no error")
	}
}

func TestSetNodeComment(t *testing.T) {
	c, f := newClient(reply{})
	if err := c.SetNodeComment(context.Background(), "cn1", "vigil-guard: gemm \"x\"\n"); err != nil {
		t.Fatal(err)
	}
	want := []string{bin + "/scontrol", "update", "NodeName=cn1", "Comment=vigil-guard: gemm 'x' "}
	if !reflect.DeepEqual(f.calls, [][]string{want}) {
		t.Fatalf("argv %q, want %q", f.calls, want)
	}
	if err := c.SetNodeComment(context.Background(), "cn[1-2]", "x"); !errors.Is(err, ErrBadName) {
		t.Errorf("hostlist: %v, want ErrBadName", err)
	}
	n := Node{Fields: map[string]string{"Comment": "(null)"}}
	if n.Comment() != "" {
		t.Errorf("(null) comment read as %q", n.Comment())
	}
}
