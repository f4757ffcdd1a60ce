/*
 * A stand-in for CANN used by vigil's tests: libascendcl.so, libnnopbase.so,
 * libopapi.so and libhccl.so in one file, with the prototypes of CANN's
 * published headers. "Device" memory is host memory, streams run work at
 * once, aclnnMatmul multiplies on the host and HCCL collectives meet in a
 * barrier, so vigil's real ACL code path runs end to end without an NPU.
 * Arguments are checked the way the real libraries require them; a wrong
 * one returns ACL_ERROR_INVALID_PARAM (100000) or ACLNN_ERR_PARAM_INVALID.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NDEV 4
#define BAD 100000
#define NN_BAD 161002
static __thread int current = -1;
static const char *lastmsg = "";

int aclInit(const char *cfg) { return cfg == NULL ? 0 : BAD; }
int aclFinalize(void) { return 0; }
const char *aclGetRecentErrMsg(void) { return lastmsg; }
const char *aclrtGetSocName(void) { return "Ascend910B3"; }
int aclrtGetDeviceCount(uint32_t *n) { *n = NDEV; return 0; }
int aclrtSetDevice(int32_t d) { if (d < 0 || d >= NDEV) { lastmsg = "invalid device"; return 107001; } current = d; return 0; }
int aclrtResetDevice(int32_t d) { return d == current ? 0 : BAD; }
int aclrtCreateContext(void **c, int32_t d) { *c = malloc(1); return 0; }
int aclrtDestroyContext(void *c) { free(c); return 0; }
int aclrtSetCurrentContext(void *c) { return 0; }
int aclrtCreateStream(void **s) { if (current < 0) return 107002; *s = malloc(8); return 0; }
int aclrtDestroyStream(void *s) { free(s); return 0; }
int aclrtSynchronizeStream(void *s) { return s ? 0 : BAD; }
int aclrtMalloc(void **p, size_t n, int policy) { if (policy != 0 || current < 0) return BAD; *p = malloc(n); return *p ? 0 : 207001; }
int aclrtFree(void *p) { free(p); return 0; }
int aclrtMallocHost(void **p, size_t n) { *p = malloc(n); return *p ? 0 : 207001; }
int aclrtFreeHost(void *p) { free(p); return 0; }
int aclrtMemcpy(void *dst, size_t max, const void *src, size_t n, int kind) {
	if (n > max || kind < 1 || kind > 3) return BAD;
	memcpy(dst, src, n);
	return 0;
}
int aclrtMemcpyAsync(void *dst, size_t max, const void *src, size_t n, int kind, void *s) {
	if (!s) return BAD;
	return aclrtMemcpy(dst, max, src, n, kind);
}
struct event { struct timespec t; int timeline; };
int aclrtCreateEvent(void **e) { *e = calloc(1, sizeof(struct event)); return 0; }
int aclrtCreateEventWithFlag(void **e, uint32_t flag) {
	struct event *ev = calloc(1, sizeof *ev);
	ev->timeline = flag == 8;
	*e = ev;
	return 0;
}
int aclrtDestroyEvent(void *e) { free(e); return 0; }
int aclrtRecordEvent(void *e, void *s) { if (!s) return BAD; clock_gettime(CLOCK_MONOTONIC, &((struct event *)e)->t); return 0; }
int aclrtSynchronizeEvent(void *e) { return 0; }
int aclrtEventElapsedTime(float *ms, void *a, void *b) {
	struct event *x = a, *y = b;
	if (!x->timeline || !y->timeline) return BAD; /* needs ACL_EVENT_TIME_LINE */
	*ms = (y->t.tv_sec - x->t.tv_sec) * 1e3 + (y->t.tv_nsec - x->t.tv_nsec) / 1e6;
	if (*ms <= 0) *ms = 1e-3f;
	return 0;
}

/* aclnn/acl_meta.h */
struct aclTensor { int64_t dims[8]; uint64_t n; int dt; void *data; };
void *aclCreateTensor(const int64_t *view, uint64_t n, int dt, const int64_t *stride, int64_t offset, int format,
		const int64_t *storage, uint64_t sn, void *data) {
	if (n == 0 || n > 8 || offset != 0 || format != 2 || sn != n || (dt != 1 && dt != 27)) return NULL;
	int64_t s = 1;
	for (int i = (int)n - 1; i >= 0; i--) {
		if (stride[i] != s || storage[i] != view[i]) return NULL;
		s *= view[i];
	}
	struct aclTensor *t = calloc(1, sizeof *t);
	memcpy(t->dims, view, n * 8);
	t->n = n; t->dt = dt; t->data = data;
	return t;
}
int aclDestroyTensor(const void *t) { free((void *)t); return 0; }

static float load(int dt, const uint16_t *p) {
	if (dt == 1) return (float)*(const _Float16 *)p;
	uint32_t b = (uint32_t)*p << 16; float f; memcpy(&f, &b, 4); return f;
}
static void store(int dt, uint16_t *p, float f) {
	if (dt == 1) { *(_Float16 *)p = (_Float16)f; return; }
	uint32_t b; memcpy(&b, &f, 4); b += 0x7fff + ((b >> 16) & 1); *p = (uint16_t)(b >> 16);
}

/* aclnnop/aclnn_matmul.h */
struct exec { struct aclTensor *a, *b, *o; };
int aclnnMatmulGetWorkspaceSize(const struct aclTensor *a, const struct aclTensor *b, struct aclTensor *o, int8_t math,
		uint64_t *ws, struct exec **ex) {
	if (math != 0 || a->n != 2 || b->n != 2 || o->n != 2 || a->dims[1] != b->dims[0] || o->dims[0] != a->dims[0] ||
			o->dims[1] != b->dims[1] || a->dt != b->dt || a->dt != o->dt) return NN_BAD;
	*ex = malloc(sizeof **ex);
	(*ex)->a = (void *)a; (*ex)->b = (void *)b; (*ex)->o = o;
	*ws = 4096;
	return 0;
}
int aclnnMatmul(void *ws, uint64_t size, struct exec *ex, void *stream) {
	if (!stream || size < 4096 || !ws) { free(ex); return NN_BAD; }
	memset(ws, 0xab, size); /* the workspace must really be that big */
	int64_t m = ex->a->dims[0], k = ex->a->dims[1], n = ex->b->dims[1];
	int dt = ex->a->dt;
	const uint16_t *A = ex->a->data, *B = ex->b->data;
	uint16_t *C = ex->o->data;
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			float s = 0;
			for (int64_t l = 0; l < k; l++) s += load(dt, A + i * k + l) * load(dt, B + l * n + j);
			store(dt, C + i * n + j, s);
		}
	free(ex); /* an executor serves one launch */
	return 0;
}

/* hccl/hccl.h */
struct shared { pthread_barrier_t bar; int n, live; const float *send[NDEV]; };
struct comm { struct shared *sh; int rank; };
const char *HcclGetErrorString(int r) { return "stub error"; }
int HcclGetRootInfo(void *info) { return 5; }
int HcclCommInitRootInfo(uint32_t n, const void *info, uint32_t rank, void **c) { return 5; }
int HcclCommInitAll(uint32_t n, int32_t *devs, void **comms) {
	if (n < 1 || n > NDEV) return 1;
	struct shared *sh = calloc(1, sizeof *sh);
	sh->n = sh->live = (int)n;
	pthread_barrier_init(&sh->bar, NULL, n);
	for (uint32_t i = 0; i < n; i++) {
		if (devs[i] < 0 || devs[i] >= NDEV) return 1;
		struct comm *c = malloc(sizeof *c);
		c->sh = sh; c->rank = (int)i;
		comms[i] = c;
	}
	return 0;
}
int HcclCommDestroy(struct comm *c) {
	struct shared *sh = c->sh;
	free(c);
	if (--sh->live == 0) { pthread_barrier_destroy(&sh->bar); free(sh); }
	return 0;
}
int HcclAllReduce(void *send, void *recv, uint64_t count, int dt, int op, struct comm *c, void *stream) {
	if (dt != 4 || op != 0 || !stream) return 1;
	struct shared *sh = c->sh;
	sh->send[c->rank] = send;
	pthread_barrier_wait(&sh->bar);
	float *r = recv;
	for (uint64_t i = 0; i < count; i++) {
		float s = 0;
		for (int k = 0; k < sh->n; k++) s += sh->send[k][i];
		r[i] = s;
	}
	pthread_barrier_wait(&sh->bar);
	return 0;
}
int HcclAllGather(void *send, void *recv, uint64_t count, int dt, struct comm *c, void *stream) {
	if (dt != 4 || !stream) return 1;
	struct shared *sh = c->sh;
	sh->send[c->rank] = send;
	pthread_barrier_wait(&sh->bar);
	for (int k = 0; k < sh->n; k++) memcpy((float *)recv + k * count, sh->send[k], count * 4);
	pthread_barrier_wait(&sh->bar);
	return 0;
}
