/* A fake libcuda.so.1 for tests: just enough behaviour to check that
 * arguments and results cross the trampolines intact. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef int CUresult;
static unsigned char devmem[4096];

CUresult cuInit(unsigned int flags) { return flags == 0 ? 0 : 1; }
CUresult cuDriverGetVersion(int *v) { *v = 12040; return 0; }
CUresult cuGetErrorName(CUresult r, const char **s) {
	if (r == 2) { *s = "CUDA_ERROR_OUT_OF_MEMORY"; return 0; }
	if (r == 700) { *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; return 0; }
	return 1;
}
CUresult cuGetErrorString(CUresult r, const char **s) {
	if (r == 2) { *s = "out of memory"; return 0; }
	return 1;
}
CUresult cuDeviceGetCount(int *n) { *n = 2; return 0; }
CUresult cuDeviceGet(int *d, int i) { if (i < 0 || i > 1) return 101; *d = 10 + i; return 0; }
CUresult cuDeviceGetName(char *name, int len, int d) { snprintf(name, len, "Fake GPU %d", d - 10); return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int d) {
	*v = attr == 75 ? 9 : attr == 76 ? 0 : attr == 16 ? 132 : 0;
	return 0;
}
CUresult cuDeviceTotalMem_v2(size_t *n, int d) { *n = (size_t)80 << 30; return 0; }
CUresult cuDeviceGetPCIBusId(char *id, int len, int d) { snprintf(id, len, "0000:%02x:00.0", d); return 0; }
CUresult cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)(size_t)(0x1000 + d); return 0; }
CUresult cuDevicePrimaryCtxRelease_v2(int d) { return d >= 10 ? 0 : 101; }
CUresult cuCtxSetCurrent(void *c) { return c ? 0 : 201; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuMemAlloc_v2(unsigned long long *p, size_t n) { if (n > sizeof(devmem)) return 2; *p = 0x7000; return 0; }
CUresult cuMemFree_v2(unsigned long long p) { return p == 0x7000 ? 0 : 1; }
CUresult cuMemHostAlloc(void **p, size_t n, unsigned int flags) { return 801; }
CUresult cuMemFreeHost(void *p) { return 0; }
CUresult cuMemcpyHtoD_v2(unsigned long long dst, const void *src, size_t n) {
	if (dst != 0x7000 || n > sizeof(devmem)) return 1;
	memcpy(devmem, src, n);
	return 0;
}
CUresult cuMemcpyDtoH_v2(void *dst, unsigned long long src, size_t n) {
	if (src != 0x7000 || n > sizeof(devmem)) return 1;
	memcpy(dst, devmem, n);
	return 0;
}
CUresult cuMemcpyHtoDAsync_v2(unsigned long long d, const void *s, size_t n, void *st) { return 0; }
CUresult cuMemcpyDtoHAsync_v2(void *d, unsigned long long s, size_t n, void *st) { return 0; }
CUresult cuMemcpyDtoDAsync_v2(unsigned long long d, unsigned long long s, size_t n, void *st) { return 0; }
CUresult cuMemsetD32Async(unsigned long long d, unsigned int v, size_t n, void *st) { return 0; }
CUresult cuStreamCreate(void **s, unsigned int flags) { *s = (void *)0x5; return flags == 1 ? 0 : 1; }
CUresult cuStreamSynchronize(void *s) { return 0; }
CUresult cuStreamDestroy_v2(void *s) { return 0; }
CUresult cuEventCreate(void **e, unsigned int flags) { *e = (void *)0x6; return 0; }
CUresult cuEventRecord(void *e, void *s) { return 0; }
CUresult cuEventSynchronize(void *e) { return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { *ms = 1.5f; return 0; }
CUresult cuEventDestroy_v2(void *e) { return 0; }
CUresult cuModuleLoadData(void **m, const void *image) {
	if (!strstr((const char *)image, ".entry vigil_fill(")) return 218;
	*m = (void *)0x8;
	return 0;
}
CUresult cuModuleGetFunction(void **f, void *m, const char *name) {
	if (strcmp(name, "vigil_fill") && strcmp(name, "vigil_empty")) return 500;
	*f = (void *)0x9;
	return 0;
}
CUresult cuModuleUnload(void *m) { return 0; }
/* Returns 0 only for vigil_fill's argument list (u64 0x7000, u32 0x1234,
 * u32 n == gx*bx) or for a launch without arguments; 700 for grid 7. */
CUresult cuLaunchKernel(void *f, unsigned int gx, unsigned int gy, unsigned int gz,
		unsigned int bx, unsigned int by, unsigned int bz, unsigned int shmem, void *s,
		void **params, void **extra) {
	if (gx == 7) return 700;
	if (extra != NULL) return 1;
	if (params == NULL) return 0;
	if (*(unsigned long long *)params[0] != 0x7000) return 1;
	if (*(unsigned int *)params[1] != 0x1234) return 1;
	if (*(unsigned int *)params[2] != gx * bx) return 1;
	return 0;
}
