/* A fake libcublasLt for tests: checks the arguments vigil passes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int cublasStatus_t;
typedef struct { uint64_t data[8]; } algo_t;
typedef struct { algo_t algo; size_t workspaceSize; cublasStatus_t state; float wavesCount; int reserved[4]; } heur_t;
typedef struct { int compute, scale, transa, transb; } desc_t;
typedef struct { int type; uint64_t rows, cols; int64_t ld; } layout_t;
typedef struct { uint64_t ws; } pref_t;

cublasStatus_t cublasLtCreate(void **h) { *h = malloc(1); return 0; }
cublasStatus_t cublasLtDestroy(void *h) { free(h); return 0; }
const char *cublasLtGetStatusName(cublasStatus_t s) { return s == 15 ? "CUBLAS_STATUS_NOT_SUPPORTED" : "CUBLAS_STATUS_INVALID_VALUE"; }
const char *cublasLtGetStatusString(cublasStatus_t s) { return s == 15 ? "the functionality requested is not supported" : "an invalid value was used as an argument"; }
size_t cublasLtGetVersion(void) { return 120304; }
cublasStatus_t cublasLtMatmulDescCreate(void **d, int compute, int scale) {
	desc_t *x = calloc(1, sizeof(desc_t));
	x->compute = compute; x->scale = scale;
	*d = x;
	return 0;
}
cublasStatus_t cublasLtMatmulDescDestroy(void *d) { free(d); return 0; }
cublasStatus_t cublasLtMatmulDescSetAttribute(void *d, int attr, const void *buf, size_t n) {
	desc_t *x = d;
	if (n != 4) return 7;
	if (attr == 3) x->transa = *(const int32_t *)buf;
	else if (attr == 4) x->transb = *(const int32_t *)buf;
	else return 7;
	return 0;
}
cublasStatus_t cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
	layout_t *x = malloc(sizeof(layout_t));
	x->type = type; x->rows = rows; x->cols = cols; x->ld = ld;
	*l = x;
	return 0;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(void *l) { free(l); return 0; }
cublasStatus_t cublasLtMatmulPreferenceCreate(void **p) { *p = calloc(1, sizeof(pref_t)); return 0; }
cublasStatus_t cublasLtMatmulPreferenceDestroy(void *p) { free(p); return 0; }
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(void *p, int attr, const void *buf, size_t n) {
	if (attr != 1 || n != 8) return 7;
	((pref_t *)p)->ws = *(const uint64_t *)buf;
	return 0;
}
/* Accepts only the TN layout vigil documents: A k×m (ld k) transposed,
 * B k×n (ld k), C = D m×n (ld m); fp8 inputs are "not supported". */
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(void *h, void *desc, void *a, void *b, void *c, void *d,
		void *pref, int req, heur_t *res, int *ret) {
	desc_t *x = desc;
	layout_t *A = a, *B = b, *C = c;
	if (c != d || req < 1) return 7;
	if (x->transa != 1 || x->transb != 0) return 7;
	if (A->rows != B->rows || A->ld != (int64_t)A->rows || B->ld != (int64_t)B->rows) return 7;
	if (C->rows != A->cols || C->cols != B->cols || C->ld != (int64_t)C->rows) return 7;
	if (A->type == 28) return 15;
	if (((pref_t *)pref)->ws != 32u << 20) return 7;
	memset(res, 0, sizeof(*res));
	res->algo.data[0] = 0xabc;
	res->workspaceSize = 1234;
	res->state = 0;
	*ret = 1;
	return 0;
}
cublasStatus_t cublasLtMatmul(void *h, void *desc, const void *alpha, const void *A, void *ad,
		const void *B, void *bd, const void *beta, const void *C, void *cd, void *D, void *dd,
		const algo_t *algo, void *ws, size_t wsSize, void *stream) {
	if (*(const float *)alpha != 1.0f || *(const float *)beta != 0.0f) return 7;
	if ((uintptr_t)A != 0xa000 || (uintptr_t)B != 0xb000 || (uintptr_t)D != 0xd000 || C != D) return 7;
	if (algo->data[0] != 0xabc || (uintptr_t)ws != 0xe000 || wsSize != 32u << 20 || stream == NULL) return 7;
	return 0;
}
