/* A fake libnvidia-ml.so.1 for tests: the calls go-nvml's Init and
 * vigil-watch's NVML sampler make, and no more (a symbol left out here,
 * such as nvmlDeviceGetCurrentClocksEventReasons, is one the watcher
 * must guard). Its GPUs and their faults are files in the directory
 * VIGIL_FAKE_NVML_DIR names, read at every call:
 *
 *   gpus    the number of GPUs (1 to 8; 1 when absent)
 *   util    "INDEX PERCENT" lines: a GPU's utilisation (0 when unlisted)
 *   events  "INDEX XID" lines, appended by the test: an event set reads
 *           those appended after it was created, one a wait, for the
 *           GPUs registered for XID events in it.
 *
 * GPU i is on PCI bus 0x18 + 0x10*i ("00000000:18:00.0") with UUID
 * GPU-fa4e0000-0000-0000-0000-00000000000i. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int nvmlReturn_t;
enum {
	SUCCESS = 0, ERROR_UNINITIALIZED = 1, ERROR_INVALID_ARGUMENT = 2, ERROR_NOT_SUPPORTED = 3,
	ERROR_NOT_FOUND = 6, ERROR_DRIVER_NOT_LOADED = 9, ERROR_TIMEOUT = 10, ERROR_UNKNOWN = 999,
};
enum { EVENT_DBE = 0x2, EVENT_XID = 0x8, MAX_GPUS = 8, CLOCK_SM = 1 };

struct nvmlDevice_st { int index; };
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
} nvmlPciInfo_t;
typedef struct {
	nvmlDevice_t device;
	unsigned long long eventType, eventData;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;
struct nvmlEventSet_st {
	long offset;                            /* of the next unread line of events */
	unsigned long long types[MAX_GPUS];     /* registered per GPU */
};
typedef struct nvmlEventSet_st *nvmlEventSet_t;

static struct nvmlDevice_st gpus[MAX_GPUS] = {{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}};
static int inits;

/* path is VIGIL_FAKE_NVML_DIR/name, 0 when the variable is unset. */
static int path(char *buf, size_t n, const char *name) {
	const char *dir = getenv("VIGIL_FAKE_NVML_DIR");
	if (!dir || !*dir) return 0;
	snprintf(buf, n, "%s/%s", dir, name);
	return 1;
}

static int count(void) {
	char p[4096];
	int n = 1;
	FILE *f;
	if (path(p, sizeof p, "gpus") && (f = fopen(p, "r"))) {
		if (fscanf(f, "%d", &n) != 1) n = 1;
		fclose(f);
	}
	return n < 1 ? 1 : n > MAX_GPUS ? MAX_GPUS : n;
}

static int valid(nvmlDevice_t d) { return inits > 0 && d >= gpus && d < gpus + count(); }

nvmlReturn_t nvmlInit_v2(void) {
	char p[4096];
	if (!path(p, sizeof p, "gpus")) return ERROR_DRIVER_NOT_LOADED;
	inits++;
	return SUCCESS;
}
nvmlReturn_t nvmlShutdown(void) {
	if (inits == 0) return ERROR_UNINITIALIZED;
	inits--;
	return SUCCESS;
}
const char *nvmlErrorString(nvmlReturn_t r) {
	switch (r) {
	case SUCCESS: return "Success";
	case ERROR_UNINITIALIZED: return "Uninitialized";
	case ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case ERROR_NOT_SUPPORTED: return "Not Supported";
	case ERROR_NOT_FOUND: return "Not Found";
	case ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case ERROR_TIMEOUT: return "Timeout";
	}
	return "Unknown Error";
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
	if (inits == 0) return ERROR_UNINITIALIZED;
	*n = count();
	return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
	if (inits == 0) return ERROR_UNINITIALIZED;
	if (i >= (unsigned int)count()) return ERROR_INVALID_ARGUMENT;
	*d = &gpus[i];
	return SUCCESS;
}
static void uuid(char *buf, unsigned int n, int i) { snprintf(buf, n, "GPU-fa4e0000-0000-0000-0000-%012d", i); }
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *id, nvmlDevice_t *d) {
	char u[96];
	if (inits == 0) return ERROR_UNINITIALIZED;
	for (int i = 0; i < count(); i++) {
		uuid(u, sizeof u, i);
		if (strcmp(u, id) == 0) { *d = &gpus[i]; return SUCCESS; }
	}
	return ERROR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int n) {
	if (!valid(d)) return ERROR_INVALID_ARGUMENT;
	uuid(buf, n, d->index);
	return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p) {
	if (!valid(d)) return ERROR_INVALID_ARGUMENT;
	memset(p, 0, sizeof *p);
	p->bus = 0x18 + 0x10 * d->index;
	snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02x:00.0", p->bus);
	snprintf(p->busId, sizeof p->busId, "00000000:%02x:00.0", p->bus);
	return SUCCESS;
}

/* utilisation is GPU d's line of util, 0 when it has none. */
static unsigned int utilisation(int d) {
	char p[4096];
	int i, pct;
	unsigned int u = 0;
	FILE *f;
	if (!path(p, sizeof p, "util") || !(f = fopen(p, "r"))) return 0;
	while (fscanf(f, "%d %d", &i, &pct) == 2)
		if (i == d && pct >= 0 && pct <= 100) u = pct;
	fclose(f);
	return u;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
	if (!valid(d)) return ERROR_INVALID_ARGUMENT;
	u->gpu = utilisation(d->index);
	u->memory = u->gpu / 2;
	return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) {
	if (!valid(d)) return ERROR_INVALID_ARGUMENT;
	m->total = 80ULL << 30;
	m->used = 20ULL << 30;
	m->free = m->total - m->used;
	return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
	if (!valid(d)) return ERROR_INVALID_ARGUMENT;
	*mw = 100000 + 5000 * utilisation(d->index);
	return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
	if (!valid(d)) return ERROR_INVALID_ARGUMENT;
	if (type != CLOCK_SM) return ERROR_NOT_SUPPORTED;
	*mhz = 1980;
	return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) {
	return nvmlDeviceGetClockInfo(d, type, mhz);
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
	char p[4096];
	FILE *f;
	if (inits == 0) return ERROR_UNINITIALIZED;
	*set = calloc(1, sizeof **set);
	if (!*set) return ERROR_UNKNOWN;
	if (path(p, sizeof p, "events") && (f = fopen(p, "r"))) { /* what is there already came before */
		fseek(f, 0, SEEK_END);
		(*set)->offset = ftell(f);
		fclose(f);
	}
	return SUCCESS;
}
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
	free(set);
	return SUCCESS;
}
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *types) {
	if (!valid(d)) return ERROR_INVALID_ARGUMENT;
	*types = EVENT_DBE | EVENT_XID;
	return SUCCESS;
}
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) {
	if (!valid(d) || !set) return ERROR_INVALID_ARGUMENT;
	if (types & ~(unsigned long long)(EVENT_DBE | EVENT_XID)) return ERROR_NOT_SUPPORTED;
	set->types[d->index] |= types;
	return SUCCESS;
}

/* next reads set's next complete line of events into data: 1 when it is
 * an XID of a GPU registered for them, 0 when there is none, -1 for a line
 * to skip. */
static int next(nvmlEventSet_t set, nvmlEventData_t *data) {
	char p[4096], line[256];
	int i, xid, n = count();
	FILE *f;
	if (!path(p, sizeof p, "events") || !(f = fopen(p, "r"))) return 0;
	if (fseek(f, set->offset, SEEK_SET) != 0 || !fgets(line, sizeof line, f) || !strchr(line, '\n')) {
		fclose(f);
		return 0;
	}
	set->offset = ftell(f);
	fclose(f);
	if (sscanf(line, "%d %d", &i, &xid) != 2 || i < 0 || i >= n || !(set->types[i] & EVENT_XID)) return -1;
	memset(data, 0, sizeof *data);
	data->device = &gpus[i];
	data->eventType = EVENT_XID;
	data->eventData = xid;
	return 1;
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int ms) {
	struct timespec now, end, tick = {0, 10 * 1000 * 1000};
	if (inits == 0) return ERROR_UNINITIALIZED;
	if (!set || !data) return ERROR_INVALID_ARGUMENT;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000;
	end.tv_nsec += (long)(ms % 1000) * 1000000;
	if (end.tv_nsec >= 1000000000) { end.tv_sec++; end.tv_nsec -= 1000000000; }
	for (;;) {
		int r = next(set, data);
		if (r > 0) return SUCCESS;
		if (r < 0) continue;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec || (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec)) return ERROR_TIMEOUT;
		nanosleep(&tick, NULL);
	}
}
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int ms) {
	return nvmlEventSetWait_v2(set, data, ms);
}
