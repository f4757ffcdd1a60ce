package acl

/*
#include <stdint.h>
#include <stdlib.h>

typedef int32_t aclnnStatus;
typedef struct aclTensor aclTensor;
typedef struct aclOpExecutor aclOpExecutor;

// aclnn/acl_meta.h: aclCreateTensor(viewDims, viewDimsNum, dataType, stride,
// offset, format, storageDims, storageDimsNum, tensorData).
static aclTensor *vigil_create_tensor(void *f, const int64_t *dims, uint64_t n, int dt, const int64_t *strides,
		int format, uint64_t data) {
	return ((aclTensor *(*)(const int64_t *, uint64_t, int, const int64_t *, int64_t, int, const int64_t *, uint64_t, void *))f)(
		dims, n, dt, strides, 0, format, dims, n, (void *)(uintptr_t)data);
}
static aclnnStatus vigil_destroy_tensor(void *f, aclTensor *t) {
	return ((aclnnStatus (*)(const aclTensor *))f)(t);
}
// aclnnop/aclnn_matmul.h.
static aclnnStatus vigil_matmul_ws(void *f, aclTensor *a, aclTensor *b, aclTensor *out, int8_t math, uint64_t *ws, aclOpExecutor **ex) {
	return ((aclnnStatus (*)(const aclTensor *, const aclTensor *, aclTensor *, int8_t, uint64_t *, aclOpExecutor **))f)(a, b, out, math, ws, ex);
}
static aclnnStatus vigil_matmul(void *f, uint64_t ws, uint64_t size, aclOpExecutor *ex, void *stream) {
	return ((aclnnStatus (*)(void *, uint64_t, aclOpExecutor *, void *))f)((void *)(uintptr_t)ws, size, ex, stream);
}
// aclnnop/aclnn_zero.h.
static aclnnStatus vigil_zero_ws(void *f, aclTensor *self, uint64_t *ws, aclOpExecutor **ex) {
	return ((aclnnStatus (*)(aclTensor *, uint64_t *, aclOpExecutor **))f)(self, ws, ex);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// DataType is aclDataType (acl_base.h).
type DataType int

// Data types used by vigil (enum aclDataType).
const (
	Float   DataType = 0  // ACL_FLOAT
	Float16 DataType = 1  // ACL_FLOAT16
	BF16    DataType = 27 // ACL_BF16
)

// formatND is ACL_FORMAT_ND (enum aclFormat).
const formatND = 2

// CubeMath is the cubeMathType argument of aclnnMatmul: 0 KEEP_DTYPE, 1
// ALLOW_FP32_DOWN_PRECISION, 2 USE_FP16, 3 USE_HF32 (aclnn_matmul.h).
type CubeMath int8

// KeepDType computes in the inputs' type (fp16/bf16 inputs, fp32 accumulation).
const KeepDType CubeMath = 0

// DefaultOpNames are the operator-API libraries: aclCreateTensor lives in
// libnnopbase.so, aclnnMatmul in libopapi.so.
var (
	DefaultNNOpBaseNames = []string{"libnnopbase.so"}
	DefaultOpAPINames    = []string{"libopapi.so"}
)

// Tensor is an aclTensor descriptor.
type Tensor struct{ p *C.aclTensor }

// Executor is an aclOpExecutor from a GetWorkspaceSize call; it is used by
// exactly one operator launch.
type Executor struct{ p *C.aclOpExecutor }

// Ops is the opened operator API.
type Ops struct {
	base, api *dl.Library
	rt        *Lib
	f         struct{ createTensor, destroyTensor, matmulWS, matmul, zeroWS, zero unsafe.Pointer }
}

// OpenOps loads libnnopbase.so and libopapi.so (defaults for empty Names;
// DefaultDirs searched after the given Dirs). rt supplies
// aclGetRecentErrMsg for error texts and may be nil.
func OpenOps(base, api dl.Options, rt *Lib) (*Ops, error) {
	base = base.WithDefaults(DefaultNNOpBaseNames, DefaultDirs)
	api = api.WithDefaults(DefaultOpAPINames, DefaultDirs)
	bl, err := dl.Open(base)
	if err != nil {
		return nil, err
	}
	al, err := dl.Open(api)
	if err != nil {
		bl.Close()
		return nil, err
	}
	o := &Ops{base: bl, api: al, rt: rt}
	err = errors.Join(
		bl.Syms(map[string]*unsafe.Pointer{"aclCreateTensor": &o.f.createTensor, "aclDestroyTensor": &o.f.destroyTensor}),
		al.Syms(map[string]*unsafe.Pointer{"aclnnMatmulGetWorkspaceSize": &o.f.matmulWS, "aclnnMatmul": &o.f.matmul}),
	)
	if err != nil {
		o.Close()
		return nil, err
	}
	o.f.zeroWS, _ = al.Sym("aclnnInplaceZeroGetWorkspaceSize")
	o.f.zero, _ = al.Sym("aclnnInplaceZero")
	return o, nil
}

// Path is the operator library opened (libopapi.so's file).
func (o *Ops) Path() string { return o.api.Path }

// Close unloads the libraries.
func (o *Ops) Close() error { return errors.Join(o.api.Close(), o.base.Close()) }

func (o *Ops) check(op string, r C.aclnnStatus) error {
	var msg func() string
	if o.rt != nil {
		msg = o.rt.RecentErrMsg
	}
	return newError(op, Code(r), msg)
}

// CreateTensor describes a dense row-major ND tensor of the given shape at
// device address data.
func (o *Ops) CreateTensor(dims []int64, dt DataType, data uint64) (Tensor, error) {
	if len(dims) == 0 {
		return Tensor{}, fmt.Errorf("aclCreateTensor: empty shape")
	}
	n := len(dims)
	buf := (*C.int64_t)(C.calloc(C.size_t(2*n), 8))
	defer C.free(unsafe.Pointer(buf))
	s := unsafe.Slice(buf, 2*n)
	stride := int64(1)
	for i := n - 1; i >= 0; i-- {
		s[i] = C.int64_t(dims[i])
		s[n+i] = C.int64_t(stride)
		stride *= dims[i]
	}
	t := C.vigil_create_tensor(o.f.createTensor, &s[0], C.uint64_t(n), C.int(dt), &s[n], formatND, C.uint64_t(data))
	if t == nil {
		return Tensor{}, &Error{Op: "aclCreateTensor", Code: ErrNNParamInvalid, Text: "returned NULL"}
	}
	return Tensor{t}, nil
}

// DestroyTensor frees a descriptor (not its data).
func (o *Ops) DestroyTensor(t Tensor) error {
	return o.check("aclDestroyTensor", C.vigil_destroy_tensor(o.f.destroyTensor, t.p))
}

// MatmulWorkspace is aclnnMatmulGetWorkspaceSize for out = a @ b: the
// workspace bytes and the executor of one launch.
func (o *Ops) MatmulWorkspace(a, b, out Tensor, math CubeMath) (uint64, Executor, error) {
	var ws C.uint64_t
	var ex *C.aclOpExecutor
	err := o.check("aclnnMatmulGetWorkspaceSize", C.vigil_matmul_ws(o.f.matmulWS, a.p, b.p, out.p, C.int8_t(math), &ws, &ex))
	return uint64(ws), Executor{ex}, err
}

// Matmul launches the executor on s with workspace (device address, size).
func (o *Ops) Matmul(workspace, size uint64, ex Executor, s Stream) error {
	return o.check("aclnnMatmul", C.vigil_matmul(o.f.matmul, C.uint64_t(workspace), C.uint64_t(size), ex.p, unsafe.Pointer(s.p)))
}

// ZeroWorkspace is aclnnInplaceZeroGetWorkspaceSize for t = 0: the
// workspace bytes and the executor of one launch. aclnnInplaceZero is
// optional when the operator library is opened; without it this reports
// the symbol missing (dl.ErrSymbol).
func (o *Ops) ZeroWorkspace(t Tensor) (uint64, Executor, error) {
	if o.f.zeroWS == nil || o.f.zero == nil {
		return 0, Executor{}, fmt.Errorf("aclnnInplaceZero in %s: %w", o.api.Path, dl.ErrSymbol)
	}
	var ws C.uint64_t
	var ex *C.aclOpExecutor
	err := o.check("aclnnInplaceZeroGetWorkspaceSize", C.vigil_zero_ws(o.f.zeroWS, t.p, &ws, &ex))
	return uint64(ws), Executor{ex}, err
}

// Zero launches the executor of ZeroWorkspace on s with workspace (device
// address, size; 0, 0 when none was asked for). The launch has the
// prototype of every aclnn second phase, aclnnMatmul's.
func (o *Ops) Zero(workspace, size uint64, ex Executor, s Stream) error {
	return o.check("aclnnInplaceZero", C.vigil_matmul(o.f.zero, C.uint64_t(workspace), C.uint64_t(size), ex.p, unsafe.Pointer(s.p)))
}
