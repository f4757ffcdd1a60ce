// Package cublas binds cuBLASLt's matmul API (libcublasLt.so.*), opened at
// run time with dlopen. Prototypes, enum values and struct layouts follow
// cublasLt.h, cublas_api.h and library_types.h; only what vigil uses is
// declared.
//
// There is no fallback to the classic cuBLAS API: libcublas.so links
// libcublasLt.so of the same version, so a node that lacks cuBLASLt lacks
// cuBLAS too.
package cublas

/*
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>

typedef int cublasStatus_t;
typedef void *cublasLtHandle_t;
typedef void *cublasLtMatmulDesc_t;
typedef void *cublasLtMatrixLayout_t;
typedef void *cublasLtMatmulPreference_t;

// cublasLtMatmulAlgo_t and cublasLtMatmulHeuristicResult_t as in cublasLt.h.
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;
typedef struct {
	cublasLtMatmulAlgo_t algo;
	size_t workspaceSize;
	cublasStatus_t state;
	float wavesCount;
	int reserved[4];
} cublasLtMatmulHeuristicResult_t;

static cublasStatus_t vigil_ptrOut(void *f, void **out) {
	return ((cublasStatus_t (*)(void **))f)(out);
}
static cublasStatus_t vigil_ptrIn(void *f, void *p) {
	return ((cublasStatus_t (*)(void *))f)(p);
}
static const char *vigil_statusString(void *f, cublasStatus_t s) {
	return ((const char *(*)(cublasStatus_t))f)(s);
}
static size_t vigil_getVersion(void *f) {
	return ((size_t (*)(void))f)();
}
static cublasStatus_t vigil_descCreate(void *f, void **d, int compute, int scale) {
	return ((cublasStatus_t (*)(void **, int, int))f)(d, compute, scale);
}
static cublasStatus_t vigil_setAttr(void *f, void *d, int attr, const void *buf, size_t n) {
	return ((cublasStatus_t (*)(void *, int, const void *, size_t))f)(d, attr, buf, n);
}
static cublasStatus_t vigil_layoutCreate(void *f, void **l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
	return ((cublasStatus_t (*)(void **, int, uint64_t, uint64_t, int64_t))f)(l, type, rows, cols, ld);
}
static cublasStatus_t vigil_heuristic(void *f, void *h, void *desc, void *a, void *b, void *c, void *d,
		void *pref, int req, cublasLtMatmulHeuristicResult_t *res, int *ret) {
	return ((cublasStatus_t (*)(void *, void *, void *, void *, void *, void *, void *, int,
		cublasLtMatmulHeuristicResult_t *, int *))f)(h, desc, a, b, c, d, pref, req, res, ret);
}
static cublasStatus_t vigil_matmul(void *f, void *h, void *desc, const void *alpha,
		uint64_t A, void *adesc, uint64_t B, void *bdesc, const void *beta,
		uint64_t C, void *cdesc, uint64_t D, void *ddesc,
		const cublasLtMatmulAlgo_t *algo, uint64_t ws, size_t wsSize, void *stream) {
	return ((cublasStatus_t (*)(void *, void *, const void *, const void *, void *, const void *, void *,
		const void *, const void *, void *, void *, void *, const cublasLtMatmulAlgo_t *, void *, size_t, void *))f)(
		h, desc, alpha, (const void *)(uintptr_t)A, adesc, (const void *)(uintptr_t)B, bdesc, beta,
		(const void *)(uintptr_t)C, cdesc, (void *)(uintptr_t)D, ddesc, algo, (void *)(uintptr_t)ws, wsSize, stream);
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/vigil-hpc/vigil/cgo/dl"
)

// DefaultNames are the cuBLASLt file names tried, newest first.
var DefaultNames = []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", "libcublasLt.so"}

// DataType is a cudaDataType_t (library_types.h).
type DataType int32

// Data types used by vigil's GEMMs (library_types.h, enum cudaDataType_t).
const (
	R32F    DataType = 0  // CUDA_R_32F
	R16F    DataType = 2  // CUDA_R_16F
	R16BF   DataType = 14 // CUDA_R_16BF
	R8FE4M3 DataType = 28 // CUDA_R_8F_E4M3
)

// ComputeType is a cublasComputeType_t (cublas_api.h).
type ComputeType int32

// Compute types (cublas_api.h, enum cublasComputeType_t).
const (
	Compute32F         ComputeType = 68 // CUBLAS_COMPUTE_32F
	Compute32FFastTF32 ComputeType = 77 // CUBLAS_COMPUTE_32F_FAST_TF32
)

// Attribute values (cublasLt.h, cublas_api.h).
const (
	descTransA         = 3 // CUBLASLT_MATMUL_DESC_TRANSA
	descTransB         = 4 // CUBLASLT_MATMUL_DESC_TRANSB
	prefMaxWorkspace   = 1 // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
	opN                = 0 // CUBLAS_OP_N
	opT                = 1 // CUBLAS_OP_T
	heuristicRequested = 1
)

// Lib is an opened cuBLASLt.
type Lib struct {
	lib *dl.Library
	f   ltFuncs
}

// ltFuncs holds the addresses of the cuBLASLt functions vigil calls.
type ltFuncs struct {
	create, destroy, getStatusName, getStatusString, getVersion unsafe.Pointer
	descCreate, descDestroy, descSetAttr                        unsafe.Pointer
	layoutCreate, layoutDestroy                                 unsafe.Pointer
	prefCreate, prefDestroy, prefSetAttr, heuristic, matmul     unsafe.Pointer
}

// symbols maps the name of every cuBLASLt function vigil calls to the
// field that holds its address.
func (f *ltFuncs) symbols() map[string]*unsafe.Pointer {
	return map[string]*unsafe.Pointer{
		"cublasLtCreate": &f.create, "cublasLtDestroy": &f.destroy,
		"cublasLtGetStatusName": &f.getStatusName, "cublasLtGetStatusString": &f.getStatusString,
		"cublasLtGetVersion":       &f.getVersion,
		"cublasLtMatmulDescCreate": &f.descCreate, "cublasLtMatmulDescDestroy": &f.descDestroy,
		"cublasLtMatmulDescSetAttribute": &f.descSetAttr,
		"cublasLtMatrixLayoutCreate":     &f.layoutCreate, "cublasLtMatrixLayoutDestroy": &f.layoutDestroy,
		"cublasLtMatmulPreferenceCreate": &f.prefCreate, "cublasLtMatmulPreferenceDestroy": &f.prefDestroy,
		"cublasLtMatmulPreferenceSetAttribute": &f.prefSetAttr,
		"cublasLtMatmulAlgoGetHeuristic":       &f.heuristic, "cublasLtMatmul": &f.matmul,
	}
}

// Open loads cuBLASLt.
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

// Version is cublasLtGetVersion (e.g. 120304 for 12.3.4).
func (l *Lib) Version() int { return int(C.vigil_getVersion(l.f.getVersion)) }

// Close unloads the library.
func (l *Lib) Close() error { return l.lib.Close() }

func (l *Lib) check(op string, s C.cublasStatus_t) error {
	if s == 0 {
		return nil
	}
	str := func(f unsafe.Pointer) func(Status) string {
		return func(st Status) string {
			if p := C.vigil_statusString(f, C.cublasStatus_t(st)); p != nil {
				return C.GoString(p)
			}
			return ""
		}
	}
	return dl.NewError(op, Status(s), str(l.f.getStatusName), str(l.f.getStatusString))
}

// Handle is a cublasLtHandle_t, bound to the context current when created.
type Handle struct{ p unsafe.Pointer }

// Create makes a handle.
func (l *Lib) Create() (Handle, error) {
	var h unsafe.Pointer
	err := l.check("cublasLtCreate", C.vigil_ptrOut(l.f.create, &h))
	return Handle{h}, err
}

// Destroy frees a handle.
func (l *Lib) Destroy(h Handle) error {
	if h.p == nil {
		return nil
	}
	return l.check("cublasLtDestroy", C.vigil_ptrIn(l.f.destroy, h.p))
}

// Spec describes one GEMM: D(m×n) = op(A)·op(B) with A stored k×m
// column-major and transposed (op(A) = Aᵀ, lda = k), B stored k×n
// column-major (ldb = k), and C = D stored m×n column-major (ldd = m). This
// "TN" layout is the one cuBLASLt supports for every input type including FP8.
type Spec struct {
	M, N, K int
	// A and B are the input types, D the output type (also C's type).
	A, B, D DataType
	// Compute and Scale are the accumulation and alpha/beta types.
	Compute ComputeType
	Scale   DataType
	// Workspace is the largest workspace in bytes the algorithm may use.
	Workspace int
}

// Plan is a matmul descriptor, its layouts and a heuristic-chosen algorithm.
type Plan struct {
	l                   *Lib
	h                   Handle
	desc, a, b, c, pref unsafe.Pointer
	algo                *C.cublasLtMatmulHeuristicResult_t
	// WorkspaceNeeded is the chosen algorithm's workspace in bytes.
	WorkspaceNeeded int
	spec            Spec
}

// NewPlan builds descriptors for s and asks the heuristic for the best
// algorithm. Close the plan when done.
func (l *Lib) NewPlan(h Handle, s Spec) (*Plan, error) {
	p := &Plan{l: l, h: h, spec: s}
	ok := false
	defer func() {
		if !ok {
			p.Close()
		}
	}()
	// Out-parameters are locals: a pointer into p would make cgo check all
	// of p, which holds Go pointers.
	var desc, pref unsafe.Pointer
	if err := l.check("cublasLtMatmulDescCreate", C.vigil_descCreate(l.f.descCreate, &desc, C.int(s.Compute), C.int(s.Scale))); err != nil {
		return nil, err
	}
	p.desc = desc
	transA, transB := C.int32_t(opT), C.int32_t(opN)
	if err := l.check("cublasLtMatmulDescSetAttribute(TRANSA)", C.vigil_setAttr(l.f.descSetAttr, p.desc, descTransA, unsafe.Pointer(&transA), 4)); err != nil {
		return nil, err
	}
	if err := l.check("cublasLtMatmulDescSetAttribute(TRANSB)", C.vigil_setAttr(l.f.descSetAttr, p.desc, descTransB, unsafe.Pointer(&transB), 4)); err != nil {
		return nil, err
	}
	for _, ly := range []struct {
		dst        *unsafe.Pointer
		t          DataType
		rows, cols int
	}{{&p.a, s.A, s.K, s.M}, {&p.b, s.B, s.K, s.N}, {&p.c, s.D, s.M, s.N}} {
		var layout unsafe.Pointer
		if err := l.check("cublasLtMatrixLayoutCreate", C.vigil_layoutCreate(l.f.layoutCreate, &layout, C.int(ly.t), C.uint64_t(ly.rows), C.uint64_t(ly.cols), C.int64_t(ly.rows))); err != nil {
			return nil, err
		}
		*ly.dst = layout
	}
	if err := l.check("cublasLtMatmulPreferenceCreate", C.vigil_ptrOut(l.f.prefCreate, &pref)); err != nil {
		return nil, err
	}
	p.pref = pref
	ws := C.uint64_t(s.Workspace)
	if err := l.check("cublasLtMatmulPreferenceSetAttribute", C.vigil_setAttr(l.f.prefSetAttr, p.pref, prefMaxWorkspace, unsafe.Pointer(&ws), 8)); err != nil {
		return nil, err
	}
	p.algo = (*C.cublasLtMatmulHeuristicResult_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.cublasLtMatmulHeuristicResult_t{}))))
	var n C.int
	if err := l.check("cublasLtMatmulAlgoGetHeuristic", C.vigil_heuristic(l.f.heuristic, h.p, p.desc, p.a, p.b, p.c, p.c, p.pref, heuristicRequested, p.algo, &n)); err != nil {
		return nil, err
	}
	if n < 1 || p.algo.state != 0 {
		return nil, fmt.Errorf("cublasLtMatmulAlgoGetHeuristic: no algorithm for %+v: %w", s, ErrNoAlgorithm)
	}
	p.WorkspaceNeeded = int(p.algo.workspaceSize)
	ok = true
	return p, nil
}

// Run queues D = A·B (alpha 1, beta 0) on stream (a CUstream/cudaStream_t).
// a, b, d and workspace are device addresses.
func (p *Plan) Run(a, b, d, workspace uint64, wsBytes int, stream unsafe.Pointer) error {
	alpha := (*C.float)(C.malloc(8))
	defer C.free(unsafe.Pointer(alpha))
	beta := (*C.float)(unsafe.Add(unsafe.Pointer(alpha), 4))
	*alpha, *beta = 1, 0
	return p.l.check("cublasLtMatmul", C.vigil_matmul(p.l.f.matmul, p.h.p, p.desc, unsafe.Pointer(alpha),
		C.uint64_t(a), p.a, C.uint64_t(b), p.b, unsafe.Pointer(beta), C.uint64_t(d), p.c, C.uint64_t(d), p.c,
		&p.algo.algo, C.uint64_t(workspace), C.size_t(wsBytes), stream))
}

// Close frees the plan's descriptors.
func (p *Plan) Close() {
	l := p.l
	for _, d := range []struct {
		f unsafe.Pointer
		p *unsafe.Pointer
	}{{l.f.descDestroy, &p.desc}, {l.f.layoutDestroy, &p.a}, {l.f.layoutDestroy, &p.b}, {l.f.layoutDestroy, &p.c}, {l.f.prefDestroy, &p.pref}} {
		if *d.p != nil {
			C.vigil_ptrIn(d.f, *d.p)
			*d.p = nil
		}
	}
	if p.algo != nil {
		C.free(unsafe.Pointer(p.algo))
		p.algo = nil
	}
}
