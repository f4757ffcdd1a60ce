// Package hccl binds the Huawei Collective Communication Library
// (libhccl.so) collectives vigil measures, opened at run time with dlopen.
// Prototypes and enum values follow CANN's published headers hccl/hccl.h
// and hccl/hccl_types.h; only what vigil uses is declared. Buffers are
// device addresses (uint64); streams are ACL streams (acl.Stream.Ptr()).
package hccl

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// Trampolines with the prototypes of hccl/hccl.h; HcclResult, HcclComm,
// HcclRootInfo (HCCL_ROOT_INFO_BYTES 4108), HcclDataType and HcclReduceOp
// as hccl/hccl_types.h defines them.
typedef int HcclResult;
typedef void *HcclComm;
#define HCCL_ROOT_INFO_BYTES 4108
typedef struct { char internal[HCCL_ROOT_INFO_BYTES]; } HcclRootInfo;

static const char *vigil_hccl_err(void *f, HcclResult r) { return ((const char *(*)(HcclResult))f)(r); }
static HcclResult vigil_hccl_root_info(void *f, void *info) { return ((HcclResult (*)(HcclRootInfo *))f)((HcclRootInfo *)info); }
static HcclResult vigil_hccl_init_root(void *f, uint32_t n, const void *info, uint32_t rank, HcclComm *c) {
	return ((HcclResult (*)(uint32_t, const HcclRootInfo *, uint32_t, HcclComm *))f)(n, (const HcclRootInfo *)info, rank, c);
}
static HcclResult vigil_hccl_init_all(void *f, uint32_t n, int32_t *devs, HcclComm *comms) {
	return ((HcclResult (*)(uint32_t, int32_t *, HcclComm *))f)(n, devs, comms);
}
static HcclResult vigil_hccl_comm(void *f, HcclComm c) { return ((HcclResult (*)(HcclComm))f)(c); }
static HcclResult vigil_hccl_all_reduce(void *f, uint64_t send, uint64_t recv, uint64_t count, int dt, int op, HcclComm c, void *s) {
	return ((HcclResult (*)(void *, void *, uint64_t, int, int, HcclComm, void *))f)(
		(void *)(uintptr_t)send, (void *)(uintptr_t)recv, count, dt, op, c, s);
}
static HcclResult vigil_hccl_all_gather(void *f, uint64_t send, uint64_t recv, uint64_t count, int dt, HcclComm c, void *s) {
	return ((HcclResult (*)(void *, void *, uint64_t, int, HcclComm, void *))f)(
		(void *)(uintptr_t)send, (void *)(uintptr_t)recv, count, dt, c, s);
}
static HcclResult vigil_hccl_all_to_all(void *f, uint64_t send, uint64_t scount, int sdt, uint64_t recv, uint64_t rcount, int rdt, HcclComm c, void *s) {
	return ((HcclResult (*)(const void *, uint64_t, int, const void *, uint64_t, int, HcclComm, void *))f)(
		(const void *)(uintptr_t)send, scount, sdt, (const void *)(uintptr_t)recv, rcount, rdt, c, s);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// DefaultNames are the HCCL file names tried.
var DefaultNames = []string{"libhccl.so"}

// DefaultDirs are where CANN installs libhccl.so.
var DefaultDirs = dl.CANNDirs

// DataType is HcclDataType (hccl_types.h).
type DataType int

// Data types (enum HcclDataType).
const (
	Int8    DataType = 0  // HCCL_DATA_TYPE_INT8
	Int32   DataType = 2  // HCCL_DATA_TYPE_INT32
	Float16 DataType = 3  // HCCL_DATA_TYPE_FP16
	Float32 DataType = 4  // HCCL_DATA_TYPE_FP32
	BF16    DataType = 11 // HCCL_DATA_TYPE_BFP16
)

// ReduceOp is HcclReduceOp (hccl_types.h).
type ReduceOp int

// Reductions (enum HcclReduceOp).
const (
	Sum  ReduceOp = 0 // HCCL_REDUCE_SUM
	Prod ReduceOp = 1 // HCCL_REDUCE_PROD
	Max  ReduceOp = 2 // HCCL_REDUCE_MAX
	Min  ReduceOp = 3 // HCCL_REDUCE_MIN
)

// RootInfoBytes is HCCL_ROOT_INFO_BYTES (hccl_types.h: 4108).
const RootInfoBytes = 4108

// RootInfo is HcclRootInfo (char internal[HCCL_ROOT_INFO_BYTES]): the root
// rank's host address, port and identifier, made by GetRootInfo on one
// process and passed to every rank's process out of band.
type RootInfo [RootInfoBytes]byte

// Comm is an HcclComm.
type Comm struct{ p C.HcclComm }

// Lib is an opened libhccl.so.
type Lib struct {
	lib *dl.Library
	f   struct {
		errString, rootInfo, initRoot, initAll, destroy unsafe.Pointer
		allReduce, allGather, allToAll                  unsafe.Pointer
	}
}

// Open loads libhccl.so (o.Names defaults to DefaultNames; DefaultDirs are
// searched after o.Dirs). HcclAlltoAll is optional (AllToAll reports it
// missing); everything else vigil calls is required.
func Open(o dl.Options) (*Lib, error) {
	l := &Lib{}
	f := &l.f
	lib, err := dl.Load(o.WithDefaults(nil, DefaultDirs), DefaultNames, map[string]*unsafe.Pointer{
		"HcclGetErrorString": &f.errString, "HcclGetRootInfo": &f.rootInfo,
		"HcclCommInitRootInfo": &f.initRoot, "HcclCommInitAll": &f.initAll, "HcclCommDestroy": &f.destroy,
		"HcclAllReduce": &f.allReduce, "HcclAllGather": &f.allGather,
	})
	if err != nil {
		return nil, err
	}
	l.lib = lib
	f.allToAll, _ = lib.Sym("HcclAlltoAll")
	return l, nil
}

// Path is the library file that was opened.
func (l *Lib) Path() string { return l.lib.Path }

// Close unloads the library.
func (l *Lib) Close() error { return l.lib.Close() }

func (l *Lib) check(op string, r C.HcclResult) error {
	return dl.NewError(op, Result(r), nil, func(res Result) string {
		if p := C.vigil_hccl_err(l.f.errString, C.HcclResult(res)); p != nil {
			return C.GoString(p)
		}
		return ""
	})
}

// GetRootInfo makes the root info of a new communicator
// (HcclGetRootInfo(HcclRootInfo *rootInfo), hccl/hccl.h). It needs a device
// set on the calling thread (aclrtSetDevice). HCCL starts the
// communicator's root (its topology server, listening on the host address
// HCCL_IF_IP or HCCL_SOCKET_IFNAME selects) in the calling process, and
// every rank's CommInitRootInfo connects to it there: the process must stay
// alive until all ranks have joined.
func (l *Lib) GetRootInfo() (RootInfo, error) {
	var info RootInfo
	buf := C.calloc(1, C.size_t(len(info)))
	defer C.free(buf)
	err := l.check("HcclGetRootInfo", C.vigil_hccl_root_info(l.f.rootInfo, buf))
	copy(info[:], unsafe.Slice((*byte)(buf), len(info)))
	return info, err
}

// CommInitRootInfo joins rank of an nranks communicator identified by
// info, on the device current in the calling thread
// (HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo *rootInfo,
// uint32_t rank, HcclComm *comm), hccl/hccl.h). Every rank passes the same
// nranks and info. It returns once all nranks ranks have joined, or fails
// after HCCL_CONNECT_TIMEOUT: a process driving several devices calls it
// from one thread per device at once (CANN allows concurrent calls, one
// thread per device); called one after the other, the first would wait
// for the second for ever. There is no handle to abort until it returns.
func (l *Lib) CommInitRootInfo(nranks int, info RootInfo, rank int) (Comm, error) {
	buf := C.CBytes(info[:])
	defer C.free(buf)
	var c C.HcclComm
	err := l.check("HcclCommInitRootInfo", C.vigil_hccl_init_root(l.f.initRoot, C.uint32_t(nranks), buf, C.uint32_t(rank), &c))
	return Comm{c}, err
}

// CommInitAll creates one communicator per device (logical ids) for a
// single process driving all of them.
func (l *Lib) CommInitAll(devices []int) ([]Comm, error) {
	n := len(devices)
	if n == 0 {
		return nil, fmt.Errorf("HcclCommInitAll: no devices")
	}
	devs := (*C.int32_t)(C.calloc(C.size_t(n), 4))
	defer C.free(unsafe.Pointer(devs))
	comms := (*C.HcclComm)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.HcclComm(nil)))))
	defer C.free(unsafe.Pointer(comms))
	for i, d := range devices {
		unsafe.Slice(devs, n)[i] = C.int32_t(d)
	}
	if err := l.check("HcclCommInitAll", C.vigil_hccl_init_all(l.f.initAll, C.uint32_t(n), devs, comms)); err != nil {
		return nil, err
	}
	out := make([]Comm, n)
	for i, c := range unsafe.Slice(comms, n) {
		out[i] = Comm{c}
	}
	return out, nil
}

// CommDestroy frees a communicator. hccl.h has no abort: CANN documents
// HcclCommDestroy from another thread as what ends a communicator whose
// operators are stuck (they fail at once, "Terminating operation due to
// external request"; a communicator busy in a host call answers
// HCCL_E_AGAIN). A communicator must be destroyed once only.
func (l *Lib) CommDestroy(c Comm) error {
	return l.check("HcclCommDestroy", C.vigil_hccl_comm(l.f.destroy, c.p))
}

// AllReduce queues an all-reduce of count elements on stream.
func (l *Lib) AllReduce(send, recv uint64, count int, dt DataType, op ReduceOp, c Comm, stream unsafe.Pointer) error {
	return l.check("HcclAllReduce", C.vigil_hccl_all_reduce(l.f.allReduce, C.uint64_t(send), C.uint64_t(recv), C.uint64_t(count), C.int(dt), C.int(op), c.p, stream))
}

// AllGather queues an all-gather: each rank sends count elements and
// receives nranks×count.
func (l *Lib) AllGather(send, recv uint64, count int, dt DataType, c Comm, stream unsafe.Pointer) error {
	return l.check("HcclAllGather", C.vigil_hccl_all_gather(l.f.allGather, C.uint64_t(send), C.uint64_t(recv), C.uint64_t(count), C.int(dt), c.p, stream))
}

// AllToAll queues an all-to-all sending count elements to each rank.
func (l *Lib) AllToAll(send, recv uint64, count int, dt DataType, c Comm, stream unsafe.Pointer) error {
	if l.f.allToAll == nil {
		return fmt.Errorf("HcclAlltoAll in %s: %w", l.lib.Path, dl.ErrSymbol)
	}
	return l.check("HcclAlltoAll", C.vigil_hccl_all_to_all(l.f.allToAll, C.uint64_t(send), C.uint64_t(count), C.int(dt), C.uint64_t(recv), C.uint64_t(count), C.int(dt), c.p, stream))
}
