// Package cuda binds the parts of the CUDA driver API (libcuda.so.1) that
// vigil's compute checks use: devices, primary contexts, memory, copies,
// streams, events and kernels loaded from PTX text. The library is opened
// with dlopen when Open is called; no CUDA header or toolkit is needed to
// build. Every prototype and constant below follows cuda.h.
//
// The CUDA context is per OS thread: callers lock their goroutine to its
// thread (runtime.LockOSThread) and make a context current before calling
// anything that needs one.
package cuda

/*
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

// Types as declared in cuda.h.
typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef void *CUcontext;
typedef void *CUstream;
typedef void *CUevent;
typedef void *CUmodule;
typedef void *CUfunction;

static CUresult vigil_cuInit(void *f, unsigned int flags) {
	return ((CUresult (*)(unsigned int))f)(flags);
}
static CUresult vigil_cuDriverGetVersion(void *f, int *v) {
	return ((CUresult (*)(int *))f)(v);
}
// cuGetErrorName and cuGetErrorString share this signature.
static CUresult vigil_cuGetErrorName(void *f, CUresult r, const char **s) {
	return ((CUresult (*)(CUresult, const char **))f)(r, s);
}
static CUresult vigil_cuDeviceGetCount(void *f, int *n) {
	return ((CUresult (*)(int *))f)(n);
}
static CUresult vigil_cuDeviceGet(void *f, CUdevice *d, int ordinal) {
	return ((CUresult (*)(CUdevice *, int))f)(d, ordinal);
}
static CUresult vigil_cuDeviceGetName(void *f, char *name, int len, CUdevice d) {
	return ((CUresult (*)(char *, int, CUdevice))f)(name, len, d);
}
static CUresult vigil_cuDeviceGetAttribute(void *f, int *v, int attr, CUdevice d) {
	return ((CUresult (*)(int *, int, CUdevice))f)(v, attr, d);
}
static CUresult vigil_cuDeviceTotalMem(void *f, size_t *bytes, CUdevice d) {
	return ((CUresult (*)(size_t *, CUdevice))f)(bytes, d);
}
static CUresult vigil_cuDeviceGetPCIBusId(void *f, char *id, int len, CUdevice d) {
	return ((CUresult (*)(char *, int, CUdevice))f)(id, len, d);
}
static CUresult vigil_cuDevicePrimaryCtxRetain(void *f, CUcontext *c, CUdevice d) {
	return ((CUresult (*)(CUcontext *, CUdevice))f)(c, d);
}
static CUresult vigil_devOnly(void *f, CUdevice d) {
	return ((CUresult (*)(CUdevice))f)(d);
}
static CUresult vigil_ptrOnly(void *f, void *p) {
	return ((CUresult (*)(void *))f)(p);
}
static CUresult vigil_noArgs(void *f) {
	return ((CUresult (*)(void))f)();
}
static CUresult vigil_cuMemAlloc(void *f, CUdeviceptr *p, size_t n) {
	return ((CUresult (*)(CUdeviceptr *, size_t))f)(p, n);
}
static CUresult vigil_cuMemFree(void *f, CUdeviceptr p) {
	return ((CUresult (*)(CUdeviceptr))f)(p);
}
static CUresult vigil_cuMemHostAlloc(void *f, void **p, size_t n, unsigned int flags) {
	return ((CUresult (*)(void **, size_t, unsigned int))f)(p, n, flags);
}
static CUresult vigil_cuMemcpyHtoD(void *f, CUdeviceptr dst, const void *src, size_t n) {
	return ((CUresult (*)(CUdeviceptr, const void *, size_t))f)(dst, src, n);
}
static CUresult vigil_cuMemcpyDtoH(void *f, void *dst, CUdeviceptr src, size_t n) {
	return ((CUresult (*)(void *, CUdeviceptr, size_t))f)(dst, src, n);
}
static CUresult vigil_cuMemcpyHtoDAsync(void *f, CUdeviceptr dst, const void *src, size_t n, CUstream s) {
	return ((CUresult (*)(CUdeviceptr, const void *, size_t, CUstream))f)(dst, src, n, s);
}
static CUresult vigil_cuMemcpyDtoHAsync(void *f, void *dst, CUdeviceptr src, size_t n, CUstream s) {
	return ((CUresult (*)(void *, CUdeviceptr, size_t, CUstream))f)(dst, src, n, s);
}
static CUresult vigil_cuMemcpyDtoDAsync(void *f, CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
	return ((CUresult (*)(CUdeviceptr, CUdeviceptr, size_t, CUstream))f)(dst, src, n, s);
}
static CUresult vigil_cuMemsetD32Async(void *f, CUdeviceptr dst, unsigned int v, size_t n, CUstream s) {
	return ((CUresult (*)(CUdeviceptr, unsigned int, size_t, CUstream))f)(dst, v, n, s);
}
static CUresult vigil_cuStreamCreate(void *f, CUstream *s, unsigned int flags) {
	return ((CUresult (*)(CUstream *, unsigned int))f)(s, flags);
}
static CUresult vigil_cuEventCreate(void *f, CUevent *e, unsigned int flags) {
	return ((CUresult (*)(CUevent *, unsigned int))f)(e, flags);
}
static CUresult vigil_cuEventRecord(void *f, CUevent e, CUstream s) {
	return ((CUresult (*)(CUevent, CUstream))f)(e, s);
}
static CUresult vigil_cuEventElapsedTime(void *f, float *ms, CUevent a, CUevent b) {
	return ((CUresult (*)(float *, CUevent, CUevent))f)(ms, a, b);
}
static CUresult vigil_cuModuleLoadData(void *f, CUmodule *m, const void *image) {
	return ((CUresult (*)(CUmodule *, const void *))f)(m, image);
}
static CUresult vigil_cuModuleGetFunction(void *f, CUfunction *fn, CUmodule m, const char *name) {
	return ((CUresult (*)(CUfunction *, CUmodule, const char *))f)(fn, m, name);
}
static CUresult vigil_cuLaunchKernel(void *f, CUfunction fn,
		unsigned int gx, unsigned int gy, unsigned int gz,
		unsigned int bx, unsigned int by, unsigned int bz,
		unsigned int shmem, CUstream s, void **params) {
	return ((CUresult (*)(CUfunction, unsigned int, unsigned int, unsigned int,
		unsigned int, unsigned int, unsigned int, unsigned int, CUstream, void **, void **))f)(
		fn, gx, gy, gz, bx, by, bz, shmem, s, params, NULL);
}
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// DefaultNames are the file names tried for the driver library.
var DefaultNames = []string{"libcuda.so.1", "libcuda.so"}

// Device attributes vigil reads (CUdevice_attribute in cuda.h).
const (
	AttrComputeCapabilityMajor = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	AttrComputeCapabilityMinor = 76 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
)

// Flags (cuda.h) and buffer sizes.
const (
	memHostAllocPortable = 0x01 // CU_MEMHOSTALLOC_PORTABLE
	streamNonBlocking    = 0x1  // CU_STREAM_NON_BLOCKING
	eventDefault         = 0x0  // CU_EVENT_DEFAULT
	deviceNameLen        = 256
	pciBusIDLen          = 32
)

// DevicePtr is a device memory address (CUdeviceptr).
type DevicePtr uint64

// Context is a CUcontext.
type Context struct{ p C.CUcontext }

// Stream is a CUstream. The zero Stream is the legacy default stream.
type Stream struct{ p C.CUstream }

// Event is a CUevent.
type Event struct{ p C.CUevent }

// Module is a loaded CUmodule.
type Module struct{ p C.CUmodule }

// Function is a kernel (CUfunction).
type Function struct{ p C.CUfunction }

// Ptr returns the stream handle for passing to other libraries (cuBLAS,
// NCCL), which take a cudaStream_t: the same object as a CUstream.
func (s Stream) Ptr() unsafe.Pointer { return unsafe.Pointer(s.p) }

// HostBuffer is page-locked host memory from cuMemHostAlloc.
type HostBuffer struct {
	p unsafe.Pointer
	n int
}

// Bytes views the buffer as a byte slice; valid until FreeHost.
func (h HostBuffer) Bytes() []byte { return unsafe.Slice((*byte)(h.p), h.n) }

// Ptr is the buffer's address.
func (h HostBuffer) Ptr() unsafe.Pointer { return h.p }

// Driver is an opened libcuda with every symbol vigil uses resolved.
type Driver struct {
	lib *dl.Library
	f   driverFuncs
}

// driverFuncs holds the addresses of the libcuda functions vigil calls.
type driverFuncs struct {
	init, driverGetVersion, getErrorName, getErrorString                       unsafe.Pointer
	deviceGetCount, deviceGet, deviceGetName, deviceGetAttribute               unsafe.Pointer
	deviceTotalMem, deviceGetPCIBusID                                          unsafe.Pointer
	primaryCtxRetain, primaryCtxRelease, ctxSetCurrent, ctxSynchronize         unsafe.Pointer
	memAlloc, memFree, memHostAlloc, memFreeHost                               unsafe.Pointer
	memcpyHtoD, memcpyDtoH, memcpyHtoDAsync, memcpyDtoHAsync, memcpyDtoDAsync  unsafe.Pointer
	memsetD32Async                                                             unsafe.Pointer
	streamCreate, streamSynchronize, streamDestroy                             unsafe.Pointer
	eventCreate, eventRecord, eventSynchronize, eventElapsedTime, eventDestroy unsafe.Pointer
	moduleLoadData, moduleGetFunction, moduleUnload, launchKernel              unsafe.Pointer
}

// symbols maps the name of every libcuda function vigil calls to the field
// that holds its address. Versioned names are the ones cuda.h maps the
// plain names to (cuMemAlloc -> cuMemAlloc_v2).
func (f *driverFuncs) symbols() map[string]*unsafe.Pointer {
	return map[string]*unsafe.Pointer{
		"cuInit": &f.init, "cuDriverGetVersion": &f.driverGetVersion,
		"cuGetErrorName": &f.getErrorName, "cuGetErrorString": &f.getErrorString,
		"cuDeviceGetCount": &f.deviceGetCount, "cuDeviceGet": &f.deviceGet,
		"cuDeviceGetName": &f.deviceGetName, "cuDeviceGetAttribute": &f.deviceGetAttribute,
		"cuDeviceTotalMem_v2": &f.deviceTotalMem, "cuDeviceGetPCIBusId": &f.deviceGetPCIBusID,
		"cuDevicePrimaryCtxRetain": &f.primaryCtxRetain, "cuDevicePrimaryCtxRelease_v2": &f.primaryCtxRelease,
		"cuCtxSetCurrent": &f.ctxSetCurrent, "cuCtxSynchronize": &f.ctxSynchronize,
		"cuMemAlloc_v2": &f.memAlloc, "cuMemFree_v2": &f.memFree,
		"cuMemHostAlloc": &f.memHostAlloc, "cuMemFreeHost": &f.memFreeHost,
		"cuMemcpyHtoD_v2": &f.memcpyHtoD, "cuMemcpyDtoH_v2": &f.memcpyDtoH,
		"cuMemcpyHtoDAsync_v2": &f.memcpyHtoDAsync, "cuMemcpyDtoHAsync_v2": &f.memcpyDtoHAsync,
		"cuMemcpyDtoDAsync_v2": &f.memcpyDtoDAsync, "cuMemsetD32Async": &f.memsetD32Async,
		"cuStreamCreate": &f.streamCreate, "cuStreamSynchronize": &f.streamSynchronize,
		"cuStreamDestroy_v2": &f.streamDestroy,
		"cuEventCreate":      &f.eventCreate, "cuEventRecord": &f.eventRecord,
		"cuEventSynchronize": &f.eventSynchronize, "cuEventElapsedTime": &f.eventElapsedTime,
		"cuEventDestroy_v2": &f.eventDestroy,
		"cuModuleLoadData":  &f.moduleLoadData, "cuModuleGetFunction": &f.moduleGetFunction,
		"cuModuleUnload": &f.moduleUnload, "cuLaunchKernel": &f.launchKernel,
	}
}

// Open loads the driver library, resolves its symbols and calls cuInit(0).
// When CUDA_DEVICE_ORDER is unset it is set to PCI_BUS_ID first, so that
// device ordinals match nvidia-smi and NVML.
func Open(o dl.Options) (*Driver, error) {
	d := &Driver{}
	lib, err := dl.Load(o, DefaultNames, d.f.symbols())
	if err != nil {
		return nil, err
	}
	d.lib = lib
	if os.Getenv("CUDA_DEVICE_ORDER") == "" {
		os.Setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
	}
	if err := d.check("cuInit", C.vigil_cuInit(d.f.init, 0)); err != nil {
		lib.Close()
		return nil, err
	}
	return d, nil
}

// Path is the library file that was opened.
func (d *Driver) Path() string { return d.lib.Path }

// Close unloads the library. Only call it when no context was ever
// created: the driver's threads outlive its contexts and would run code
// that is no longer mapped.
func (d *Driver) Close() error { return d.lib.Close() }

func (d *Driver) check(op string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	return dl.NewError(op, Result(r), d.name, d.text)
}

func (d *Driver) name(r Result) string {
	var s *C.char
	if C.vigil_cuGetErrorName(d.f.getErrorName, C.CUresult(r), &s) != 0 || s == nil {
		return ""
	}
	return C.GoString(s)
}

func (d *Driver) text(r Result) string {
	var s *C.char
	if C.vigil_cuGetErrorName(d.f.getErrorString, C.CUresult(r), &s) != 0 || s == nil {
		return ""
	}
	return C.GoString(s)
}

// Version is the driver's CUDA version (12040 for 12.4).
func (d *Driver) Version() (int, error) {
	var v C.int
	err := d.check("cuDriverGetVersion", C.vigil_cuDriverGetVersion(d.f.driverGetVersion, &v))
	return int(v), err
}

// DeviceCount is the number of visible devices.
func (d *Driver) DeviceCount() (int, error) {
	var n C.int
	err := d.check("cuDeviceGetCount", C.vigil_cuDeviceGetCount(d.f.deviceGetCount, &n))
	return int(n), err
}

// Device is a CUdevice handle for an ordinal.
type Device struct {
	// Ordinal is the device index.
	Ordinal int
	h       C.CUdevice
}

// Device returns the handle of device ordinal i.
func (d *Driver) Device(i int) (Device, error) {
	var h C.CUdevice
	err := d.check("cuDeviceGet", C.vigil_cuDeviceGet(d.f.deviceGet, &h, C.int(i)))
	return Device{Ordinal: i, h: h}, err
}

// Name is the device's product name ("NVIDIA H100 80GB HBM3").
func (d *Driver) Name(dev Device) (string, error) {
	buf := (*C.char)(C.calloc(deviceNameLen, 1))
	defer C.free(unsafe.Pointer(buf))
	if err := d.check("cuDeviceGetName", C.vigil_cuDeviceGetName(d.f.deviceGetName, buf, deviceNameLen, dev.h)); err != nil {
		return "", err
	}
	return strings.TrimSpace(C.GoString(buf)), nil
}

// PCIBusID is the device's PCI address ("0000:18:00.0").
func (d *Driver) PCIBusID(dev Device) (string, error) {
	buf := (*C.char)(C.calloc(pciBusIDLen, 1))
	defer C.free(unsafe.Pointer(buf))
	if err := d.check("cuDeviceGetPCIBusId", C.vigil_cuDeviceGetPCIBusId(d.f.deviceGetPCIBusID, buf, pciBusIDLen, dev.h)); err != nil {
		return "", err
	}
	return C.GoString(buf), nil
}

// Attribute reads a device attribute (Attr... constants).
func (d *Driver) Attribute(dev Device, attr int) (int, error) {
	var v C.int
	err := d.check("cuDeviceGetAttribute", C.vigil_cuDeviceGetAttribute(d.f.deviceGetAttribute, &v, C.int(attr), dev.h))
	return int(v), err
}

// ComputeCapability returns the device's major and minor compute capability.
func (d *Driver) ComputeCapability(dev Device) (int, int, error) {
	maj, err := d.Attribute(dev, AttrComputeCapabilityMajor)
	if err != nil {
		return 0, 0, err
	}
	minor, err := d.Attribute(dev, AttrComputeCapabilityMinor)
	return maj, minor, err
}

// TotalMem is the device memory size in bytes.
func (d *Driver) TotalMem(dev Device) (uint64, error) {
	var n C.size_t
	err := d.check("cuDeviceTotalMem", C.vigil_cuDeviceTotalMem(d.f.deviceTotalMem, &n, dev.h))
	return uint64(n), err
}

// PrimaryCtxRetain retains the device's primary context (the one the CUDA
// runtime, cuBLAS and NCCL use too).
func (d *Driver) PrimaryCtxRetain(dev Device) (Context, error) {
	var c C.CUcontext
	err := d.check("cuDevicePrimaryCtxRetain", C.vigil_cuDevicePrimaryCtxRetain(d.f.primaryCtxRetain, &c, dev.h))
	return Context{c}, err
}

// PrimaryCtxRelease releases a context retained with PrimaryCtxRetain.
func (d *Driver) PrimaryCtxRelease(dev Device) error {
	return d.check("cuDevicePrimaryCtxRelease", C.vigil_devOnly(d.f.primaryCtxRelease, dev.h))
}

// SetCurrent binds c to the calling OS thread.
func (d *Driver) SetCurrent(c Context) error {
	return d.check("cuCtxSetCurrent", C.vigil_ptrOnly(d.f.ctxSetCurrent, unsafe.Pointer(c.p)))
}

// Synchronize waits for all work in the current context.
func (d *Driver) Synchronize() error {
	return d.check("cuCtxSynchronize", C.vigil_noArgs(d.f.ctxSynchronize))
}

// MemAlloc allocates n bytes of device memory.
func (d *Driver) MemAlloc(n int) (DevicePtr, error) {
	var p C.CUdeviceptr
	err := d.check("cuMemAlloc", C.vigil_cuMemAlloc(d.f.memAlloc, &p, C.size_t(n)))
	return DevicePtr(p), err
}

// MemFree frees device memory; freeing 0 does nothing.
func (d *Driver) MemFree(p DevicePtr) error {
	if p == 0 {
		return nil
	}
	return d.check("cuMemFree", C.vigil_cuMemFree(d.f.memFree, C.CUdeviceptr(p)))
}

// MemHostAlloc allocates n bytes of page-locked (pinned) host memory.
func (d *Driver) MemHostAlloc(n int) (HostBuffer, error) {
	var p unsafe.Pointer
	if err := d.check("cuMemHostAlloc", C.vigil_cuMemHostAlloc(d.f.memHostAlloc, &p, C.size_t(n), memHostAllocPortable)); err != nil {
		return HostBuffer{}, err
	}
	return HostBuffer{p: p, n: n}, nil
}

// FreeHost frees memory from MemHostAlloc.
func (d *Driver) FreeHost(h HostBuffer) error {
	if h.p == nil {
		return nil
	}
	return d.check("cuMemFreeHost", C.vigil_ptrOnly(d.f.memFreeHost, h.p))
}

// CopyHtoD copies len(src) bytes from Go memory to the device, synchronously.
func (d *Driver) CopyHtoD(dst DevicePtr, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	return d.check("cuMemcpyHtoD", C.vigil_cuMemcpyHtoD(d.f.memcpyHtoD, C.CUdeviceptr(dst), unsafe.Pointer(&src[0]), C.size_t(len(src))))
}

// CopyDtoH copies len(dst) bytes from the device into Go memory, synchronously.
func (d *Driver) CopyDtoH(dst []byte, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	return d.check("cuMemcpyDtoH", C.vigil_cuMemcpyDtoH(d.f.memcpyDtoH, unsafe.Pointer(&dst[0]), C.CUdeviceptr(src), C.size_t(len(dst))))
}

// CopyHtoDAsync queues a copy of n bytes from pinned host memory.
func (d *Driver) CopyHtoDAsync(dst DevicePtr, src HostBuffer, n int, s Stream) error {
	return d.check("cuMemcpyHtoDAsync", C.vigil_cuMemcpyHtoDAsync(d.f.memcpyHtoDAsync, C.CUdeviceptr(dst), src.p, C.size_t(n), s.p))
}

// CopyDtoHAsync queues a copy of n bytes into pinned host memory.
func (d *Driver) CopyDtoHAsync(dst HostBuffer, src DevicePtr, n int, s Stream) error {
	return d.check("cuMemcpyDtoHAsync", C.vigil_cuMemcpyDtoHAsync(d.f.memcpyDtoHAsync, dst.p, C.CUdeviceptr(src), C.size_t(n), s.p))
}

// CopyDtoDAsync queues a device-to-device copy of n bytes.
func (d *Driver) CopyDtoDAsync(dst, src DevicePtr, n int, s Stream) error {
	return d.check("cuMemcpyDtoDAsync", C.vigil_cuMemcpyDtoDAsync(d.f.memcpyDtoDAsync, C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n), s.p))
}

// MemsetD32Async sets n 32-bit words to v.
func (d *Driver) MemsetD32Async(dst DevicePtr, v uint32, n int, s Stream) error {
	return d.check("cuMemsetD32Async", C.vigil_cuMemsetD32Async(d.f.memsetD32Async, C.CUdeviceptr(dst), C.uint(v), C.size_t(n), s.p))
}

// StreamCreate creates a non-blocking stream in the current context.
func (d *Driver) StreamCreate() (Stream, error) {
	var s C.CUstream
	err := d.check("cuStreamCreate", C.vigil_cuStreamCreate(d.f.streamCreate, &s, streamNonBlocking))
	return Stream{s}, err
}

// StreamSynchronize waits for the stream's work.
func (d *Driver) StreamSynchronize(s Stream) error {
	return d.check("cuStreamSynchronize", C.vigil_ptrOnly(d.f.streamSynchronize, unsafe.Pointer(s.p)))
}

// StreamDestroy destroys a stream.
func (d *Driver) StreamDestroy(s Stream) error {
	if s.p == nil {
		return nil
	}
	return d.check("cuStreamDestroy", C.vigil_ptrOnly(d.f.streamDestroy, unsafe.Pointer(s.p)))
}

// EventCreate creates a timing event.
func (d *Driver) EventCreate() (Event, error) {
	var e C.CUevent
	err := d.check("cuEventCreate", C.vigil_cuEventCreate(d.f.eventCreate, &e, eventDefault))
	return Event{e}, err
}

// EventRecord records e in s.
func (d *Driver) EventRecord(e Event, s Stream) error {
	return d.check("cuEventRecord", C.vigil_cuEventRecord(d.f.eventRecord, e.p, s.p))
}

// EventSynchronize waits for e.
func (d *Driver) EventSynchronize(e Event) error {
	return d.check("cuEventSynchronize", C.vigil_ptrOnly(d.f.eventSynchronize, unsafe.Pointer(e.p)))
}

// ElapsedMs is the time between two recorded events in milliseconds.
func (d *Driver) ElapsedMs(start, end Event) (float64, error) {
	var ms C.float
	err := d.check("cuEventElapsedTime", C.vigil_cuEventElapsedTime(d.f.eventElapsedTime, &ms, start.p, end.p))
	return float64(ms), err
}

// EventDestroy destroys an event.
func (d *Driver) EventDestroy(e Event) error {
	if e.p == nil {
		return nil
	}
	return d.check("cuEventDestroy", C.vigil_ptrOnly(d.f.eventDestroy, unsafe.Pointer(e.p)))
}

// ModuleLoadPTX JIT-compiles PTX text into a module of the current context.
func (d *Driver) ModuleLoadPTX(ptx string) (Module, error) {
	cs := C.CString(ptx)
	defer C.free(unsafe.Pointer(cs))
	var m C.CUmodule
	err := d.check("cuModuleLoadData", C.vigil_cuModuleLoadData(d.f.moduleLoadData, &m, unsafe.Pointer(cs)))
	return Module{m}, err
}

// Function looks a kernel up by its entry name.
func (d *Driver) Function(m Module, name string) (Function, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var f C.CUfunction
	err := d.check("cuModuleGetFunction", C.vigil_cuModuleGetFunction(d.f.moduleGetFunction, &f, m.p, cs))
	return Function{f}, err
}

// ModuleUnload unloads a module.
func (d *Driver) ModuleUnload(m Module) error {
	if m.p == nil {
		return nil
	}
	return d.check("cuModuleUnload", C.vigil_ptrOnly(d.f.moduleUnload, unsafe.Pointer(m.p)))
}

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// Launch queues kernel f. Each argument is a DevicePtr, uint64, uint32,
// int32, int64 or float32, in the order of the kernel's parameters.
func (d *Driver) Launch(f Function, grid, block Dim3, shmem uint32, s Stream, args ...any) error {
	var params *unsafe.Pointer
	if len(args) > 0 {
		// Parameter storage lives in C memory: cgo forbids handing C a Go
		// pointer to memory that holds Go pointers.
		params = (*unsafe.Pointer)(C.calloc(C.size_t(len(args)), C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))))
		defer C.free(unsafe.Pointer(params))
		vals := C.calloc(C.size_t(len(args)), 8)
		defer C.free(vals)
		ps := unsafe.Slice(params, len(args))
		for i, a := range args {
			slot := unsafe.Add(vals, 8*i)
			switch v := a.(type) {
			case DevicePtr:
				*(*uint64)(slot) = uint64(v)
			case uint64:
				*(*uint64)(slot) = v
			case int64:
				*(*int64)(slot) = v
			case uint32:
				*(*uint32)(slot) = v
			case int32:
				*(*int32)(slot) = v
			case float32:
				*(*float32)(slot) = v
			default:
				return fmt.Errorf("cuLaunchKernel: argument %d has unsupported type %T", i, a)
			}
			ps[i] = slot
		}
	}
	return d.check("cuLaunchKernel", C.vigil_cuLaunchKernel(d.f.launchKernel, f.p,
		C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z), C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.uint(shmem), s.p, params))
}
