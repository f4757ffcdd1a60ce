package nccl

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/vigil-hpc/vigil/cgo/dl"
	"github.com/vigil-hpc/vigil/cgo/dl/dltest"
)

// TestFakeNCCL calls every wrapper through a fake libnccl.so.2
// (testdata/fakenccl.c) that checks what arrives.
func TestFakeNCCL(t *testing.T) {
	dir := dltest.Build(t, "testdata/fakenccl.c", "libnccl.so.2")
	l, err := Open(dl.Options{Names: DefaultNames, Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := l.Version(); v != 21903 || err != nil {
		t.Errorf("Version = %d, %v", v, err)
	}
	id, err := l.GetUniqueID()
	if err != nil || id[0] != 0 || id[127] != 127 {
		t.Fatalf("GetUniqueID = %v, %v", id[:4], err)
	}
	// The 128-byte id is passed by value to ncclCommInitRank.
	c, err := l.CommInitRank(2, id, 1)
	if err != nil {
		t.Fatalf("CommInitRank: %v", err)
	}
	id[64] ^= 1
	if _, err := l.CommInitRank(2, id, 1); err == nil {
		t.Error("a corrupted id was accepted")
	}
	comms, err := l.CommInitAll([]int{0, 3})
	if err != nil || len(comms) != 2 {
		t.Fatalf("CommInitAll = %v, %v", comms, err)
	}
	_, err = l.CommInitAll([]int{0, -1})
	if err == nil || err.Error() != "ncclCommInitAll: ncclInvalidArgument (4): invalid argument (run with NCCL_DEBUG=WARN for details)" {
		t.Errorf("CommInitAll error = %v", err)
	}
	var stream byte
	s := unsafe.Pointer(&stream)
	if err := l.AllReduce(0x1000, 0x2000, 1024, Float32, Sum, comms[0], s); err != nil {
		t.Errorf("AllReduce: %v", err)
	}
	if err := l.AllReduce(0x1000, 0x2000, 1024, Float32, Max, comms[0], s); err == nil {
		t.Error("the fake wanted ncclSum")
	}
	if err := l.AllGather(0x1000, 0x2000, 256, BFloat16, comms[1], s); err != nil {
		t.Errorf("AllGather: %v", err)
	}
	if err := l.Send(0x1000, 8, Float32, 1, comms[0], s); err == nil || !strings.Contains(err.Error(), "ncclInvalidUsage (5)") {
		t.Errorf("Send outside a group: %v", err)
	}
	if err := l.GroupStart(); err != nil {
		t.Fatal(err)
	}
	if err := l.Send(0x1000, 8, Float32, 1, comms[0], s); err != nil {
		t.Error(err)
	}
	if err := l.Recv(0x2000, 8, Float32, 1, comms[0], s); err != nil {
		t.Error(err)
	}
	if err := l.GroupEnd(); err != nil {
		t.Error(err)
	}
	for _, cm := range append(comms, c) {
		if err := l.CommDestroy(cm); err != nil {
			t.Error(err)
		}
	}
	if err := l.CommAbort(c); err != nil {
		t.Error(err)
	}
}
