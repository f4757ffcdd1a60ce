// Package acl binds the parts of Huawei's Ascend Computing Language that
// vigil measures with, opened at run time with dlopen: the runtime of
// libascendcl.so (devices, contexts, streams, memory, copies, events) and
// the single operators of the operator API vigil runs (aclCreateTensor in
// libnnopbase.so; aclnnMatmul and aclnnInplaceZero in libopapi.so).
//
// Prototypes and constants follow CANN's published headers acl/acl_base.h,
// acl/acl_rt.h, aclnn/acl_meta.h, aclnnop/aclnn_matmul.h and
// aclnnop/aclnn_zero.h; only what vigil uses is declared. Device addresses
// are carried as uint64 so no Go pointer ever points into device memory.
// ACL binds a device to the calling OS thread: callers lock their
// goroutine to its thread (runtime.LockOSThread) around SetDevice and the
// work that follows.
package acl

/*
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

// Trampolines with the prototypes of acl/acl_base.h (aclInit, aclFinalize,
// aclGetRecentErrMsg) and acl/acl_rt.h (the aclrt* runtime): aclError is
// int, handles are pointers, enums are int.
typedef int aclError;
typedef void *aclrtContext;
typedef void *aclrtStream;
typedef void *aclrtEvent;

static aclError vigil_acl_init(void *f) { return ((aclError (*)(const char *))f)(NULL); }
static aclError vigil_acl_void(void *f) { return ((aclError (*)(void))f)(); }
static aclError vigil_acl_int(void *f, int32_t d) { return ((aclError (*)(int32_t))f)(d); }
static aclError vigil_acl_count(void *f, uint32_t *n) { return ((aclError (*)(uint32_t *))f)(n); }
static const char *vigil_acl_str(void *f) { return ((const char *(*)(void))f)(); }
static aclError vigil_acl_create_context(void *f, aclrtContext *c, int32_t d) {
	return ((aclError (*)(aclrtContext *, int32_t))f)(c, d);
}
static aclError vigil_acl_handle(void *f, void *h) { return ((aclError (*)(void *))f)(h); }
static aclError vigil_acl_create(void *f, void **h) { return ((aclError (*)(void **))f)(h); }
static aclError vigil_acl_create_event_flag(void *f, aclrtEvent *e, uint32_t flag) {
	return ((aclError (*)(aclrtEvent *, uint32_t))f)(e, flag);
}
static aclError vigil_acl_malloc(void *f, uint64_t *p, size_t n, int policy) {
	void *q = NULL;
	aclError r = ((aclError (*)(void **, size_t, int))f)(&q, n, policy);
	*p = (uint64_t)(uintptr_t)q;
	return r;
}
static aclError vigil_acl_malloc_host(void *f, uint64_t *p, size_t n) {
	void *q = NULL;
	aclError r = ((aclError (*)(void **, size_t))f)(&q, n);
	*p = (uint64_t)(uintptr_t)q;
	return r;
}
static aclError vigil_acl_free(void *f, uint64_t p) { return ((aclError (*)(void *))f)((void *)(uintptr_t)p); }
static aclError vigil_acl_memcpy(void *f, uint64_t dst, size_t max, uint64_t src, size_t n, int kind) {
	return ((aclError (*)(void *, size_t, const void *, size_t, int))f)(
		(void *)(uintptr_t)dst, max, (const void *)(uintptr_t)src, n, kind);
}
static aclError vigil_acl_memcpy_async(void *f, uint64_t dst, size_t max, uint64_t src, size_t n, int kind, aclrtStream s) {
	return ((aclError (*)(void *, size_t, const void *, size_t, int, aclrtStream))f)(
		(void *)(uintptr_t)dst, max, (const void *)(uintptr_t)src, n, kind, s);
}
static aclError vigil_acl_record(void *f, aclrtEvent e, aclrtStream s) {
	return ((aclError (*)(aclrtEvent, aclrtStream))f)(e, s);
}
static aclError vigil_acl_elapsed(void *f, float *ms, aclrtEvent a, aclrtEvent b) {
	return ((aclError (*)(float *, aclrtEvent, aclrtEvent))f)(ms, a, b);
}
*/
import "C"

import (
	"unsafe"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// DefaultNames are the ACL runtime file names tried.
var DefaultNames = []string{"libascendcl.so"}

// DefaultDirs are where CANN installs its libraries (dl.CANNDirs) and the
// driver's runtime.
var DefaultDirs = append(append([]string(nil), dl.CANNDirs...),
	"/usr/local/Ascend/driver/lib64/driver",
	"/usr/local/Ascend/driver/lib64/common")

// MemcpyKind is aclrtMemcpyKind (acl_rt.h).
type MemcpyKind int

// Copy directions (enum aclrtMemcpyKind).
const (
	HostToHost     MemcpyKind = 0 // ACL_MEMCPY_HOST_TO_HOST
	HostToDevice   MemcpyKind = 1 // ACL_MEMCPY_HOST_TO_DEVICE
	DeviceToHost   MemcpyKind = 2 // ACL_MEMCPY_DEVICE_TO_HOST
	DeviceToDevice MemcpyKind = 3 // ACL_MEMCPY_DEVICE_TO_DEVICE
)

// mallocHugeFirst is ACL_MEM_MALLOC_HUGE_FIRST (enum aclrtMemMallocPolicy).
const mallocHugeFirst = 0

// eventTimeLine is ACL_EVENT_TIME_LINE (acl_rt.h): the event records a
// timestamp, as aclrtEventElapsedTime needs.
const eventTimeLine = 0x00000008

// Context, Stream and Event are aclrtContext, aclrtStream and aclrtEvent.
type (
	Context struct{ p C.aclrtContext }
	Stream  struct{ p C.aclrtStream }
	Event   struct{ p C.aclrtEvent }
)

// Ptr returns the stream handle for other libraries (HCCL's aclrtStream).
func (s Stream) Ptr() unsafe.Pointer { return unsafe.Pointer(s.p) }

// Lib is an opened libascendcl.so.
type Lib struct {
	lib *dl.Library
	f   struct {
		init, finalize, setDevice, resetDevice, deviceCount                unsafe.Pointer
		createContext, destroyContext, setCurrentContext                   unsafe.Pointer
		createStream, destroyStream, syncStream                            unsafe.Pointer
		malloc, free, mallocHost, freeHost, memcpy, memcpyAsync            unsafe.Pointer
		createEvent, createEventFlag, destroyEvent, recordEvent, syncEvent unsafe.Pointer
		elapsed, recentErrMsg, socName                                     unsafe.Pointer
	}
}

// Open loads libascendcl.so (o.Names defaults to DefaultNames; DefaultDirs
// are searched after o.Dirs). Every function vigil calls is looked up; a
// missing one is an error naming it. aclrtCreateEventWithFlag and
// aclrtGetSocName are optional.
func Open(o dl.Options) (*Lib, error) {
	l := &Lib{}
	f := &l.f
	lib, err := dl.Load(o.WithDefaults(nil, DefaultDirs), DefaultNames, map[string]*unsafe.Pointer{
		"aclInit": &f.init, "aclFinalize": &f.finalize,
		"aclrtSetDevice": &f.setDevice, "aclrtResetDevice": &f.resetDevice, "aclrtGetDeviceCount": &f.deviceCount,
		"aclrtCreateContext": &f.createContext, "aclrtDestroyContext": &f.destroyContext, "aclrtSetCurrentContext": &f.setCurrentContext,
		"aclrtCreateStream": &f.createStream, "aclrtDestroyStream": &f.destroyStream, "aclrtSynchronizeStream": &f.syncStream,
		"aclrtMalloc": &f.malloc, "aclrtFree": &f.free, "aclrtMallocHost": &f.mallocHost, "aclrtFreeHost": &f.freeHost,
		"aclrtMemcpy": &f.memcpy, "aclrtMemcpyAsync": &f.memcpyAsync,
		"aclrtCreateEvent": &f.createEvent, "aclrtDestroyEvent": &f.destroyEvent, "aclrtRecordEvent": &f.recordEvent,
		"aclrtSynchronizeEvent": &f.syncEvent, "aclrtEventElapsedTime": &f.elapsed,
		"aclGetRecentErrMsg": &f.recentErrMsg,
	})
	if err != nil {
		return nil, err
	}
	l.lib = lib
	f.createEventFlag, _ = lib.Sym("aclrtCreateEventWithFlag")
	f.socName, _ = lib.Sym("aclrtGetSocName")
	return l, nil
}

// Path is the library file that was opened.
func (l *Lib) Path() string { return l.lib.Path }

// Close unloads the library.
func (l *Lib) Close() error { return l.lib.Close() }

// RecentErrMsg is aclGetRecentErrMsg: the calling thread's last error text.
func (l *Lib) RecentErrMsg() string {
	if p := C.vigil_acl_str(l.f.recentErrMsg); p != nil {
		return C.GoString(p)
	}
	return ""
}

func (l *Lib) check(op string, r C.aclError) error {
	return newError(op, Code(r), l.RecentErrMsg)
}

// Init is aclInit(NULL). A repeated initialisation is not an error.
func (l *Lib) Init() error {
	r := C.vigil_acl_init(l.f.init)
	if Code(r) == ErrRepeatInitialize {
		return nil
	}
	return l.check("aclInit", r)
}

// Finalize is aclFinalize.
func (l *Lib) Finalize() error { return l.check("aclFinalize", C.vigil_acl_void(l.f.finalize)) }

// DeviceCount is aclrtGetDeviceCount.
func (l *Lib) DeviceCount() (int, error) {
	var n C.uint32_t
	err := l.check("aclrtGetDeviceCount", C.vigil_acl_count(l.f.deviceCount, &n))
	return int(n), err
}

// SocName is aclrtGetSocName ("Ascend910B3"), or "" when unavailable.
func (l *Lib) SocName() string {
	if l.f.socName == nil {
		return ""
	}
	if p := C.vigil_acl_str(l.f.socName); p != nil {
		return C.GoString(p)
	}
	return ""
}

// SetDevice binds device d (a logical id) to the calling thread.
func (l *Lib) SetDevice(d int) error {
	return l.check("aclrtSetDevice", C.vigil_acl_int(l.f.setDevice, C.int32_t(d)))
}

// ResetDevice releases device d's resources of this process.
func (l *Lib) ResetDevice(d int) error {
	return l.check("aclrtResetDevice", C.vigil_acl_int(l.f.resetDevice, C.int32_t(d)))
}

// CreateContext creates a context on device d and makes it current.
func (l *Lib) CreateContext(d int) (Context, error) {
	var c C.aclrtContext
	err := l.check("aclrtCreateContext", C.vigil_acl_create_context(l.f.createContext, &c, C.int32_t(d)))
	return Context{c}, err
}

// DestroyContext destroys a context.
func (l *Lib) DestroyContext(c Context) error {
	return l.check("aclrtDestroyContext", C.vigil_acl_handle(l.f.destroyContext, unsafe.Pointer(c.p)))
}

// SetCurrentContext makes c the calling thread's context.
func (l *Lib) SetCurrentContext(c Context) error {
	return l.check("aclrtSetCurrentContext", C.vigil_acl_handle(l.f.setCurrentContext, unsafe.Pointer(c.p)))
}

// CreateStream creates a stream on the current device.
func (l *Lib) CreateStream() (Stream, error) {
	var s unsafe.Pointer
	err := l.check("aclrtCreateStream", C.vigil_acl_create(l.f.createStream, &s))
	return Stream{C.aclrtStream(s)}, err
}

// DestroyStream destroys a stream.
func (l *Lib) DestroyStream(s Stream) error {
	return l.check("aclrtDestroyStream", C.vigil_acl_handle(l.f.destroyStream, unsafe.Pointer(s.p)))
}

// SynchronizeStream waits for the stream's work.
func (l *Lib) SynchronizeStream(s Stream) error {
	return l.check("aclrtSynchronizeStream", C.vigil_acl_handle(l.f.syncStream, unsafe.Pointer(s.p)))
}

// Malloc allocates n bytes of device memory (ACL_MEM_MALLOC_HUGE_FIRST).
func (l *Lib) Malloc(n int) (uint64, error) {
	var p C.uint64_t
	err := l.check("aclrtMalloc", C.vigil_acl_malloc(l.f.malloc, &p, C.size_t(n), mallocHugeFirst))
	return uint64(p), err
}

// Free frees device memory.
func (l *Lib) Free(p uint64) error {
	return l.check("aclrtFree", C.vigil_acl_free(l.f.free, C.uint64_t(p)))
}

// MallocHost allocates n bytes of page-locked host memory. View it with
// HostBytes; free it with FreeHost.
func (l *Lib) MallocHost(n int) (uint64, error) {
	var p C.uint64_t
	err := l.check("aclrtMallocHost", C.vigil_acl_malloc_host(l.f.mallocHost, &p, C.size_t(n)))
	return uint64(p), err
}

// FreeHost frees page-locked host memory.
func (l *Lib) FreeHost(p uint64) error {
	return l.check("aclrtFreeHost", C.vigil_acl_free(l.f.freeHost, C.uint64_t(p)))
}

// HostBytes views n bytes of host memory allocated by MallocHost (or
// C.malloc) at p. The slice is valid until the memory is freed.
func HostBytes(p uint64, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(nil), uintptr(p))), n)
}

// Memcpy copies n bytes synchronously; dst and src are host or device
// addresses as kind says (host addresses from MallocHost).
func (l *Lib) Memcpy(dst, src uint64, n int, kind MemcpyKind) error {
	return l.check("aclrtMemcpy", C.vigil_acl_memcpy(l.f.memcpy, C.uint64_t(dst), C.size_t(n), C.uint64_t(src), C.size_t(n), C.int(kind)))
}

// MemcpyAsync queues a copy of n bytes on s.
func (l *Lib) MemcpyAsync(dst, src uint64, n int, kind MemcpyKind, s Stream) error {
	return l.check("aclrtMemcpyAsync", C.vigil_acl_memcpy_async(l.f.memcpyAsync, C.uint64_t(dst), C.size_t(n), C.uint64_t(src), C.size_t(n), C.int(kind), s.p))
}

// CreateEvent creates an event that records timestamps
// (aclrtCreateEventWithFlag with ACL_EVENT_TIME_LINE where the runtime has
// it, aclrtCreateEvent otherwise).
func (l *Lib) CreateEvent() (Event, error) {
	var e C.aclrtEvent
	if l.f.createEventFlag != nil {
		err := l.check("aclrtCreateEventWithFlag", C.vigil_acl_create_event_flag(l.f.createEventFlag, &e, eventTimeLine))
		return Event{e}, err
	}
	var p unsafe.Pointer
	err := l.check("aclrtCreateEvent", C.vigil_acl_create(l.f.createEvent, &p))
	return Event{C.aclrtEvent(p)}, err
}

// DestroyEvent destroys an event.
func (l *Lib) DestroyEvent(e Event) error {
	return l.check("aclrtDestroyEvent", C.vigil_acl_handle(l.f.destroyEvent, unsafe.Pointer(e.p)))
}

// RecordEvent records e on s.
func (l *Lib) RecordEvent(e Event, s Stream) error {
	return l.check("aclrtRecordEvent", C.vigil_acl_record(l.f.recordEvent, e.p, s.p))
}

// SynchronizeEvent waits for e.
func (l *Lib) SynchronizeEvent(e Event) error {
	return l.check("aclrtSynchronizeEvent", C.vigil_acl_handle(l.f.syncEvent, unsafe.Pointer(e.p)))
}

// ElapsedMs is aclrtEventElapsedTime: milliseconds between two recorded events.
func (l *Lib) ElapsedMs(start, end Event) (float64, error) {
	var ms C.float
	err := l.check("aclrtEventElapsedTime", C.vigil_acl_elapsed(l.f.elapsed, &ms, start.p, end.p))
	return float64(ms), err
}
