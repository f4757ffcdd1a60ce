/* A fake libnccl.so.2 for tests: checks the arguments vigil passes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int ncclResult_t;
typedef struct { char internal[128]; } ncclUniqueId;
static int group_depth, group_ops;

ncclResult_t ncclGetVersion(int *v) { *v = 21903; return 0; }
const char *ncclGetErrorString(ncclResult_t r) { return r == 4 ? "invalid argument (run with NCCL_DEBUG=WARN for details)" : "unknown result code"; }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
	for (int i = 0; i < 128; i++) id->internal[i] = (char)i;
	return 0;
}
/* Communicators are the device number + 100. */
ncclResult_t ncclCommInitAll(void **comms, int n, const int *devs) {
	for (int i = 0; i < n; i++) {
		if (devs[i] < 0) return 4;
		comms[i] = (void *)(uintptr_t)(devs[i] + 100);
	}
	return 0;
}
/* Passed by value: must arrive intact. */
ncclResult_t ncclCommInitRank(void **comm, int n, ncclUniqueId id, int rank) {
	for (int i = 0; i < 128; i++)
		if (id.internal[i] != (char)i) return 4;
	if (rank >= n) return 4;
	*comm = (void *)(uintptr_t)(rank + 100);
	return 0;
}
ncclResult_t ncclCommDestroy(void *c) { return (uintptr_t)c >= 100 ? 0 : 4; }
ncclResult_t ncclCommAbort(void *c) { return 0; }
ncclResult_t ncclGroupStart(void) { group_depth++; return 0; }
ncclResult_t ncclGroupEnd(void) {
	if (group_depth == 0) return 5;
	group_depth--;
	return 0;
}
ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, int dt, int op, void *comm, void *stream) {
	if ((uintptr_t)s != 0x1000 || (uintptr_t)r != 0x2000 || count != 1024 || dt != 7 || op != 0 || (uintptr_t)comm < 100 || stream == NULL) return 4;
	return 0;
}
ncclResult_t ncclAllGather(const void *s, void *r, size_t count, int dt, void *comm, void *stream) {
	return count == 256 && dt == 9 ? 0 : 4;
}
/* Send and recv only inside a group. */
ncclResult_t ncclSend(const void *s, size_t count, int dt, int peer, void *comm, void *stream) {
	return group_depth > 0 && peer == 1 ? 0 : 5;
}
ncclResult_t ncclRecv(void *r, size_t count, int dt, int peer, void *comm, void *stream) {
	return group_depth > 0 && peer == 1 ? 0 : 5;
}
