// Package nccl binds the NCCL collectives vigil measures (libnccl.so.2),
// opened at run time with dlopen. Prototypes and enum values follow nccl.h;
// only what vigil uses is declared.
package nccl

/*
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef int ncclResult_t;
typedef void *ncclComm_t;
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct { char internal[NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;

static ncclResult_t vigil_getVersion(void *f, int *v) {
	return ((ncclResult_t (*)(int *))f)(v);
}
static const char *vigil_getErrorString(void *f, ncclResult_t r) {
	return ((const char *(*)(ncclResult_t))f)(r);
}
static ncclResult_t vigil_getUniqueId(void *f, void *id) {
	return ((ncclResult_t (*)(ncclUniqueId *))f)((ncclUniqueId *)id);
}
static ncclResult_t vigil_commInitAll(void *f, ncclComm_t *comms, int n, const int *devs) {
	return ((ncclResult_t (*)(ncclComm_t *, int, const int *))f)(comms, n, devs);
}
static ncclResult_t vigil_commInitRank(void *f, ncclComm_t *comm, int n, const void *id, int rank) {
	ncclUniqueId u;
	memcpy(&u, id, sizeof(u));
	return ((ncclResult_t (*)(ncclComm_t *, int, ncclUniqueId, int))f)(comm, n, u, rank);
}
static ncclResult_t vigil_commOnly(void *f, ncclComm_t c) {
	return ((ncclResult_t (*)(ncclComm_t))f)(c);
}
static ncclResult_t vigil_noArgs(void *f) {
	return ((ncclResult_t (*)(void))f)();
}
static ncclResult_t vigil_allReduce(void *f, uint64_t send, uint64_t recv, size_t count, int dt, int op, ncclComm_t c, void *s) {
	return ((ncclResult_t (*)(const void *, void *, size_t, int, int, ncclComm_t, void *))f)(
		(const void *)(uintptr_t)send, (void *)(uintptr_t)recv, count, dt, op, c, s);
}
static ncclResult_t vigil_allGather(void *f, uint64_t send, uint64_t recv, size_t count, int dt, ncclComm_t c, void *s) {
	return ((ncclResult_t (*)(const void *, void *, size_t, int, ncclComm_t, void *))f)(
		(const void *)(uintptr_t)send, (void *)(uintptr_t)recv, count, dt, c, s);
}
static ncclResult_t vigil_sendRecv(void *f, uint64_t buf, size_t count, int dt, int peer, ncclComm_t c, void *s) {
	return ((ncclResult_t (*)(void *, size_t, int, int, ncclComm_t, void *))f)(
		(void *)(uintptr_t)buf, count, dt, peer, c, s);
}
*/
import "C"

import (
	"unsafe"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// DefaultNames are the NCCL file names tried.
var DefaultNames = []string{"libnccl.so.2", "libnccl.so"}

// DataType is an ncclDataType_t (nccl.h).
type DataType int32

// Data types (nccl.h, enum ncclDataType_t).
const (
	Float32  DataType = 7 // ncclFloat32
	BFloat16 DataType = 9 // ncclBfloat16
)

// RedOp is an ncclRedOp_t (nccl.h).
type RedOp int32

// Reduction operations (nccl.h, enum ncclRedOp_t).
const (
	Sum RedOp = 0 // ncclSum
	Max RedOp = 2 // ncclMax
)

// UniqueID is an ncclUniqueId (NCCL_UNIQUE_ID_BYTES = 128), passed from rank
// 0 to the other processes out of band.
type UniqueID [128]byte

// Comm is an ncclComm_t.
type Comm struct{ p C.ncclComm_t }

// Lib is an opened NCCL.
type Lib struct {
	lib *dl.Library
	f   ncclFuncs
}

// ncclFuncs holds the addresses of the NCCL functions vigil calls.
type ncclFuncs struct {
	getVersion, getErrorString, getUniqueID, commInitAll, commInitRank unsafe.Pointer
	commDestroy, commAbort, groupStart, groupEnd                       unsafe.Pointer
	allReduce, allGather, send, recv                                   unsafe.Pointer
}

// symbols maps the name of every NCCL function vigil calls to the
// field that holds its address.
func (f *ncclFuncs) symbols() map[string]*unsafe.Pointer {
	return map[string]*unsafe.Pointer{
		"ncclGetVersion": &f.getVersion, "ncclGetErrorString": &f.getErrorString,
		"ncclGetUniqueId": &f.getUniqueID, "ncclCommInitAll": &f.commInitAll,
		"ncclCommInitRank": &f.commInitRank, "ncclCommDestroy": &f.commDestroy,
		"ncclCommAbort": &f.commAbort, "ncclGroupStart": &f.groupStart, "ncclGroupEnd": &f.groupEnd,
		"ncclAllReduce": &f.allReduce, "ncclAllGather": &f.allGather,
		"ncclSend": &f.send, "ncclRecv": &f.recv,
	}
}

// Open loads NCCL.
func Open(o dl.Options) (*Lib, error) {
	l := &Lib{}
	lib, err := dl.Load(o, DefaultNames, l.f.symbols())
	if err != nil {
		return nil, err
	}
	l.lib = lib
	return l, nil
}

// Path is the library file that was opened.
func (l *Lib) Path() string { return l.lib.Path }

// Close unloads the library.
func (l *Lib) Close() error { return l.lib.Close() }

func (l *Lib) check(op string, r C.ncclResult_t) error {
	if r == 0 {
		return nil
	}
	return dl.NewError(op, Result(r), nil, func(res Result) string {
		if p := C.vigil_getErrorString(l.f.getErrorString, C.ncclResult_t(res)); p != nil {
			return C.GoString(p)
		}
		return ""
	})
}

// Version is NCCL's version code (21903 for 2.19.3).
func (l *Lib) Version() (int, error) {
	var v C.int
	err := l.check("ncclGetVersion", C.vigil_getVersion(l.f.getVersion, &v))
	return int(v), err
}

// GetUniqueID makes the id rank 0 shares with the other ranks.
func (l *Lib) GetUniqueID() (UniqueID, error) {
	var id UniqueID
	buf := C.calloc(1, C.size_t(len(id)))
	defer C.free(buf)
	err := l.check("ncclGetUniqueId", C.vigil_getUniqueId(l.f.getUniqueID, buf))
	copy(id[:], unsafe.Slice((*byte)(buf), len(id)))
	return id, err
}

// CommInitAll creates one communicator per device for a single process
// driving all of them.
func (l *Lib) CommInitAll(devices []int) ([]Comm, error) {
	n := len(devices)
	comms := (*C.ncclComm_t)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.ncclComm_t(nil)))))
	defer C.free(unsafe.Pointer(comms))
	devs := (*C.int)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(devs))
	ds := unsafe.Slice(devs, n)
	for i, d := range devices {
		ds[i] = C.int(d)
	}
	if err := l.check("ncclCommInitAll", C.vigil_commInitAll(l.f.commInitAll, comms, C.int(n), devs)); err != nil {
		return nil, err
	}
	out := make([]Comm, n)
	for i, c := range unsafe.Slice(comms, n) {
		out[i] = Comm{c}
	}
	return out, nil
}

// CommInitRank joins rank of an nranks communicator identified by id; the
// device is the one current in the calling thread's CUDA context.
func (l *Lib) CommInitRank(nranks int, id UniqueID, rank int) (Comm, error) {
	buf := C.CBytes(id[:])
	defer C.free(buf)
	var c C.ncclComm_t
	err := l.check("ncclCommInitRank", C.vigil_commInitRank(l.f.commInitRank, &c, C.int(nranks), buf, C.int(rank)))
	return Comm{c}, err
}

// CommDestroy frees a communicator after its work has finished.
func (l *Lib) CommDestroy(c Comm) error {
	return l.check("ncclCommDestroy", C.vigil_commOnly(l.f.commDestroy, c.p))
}

// CommAbort frees a communicator, aborting its outstanding work.
func (l *Lib) CommAbort(c Comm) error {
	return l.check("ncclCommAbort", C.vigil_commOnly(l.f.commAbort, c.p))
}

// GroupStart begins a group of calls issued together.
func (l *Lib) GroupStart() error { return l.check("ncclGroupStart", C.vigil_noArgs(l.f.groupStart)) }

// GroupEnd issues the group.
func (l *Lib) GroupEnd() error { return l.check("ncclGroupEnd", C.vigil_noArgs(l.f.groupEnd)) }

// AllReduce queues an all-reduce of count elements on stream (a
// cudaStream_t/CUstream). send and recv are device addresses.
func (l *Lib) AllReduce(send, recv uint64, count int, dt DataType, op RedOp, c Comm, stream unsafe.Pointer) error {
	return l.check("ncclAllReduce", C.vigil_allReduce(l.f.allReduce, C.uint64_t(send), C.uint64_t(recv), C.size_t(count), C.int(dt), C.int(op), c.p, stream))
}

// AllGather queues an all-gather: each rank sends count elements and
// receives nranks×count.
func (l *Lib) AllGather(send, recv uint64, count int, dt DataType, c Comm, stream unsafe.Pointer) error {
	return l.check("ncclAllGather", C.vigil_allGather(l.f.allGather, C.uint64_t(send), C.uint64_t(recv), C.size_t(count), C.int(dt), c.p, stream))
}

// Send queues a send of count elements to peer (inside a group for
// all-to-all).
func (l *Lib) Send(buf uint64, count int, dt DataType, peer int, c Comm, stream unsafe.Pointer) error {
	return l.check("ncclSend", C.vigil_sendRecv(l.f.send, C.uint64_t(buf), C.size_t(count), C.int(dt), C.int(peer), c.p, stream))
}

// Recv queues a receive of count elements from peer.
func (l *Lib) Recv(buf uint64, count int, dt DataType, peer int, c Comm, stream unsafe.Pointer) error {
	return l.check("ncclRecv", C.vigil_sendRecv(l.f.recv, C.uint64_t(buf), C.size_t(count), C.int(dt), C.int(peer), c.p, stream))
}
