/* fakegpu: the subset of libcuda.so.1, libcublasLt.so.12 and libnccl.so.2
 * that vigil's compute checks call, emulated in host memory, so the checks'
 * real code path (cgo trampolines, layouts, encodings, verification) runs in
 * tests without a GPU. One shared object is installed under all three names.
 *
 * Environment: FAKEGPU_COUNT (devices, default 4), FAKEGPU_NAME (default
 * "Vigil Fake GPU"), FAKEGPU_CC (compute capability x10, default 90),
 * FAKEGPU_CORRUPT=1 (GEMMs on device 1 write one wrong element),
 * FAKEGPU_BAD_COLLECTIVE=1 (all-reduce results are off by one on the last rank).
 *
 * Communicators of ncclCommInitRank span "nodes": the threads of one test
 * process that call it with the same unique id meet in a process-local
 * table keyed by the id's 128 bytes, as NCCL's ranks meet at the bootstrap
 * root the id names. ncclCommInitRank outside a group waits for every rank,
 * inside one ncclGroupEnd does; an all-reduce waits for every rank's
 * contribution. FAKEGPU_NCCL_LOG=FILE appends one line per rank joined
 * (clique, rank, nranks, device current, join order, whether in a group);
 * FAKEGPU_NCCL_INIT_FAIL_RANK=R fails rank R's ncclCommInitRank
 * (ncclSystemError, the others then wait); FAKEGPU_NCCL_HANG_RANK=R never
 * delivers rank R's all-reduce. A wait ends with ncclRemoteError when a
 * communicator of a rank the waiting thread drives is aborted (aborting one
 * node's communicators does not wake the others'), and with ncclSystemError after
 * FAKEGPU_WAIT_S seconds (default 60) so that no test thread waits forever.
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <errno.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

static int envint(const char *k, int def) {
	const char *v = getenv(k);
	return v && *v ? atoi(v) : def;
}

static __thread int current = -1; /* device of the current context */

/* ---- libcuda ---- */
CUresult cuInit(unsigned int flags) { return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 12040; return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) { *s = "CUDA_ERROR_FAKE"; return 0; }
CUresult cuGetErrorString(CUresult r, const char **s) { *s = "fake error"; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = envint("FAKEGPU_COUNT", 4); return 0; }
CUresult cuDeviceGet(int *d, int i) { if (i < 0 || i >= envint("FAKEGPU_COUNT", 4)) return 101; *d = i; return 0; }
CUresult cuDeviceGetName(char *name, int len, int d) {
	const char *n = getenv("FAKEGPU_NAME");
	snprintf(name, len, "%s", n && *n ? n : "Vigil Fake GPU");
	return 0;
}
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
	int cc = envint("FAKEGPU_CC", 90);
	*v = attr == 75 ? cc / 10 : attr == 76 ? cc % 10 : 1;
	return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *n, int d) { *n = (size_t)1 << 30; return 0; }
CUresult cuDeviceGetPCIBusId(char *id, int len, int d) { snprintf(id, len, "0000:%02x:00.0", 0x10 + d); return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)(uintptr_t)(0x100 + d); return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return 0; }
CUresult cuCtxSetCurrent(void *c) { current = (int)((uintptr_t)c - 0x100); return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { void *m = calloc(1, n); if (!m) return 2; *p = (uintptr_t)m; return 0; }
CUresult cuMemFree_v2(CUdeviceptr p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemHostAlloc(void **p, size_t n, unsigned int flags) { *p = calloc(1, n); return *p ? 0 : 2; }
CUresult cuMemFreeHost(void *p) { free(p); return 0; }
CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *s, size_t n) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *d, CUdeviceptr s, size_t n) { memcpy(d, (void *)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *s, size_t n, void *st) { memcpy((void *)(uintptr_t)d, s, n); return 0; }
CUresult cuMemcpyDtoHAsync_v2(void *d, CUdeviceptr s, size_t n, void *st) { memcpy(d, (void *)(uintptr_t)s, n); return 0; }
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr s, size_t n, void *st) { memcpy((void *)(uintptr_t)d, (void *)(uintptr_t)s, n); return 0; }
CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, void *st) {
	uint32_t *p = (uint32_t *)(uintptr_t)d;
	for (size_t i = 0; i < n; i++) p[i] = v;
	return 0;
}
CUresult cuStreamCreate(void **s, unsigned int flags) { *s = malloc(1); return 0; }
CUresult cuStreamSynchronize(void *s) { return 0; }
CUresult cuStreamDestroy_v2(void *s) { free(s); return 0; }
CUresult cuEventCreate(void **e, unsigned int flags) { *e = calloc(1, sizeof(struct timespec)); return 0; }
CUresult cuEventRecord(void *e, void *s) { clock_gettime(CLOCK_MONOTONIC, e); return 0; }
CUresult cuEventSynchronize(void *e) { return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) {
	struct timespec *x = a, *y = b;
	double d = (y->tv_sec - x->tv_sec) * 1e3 + (y->tv_nsec - x->tv_nsec) / 1e6;
	*ms = (float)(d > 0 ? d : 1e-6);
	return 0;
}
CUresult cuEventDestroy_v2(void *e) { free(e); return 0; }
CUresult cuModuleLoadData(void **m, const void *image) {
	if (!strstr(image, ".visible .entry vigil_empty()") || !strstr(image, ".visible .entry vigil_fill(")) return 218;
	*m = (void *)0x8;
	return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
	if (!strcmp(name, "vigil_empty")) *f = (void *)0x1;
	else if (!strcmp(name, "vigil_fill")) *f = (void *)0x2;
	else return 500;
	return 0;
}
CUresult cuModuleUnload(void *m) { return 0; }
CUresult cuLaunchKernel(void *f, unsigned int gx, unsigned int gy, unsigned int gz,
		unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem, void *s,
		void **params, void **extra) {
	if ((uintptr_t)f == 0x2) { /* vigil_fill(dst, base, n) */
		uint32_t *dst = (uint32_t *)(uintptr_t)*(CUdeviceptr *)params[0];
		uint32_t base = *(uint32_t *)params[1], n = *(uint32_t *)params[2];
		for (uint32_t i = 0; i < n && i < gx * bx; i++) dst[i] = base + i;
	}
	return 0;
}

/* ---- element types ---- */
static float bf16_to_f(uint16_t h) { uint32_t b = (uint32_t)h << 16; float f; memcpy(&f, &b, 4); return f; }
static uint16_t f_to_bf16(float f) { uint32_t b; memcpy(&b, &f, 4); b += 0x7fff + ((b >> 16) & 1); return b >> 16; }
static float f16_to_f(uint16_t h) {
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float v = e == 0 ? ldexpf(m, -24) : ldexpf(1024 + m, e - 25);
	return h & 0x8000 ? -v : v;
}
static uint16_t f_to_f16(float f) { /* values in vigil's tests are in normal range */
	uint16_t s = f < 0 ? 0x8000 : 0;
	float a = fabsf(f);
	if (a == 0) return s;
	int e;
	float m = frexpf(a, &e); /* a = m * 2^e, m in [0.5, 1) */
	long q = lrintf(ldexpf(m, 11));   /* 11 significant bits, round to even */
	if (q == 2048) { q = 1024; e++; }
	return s | (uint16_t)((e + 14) << 10) | (uint16_t)(q - 1024);
}
static float e4m3_to_f(uint8_t b) {
	int e = (b >> 3) & 0xf, m = b & 7;
	float v = e == 0 ? ldexpf(m, -9) : ldexpf(8 + m, e - 10);
	return b & 0x80 ? -v : v;
}
static float load(int type, const void *p, size_t i) {
	switch (type) {
	case 14: return bf16_to_f(((const uint16_t *)p)[i]);
	case 2: return f16_to_f(((const uint16_t *)p)[i]);
	case 28: return e4m3_to_f(((const uint8_t *)p)[i]);
	default: return ((const float *)p)[i];
	}
}
static void store(int type, void *p, size_t i, float v) {
	switch (type) {
	case 14: ((uint16_t *)p)[i] = f_to_bf16(v); break;
	case 2: ((uint16_t *)p)[i] = f_to_f16(v); break;
	default: ((float *)p)[i] = v;
	}
}

/* ---- libcublasLt ---- */
typedef struct { uint64_t data[8]; } algo_t;
typedef struct { algo_t algo; size_t workspaceSize; int state; float wavesCount; int reserved[4]; } heur_t;
typedef struct { int compute, scale, transa, transb; } desc_t;
typedef struct { int type; uint64_t rows, cols; int64_t ld; } layout_t;

int cublasLtCreate(void **h) { *h = malloc(1); return 0; }
int cublasLtDestroy(void *h) { free(h); return 0; }
const char *cublasLtGetStatusName(int s) { return "CUBLAS_STATUS_FAKE"; }
const char *cublasLtGetStatusString(int s) { return "fake"; }
size_t cublasLtGetVersion(void) { return 120304; }
int cublasLtMatmulDescCreate(void **d, int compute, int scale) {
	desc_t *x = calloc(1, sizeof *x);
	x->compute = compute; x->scale = scale; *d = x;
	return 0;
}
int cublasLtMatmulDescDestroy(void *d) { free(d); return 0; }
int cublasLtMatmulDescSetAttribute(void *d, int attr, const void *buf, size_t n) {
	if (attr == 3) ((desc_t *)d)->transa = *(const int *)buf;
	if (attr == 4) ((desc_t *)d)->transb = *(const int *)buf;
	return 0;
}
int cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
	layout_t *x = malloc(sizeof *x);
	x->type = type; x->rows = rows; x->cols = cols; x->ld = ld; *l = x;
	return 0;
}
int cublasLtMatrixLayoutDestroy(void *l) { free(l); return 0; }
int cublasLtMatmulPreferenceCreate(void **p) { *p = malloc(8); return 0; }
int cublasLtMatmulPreferenceDestroy(void *p) { free(p); return 0; }
int cublasLtMatmulPreferenceSetAttribute(void *p, int attr, const void *buf, size_t n) { return 0; }
int cublasLtMatmulAlgoGetHeuristic(void *h, void *desc, void *a, void *b, void *c, void *d,
		void *pref, int req, heur_t *res, int *ret) {
	if (((layout_t *)a)->type == 28 && envint("FAKEGPU_CC", 90) < 89) return 15;
	memset(res, 0, sizeof *res);
	*ret = 1;
	return 0;
}
/* D = op(A)·op(B) for column-major layouts, op per the descriptor. */
int cublasLtMatmul(void *h, void *desc, const void *alpha, const void *A, void *ad,
		const void *B, void *bd, const void *beta, const void *C, void *cd, void *D, void *dd,
		const algo_t *algo, void *ws, size_t wsSize, void *stream) {
	desc_t *x = desc;
	layout_t *la = ad, *lb = bd, *ld = dd;
	size_t m = ld->rows, n = ld->cols, k = x->transa ? la->rows : la->cols;
	float al = *(const float *)alpha;
	for (size_t j = 0; j < n; j++)
		for (size_t i = 0; i < m; i++) {
			double s = 0;
			for (size_t l = 0; l < k; l++) {
				float av = x->transa ? load(la->type, A, l + i * la->ld) : load(la->type, A, i + l * la->ld);
				float bv = x->transb ? load(lb->type, B, j + l * lb->ld) : load(lb->type, B, l + j * lb->ld);
				s += (double)av * bv;
			}
			store(ld->type, D, i + j * ld->ld, al * (float)s);
		}
	if (envint("FAKEGPU_CORRUPT", 0) && current == 1)
		store(ld->type, D, m / 2 + (n / 3) * ld->ld, load(ld->type, D, m / 2 + (n / 3) * ld->ld) + 3);
	return 0;
}

/* ---- libnccl ---- */
typedef struct mclique mclique_t;
typedef struct { char internal[128]; } ncclUniqueIdFake;
typedef struct { int clique, rank, nranks; mclique_t *mc; } comm_t;
typedef struct { int kind; const void *send; void *recv; size_t count; int dt, peer; comm_t *comm; } op_t;
enum { AR, AG, SEND, RECV };
static __thread op_t *ops; /* group state is per thread, as in NCCL */
static __thread int nops, depth;
static int cliques;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mcond = PTHREAD_COND_INITIALIZER;

/* A communicator made by ncclCommInitRank: its ranks and their rounds. */
#define MAXCL 64
#define MAXR 256
struct mclique {
	char id[128];
	int nranks, joined, taken[MAXR], aborted[MAXR]; /* aborted: by rank */
	int arrived, left; /* the two barriers of one all-reduce round */
	unsigned gen1, gen2;
	const float *send[MAXR];
	size_t count[MAXR];
};
static mclique_t mcl[MAXCL];
static int nmcl, idseq;
static __thread mclique_t *pend[MAXCL]; /* joined inside this thread's group */
static __thread int npend, mine[MAXR], nmine; /* and the ranks it joined there */
static __thread int grouperr; /* the first failed call of the group */

/* mwait waits (mu held) until *gen differs from g: 0, or 6 (ncclRemoteError)
 * once a communicator of one of the ranks the caller drives is aborted (an
 * abort on one node does not reach the others), or 2 (ncclSystemError)
 * after FAKEGPU_WAIT_S. */
static int mwait(mclique_t *c, const volatile unsigned *gen, unsigned g, const int *ranks, int nr) {
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += envint("FAKEGPU_WAIT_S", 60);
	while (*gen == g) {
		for (int i = 0; i < nr; i++)
			if (c->aborted[ranks[i]]) return 6;
		if (pthread_cond_timedwait(&mcond, &mu, &dl) == ETIMEDOUT && *gen == g) return 2;
	}
	return 0;
}
static int waitjoined(mclique_t *c, const int *ranks, int nr) {
	while (c->joined < c->nranks) {
		unsigned j = (unsigned)c->joined;
		int r = mwait(c, (const volatile unsigned *)&c->joined, j, ranks, nr);
		if (r) return r;
	}
	return 0;
}

int ncclGetVersion(int *v) { *v = 21903; return 0; }
const char *ncclGetErrorString(int r) { return "fake NCCL error"; }
int ncclGetUniqueId(char *id) {
	memset(id, 0, 128);
	pthread_mutex_lock(&mu);
	int n = ++idseq;
	pthread_mutex_unlock(&mu);
	snprintf(id, 128, "fakegpu-nccl-id pid=%d seq=%d", (int)getpid(), n);
	return 0;
}
int ncclCommInitAll(void **comms, int n, const int *devs) {
	pthread_mutex_lock(&mu);
	int c = ++cliques;
	pthread_mutex_unlock(&mu);
	for (int i = 0; i < n; i++) {
		comm_t *x = malloc(sizeof *x);
		x->clique = c; x->rank = i; x->nranks = n; x->mc = NULL;
		comms[i] = x;
	}
	return 0;
}
static void logjoin(int clique, int rank, int n, int order) {
	const char *path = getenv("FAKEGPU_NCCL_LOG");
	FILE *f = path && *path ? fopen(path, "a") : NULL;
	if (!f) return;
	fprintf(f, "clique=%d rank=%d nranks=%d dev=%d order=%d group=%d\n", clique, rank, n, current, order, depth > 0);
	fclose(f);
}
/* The id is passed by value; ranks of one id make one clique. */
static int initrank(void **comm, int n, ncclUniqueIdFake id, int rank);
int ncclCommInitRank(void **comm, int n, ncclUniqueIdFake id, int rank) {
	int r = initrank(comm, n, id, rank);
	if (r && depth > 0 && !grouperr) grouperr = r; /* ncclGroupEnd returns it */
	return r;
}
static int initrank(void **comm, int n, ncclUniqueIdFake id, int rank) {
	if (n < 1 || n > MAXR || rank < 0 || rank >= n) return 4;
	if (rank == envint("FAKEGPU_NCCL_INIT_FAIL_RANK", -1)) return 2;
	pthread_mutex_lock(&mu);
	mclique_t *c = NULL;
	for (int i = 0; i < nmcl && !c; i++)
		if (!memcmp(mcl[i].id, id.internal, 128)) c = &mcl[i];
	if (!c) {
		if (nmcl == MAXCL) { pthread_mutex_unlock(&mu); return 2; }
		c = &mcl[nmcl++];
		memcpy(c->id, id.internal, 128);
		c->nranks = n;
	}
	if (c->nranks != n) { pthread_mutex_unlock(&mu); return 4; }
	if (c->taken[rank]) { pthread_mutex_unlock(&mu); return 5; }
	c->taken[rank] = 1;
	logjoin((int)(c - mcl), rank, n, c->joined);
	c->joined++;
	pthread_cond_broadcast(&mcond);
	comm_t *x = malloc(sizeof *x);
	x->clique = -1; x->rank = rank; x->nranks = n; x->mc = c;
	*comm = x;
	int r = 0;
	if (depth > 0) { /* ncclGroupEnd waits for the others */
		int seen = 0;
		for (int i = 0; i < npend; i++) seen |= pend[i] == c;
		if (!seen && npend < MAXCL) pend[npend++] = c;
		if (nmine < MAXR) mine[nmine++] = rank;
	} else {
		r = waitjoined(c, &rank, 1);
	}
	pthread_mutex_unlock(&mu);
	return r;
}
int ncclCommDestroy(void *c) { free(c); return 0; }
/* Aborting wakes every wait of the clique. The record of a clique's
 * communicator is kept: another thread may still be waiting with it. */
int ncclCommAbort(void *p) {
	comm_t *c = p;
	if (!c->mc) { free(c); return 0; }
	pthread_mutex_lock(&mu);
	c->mc->aborted[c->rank] = 1;
	pthread_cond_broadcast(&mcond);
	pthread_mutex_unlock(&mu);
	return 0;
}
int ncclGroupStart(void) { depth++; return 0; }
static op_t *find(int kind, int clique, int rank, int peer) {
	for (int i = 0; i < nops; i++)
		if (ops[i].kind == kind && ops[i].comm->clique == clique && ops[i].comm->rank == rank && (peer < 0 || ops[i].peer == peer))
			return &ops[i];
	return NULL;
}
/* mround runs this thread's part of one all-reduce round of a clique: post
 * the send buffers, wait for every rank's, sum, wait for every rank to
 * have read them (mu held on entry and exit). */
static int mround(mclique_t *c) {
	int hang = envint("FAKEGPU_NCCL_HANG_RANK", -1), r, ranks[MAXR];
	if (nops > MAXR) return 5;
	for (int i = 0; i < nops; i++) {
		if (ops[i].kind != AR || ops[i].comm->mc != c) return 5;
		ranks[i] = ops[i].comm->rank;
	}
	for (int i = 0; i < nops; i++)
		if (ranks[i] == hang) {
			unsigned never = 0;
			return mwait(c, &never, 0, ranks, nops);
		}
	unsigned g1 = c->gen1, g2 = c->gen2;
	for (int i = 0; i < nops; i++) {
		c->send[ops[i].comm->rank] = ops[i].send;
		c->count[ops[i].comm->rank] = ops[i].count;
	}
	c->arrived += nops;
	if (c->arrived == c->nranks) { c->gen1++; pthread_cond_broadcast(&mcond); }
	else if ((r = mwait(c, &c->gen1, g1, ranks, nops))) return r;
	int bad = envint("FAKEGPU_BAD_COLLECTIVE", 0);
	for (int i = 0; i < nops; i++) {
		op_t *o = &ops[i];
		float *tmp = calloc(o->count, sizeof(float));
		for (int k = 0; k < c->nranks; k++) {
			if (c->count[k] != o->count) { free(tmp); return 5; }
			for (size_t e = 0; e < o->count; e++) tmp[e] += c->send[k][e];
		}
		if (bad && o->comm->rank == c->nranks - 1) tmp[0] += 1;
		memcpy(o->recv, tmp, o->count * sizeof(float));
		free(tmp);
	}
	c->left += nops;
	if (c->left == c->nranks) { c->arrived = c->left = 0; c->gen2++; pthread_cond_broadcast(&mcond); return 0; }
	return mwait(c, &c->gen2, g2, ranks, nops);
}
static int endmulti(void) {
	pthread_mutex_lock(&mu);
	int r = 0;
	for (int i = 0; i < npend && !r; i++) r = waitjoined(pend[i], mine, nmine);
	npend = nmine = 0;
	if (!r && nops > 0 && ops[0].comm->mc) r = mround(ops[0].comm->mc);
	pthread_mutex_unlock(&mu);
	return r;
}
int ncclGroupEnd(void) {
	if (depth == 0) return 5;
	if (--depth > 0) return 0;
	if (grouperr) { /* a failed call ends the group without waiting */
		int r = grouperr;
		grouperr = npend = nmine = nops = 0;
		return r;
	}
	if (npend > 0 || (nops > 0 && ops[0].comm->mc)) {
		int r = endmulti();
		nops = 0;
		return r;
	}
	int bad = envint("FAKEGPU_BAD_COLLECTIVE", 0);
	/* Results first into scratch, since send and recv buffers of different
	 * ranks are distinct but a rank may read what another rank writes. */
	for (int i = 0; i < nops; i++) {
		op_t *o = &ops[i];
		comm_t *c = o->comm;
		if (o->kind == AR) {
			float *out = (float *)o->recv;
			float *tmp = calloc(o->count, sizeof(float));
			for (int r = 0; r < c->nranks; r++) {
				op_t *p = find(AR, c->clique, r, -1);
				if (!p) { free(tmp); return 5; }
				for (size_t e = 0; e < o->count; e++) tmp[e] += ((const float *)p->send)[e];
			}
			if (bad && c->rank == c->nranks - 1) tmp[0] += 1;
			memcpy(out, tmp, o->count * sizeof(float));
			free(tmp);
		} else if (o->kind == AG) {
			for (int r = 0; r < c->nranks; r++) {
				op_t *p = find(AG, c->clique, r, -1);
				if (!p) return 5;
				memcpy((char *)o->recv + r * o->count * 4, p->send, o->count * 4);
			}
		} else if (o->kind == RECV) {
			op_t *p = find(SEND, c->clique, o->peer, c->rank);
			if (!p || p->count != o->count) return 5;
			memcpy(o->recv, p->send, o->count * 4);
		}
	}
	nops = 0;
	return 0;
}
static int add(int kind, const void *s, void *r, size_t count, int dt, int peer, void *comm) {
	if (!ops) ops = calloc(4096, sizeof *ops);
	if (depth == 0 || nops == 4096 || dt != 7) return 5;
	ops[nops++] = (op_t){kind, s, r, count, dt, peer, comm};
	return 0;
}
int ncclAllReduce(const void *s, void *r, size_t count, int dt, int op, void *comm, void *stream) { return op == 0 ? add(AR, s, r, count, dt, -1, comm) : 4; }
int ncclAllGather(const void *s, void *r, size_t count, int dt, void *comm, void *stream) { return add(AG, s, r, count, dt, -1, comm); }
int ncclSend(const void *s, size_t count, int dt, int peer, void *comm, void *stream) { return add(SEND, s, NULL, count, dt, peer, comm); }
int ncclRecv(void *r, size_t count, int dt, int peer, void *comm, void *stream) { return add(RECV, NULL, r, count, dt, peer, comm); }
