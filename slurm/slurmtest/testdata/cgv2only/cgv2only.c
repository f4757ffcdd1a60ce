/*
 * cgv2only: an LD_PRELOAD library for slurmtest's cgroup v2 clusters (never
 * installed). Slurm's cgroup/v2 plugin reads /proc/self/cgroup (24.11 also
 * /proc/1/cgroup) and stops with "Hybrid mode is not supported" unless the
 * first line starts with "0"; on the development and CI machines the kernel
 * lists its nine v1 hierarchies first. Opening /proc/<pid>/cgroup,
 * /proc/self/cgroup or /proc/thread-self/cgroup through this library gives
 * a memory file holding only the "0::..." line. Everything else is Slurm's
 * own v2 code.
 *
 * slurmd is started with LD_PRELOAD set and hands it to slurmstepd; job
 * tasks get the job's environment, without it.
 *
 * Build: gcc -shared -fPIC -O2 -o cgv2only.so cgv2only.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* is_cgroup_file: /proc/self/cgroup, /proc/thread-self/cgroup,
 * /proc/<pid>/cgroup or /proc/<pid>/task/<tid>/cgroup. */
static int is_cgroup_file(const char *p)
{
	const char *s;
	if (p == NULL || strncmp(p, "/proc/", 6) != 0)
		return 0;
	s = p + 6;
	if (strncmp(s, "self/", 5) == 0)
		s += 5;
	else if (strncmp(s, "thread-self/", 12) == 0)
		s += 12;
	else {
		const char *d = s;
		while (*s >= '0' && *s <= '9')
			s++;
		if (s == d || *s != '/')
			return 0;
		s++;
		if (strncmp(s, "task/", 5) == 0) {
			s += 5;
			d = s;
			while (*s >= '0' && *s <= '9')
				s++;
			if (s == d || *s != '/')
				return 0;
			s++;
		}
	}
	return strcmp(s, "cgroup") == 0;
}

typedef int (*open_fn)(const char *, int, ...);

/* unified_only reads the real file through fd (closing it) and returns a
 * memory file positioned at its start that holds only its "0::" line. */
static int unified_only(int fd)
{
	char buf[8192], out[8192];
	size_t n = 0, o = 0;
	ssize_t r;
	int mfd;
	char *line;

	while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
		n += (size_t)r;
	close(fd);
	buf[n] = '\0';
	for (line = buf; line && *line; ) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line + 1) : strlen(line);
		if (strncmp(line, "0::", 3) == 0 && o + len < sizeof(out)) {
			memcpy(out + o, line, len);
			o += len;
		}
		line = nl ? nl + 1 : NULL;
	}
	mfd = memfd_create("cgroup", MFD_CLOEXEC);
	if (mfd < 0)
		return -1;
	if (write(mfd, out, o) != (ssize_t)o || lseek(mfd, 0, SEEK_SET) != 0) {
		close(mfd);
		return -1;
	}
	return mfd;
}

static int wrap(const char *sym, int dirfd, const char *path, int flags, mode_t mode, int at)
{
	int fd;
	if (at) {
		int (*real)(int, const char *, int, ...) = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, sym);
		fd = real(dirfd, path, flags, mode);
	} else {
		open_fn real = (open_fn)dlsym(RTLD_NEXT, sym);
		fd = real(path, flags, mode);
	}
	if (fd < 0 || (flags & O_ACCMODE) != O_RDONLY || !is_cgroup_file(path))
		return fd;
	return unified_only(fd);
}

#define MODE_ARG(flags, mode)                                   \
	do {                                                        \
		if ((flags) & (O_CREAT | O_TMPFILE)) {                  \
			va_list ap;                                         \
			va_start(ap, flags);                                \
			mode = (mode_t)va_arg(ap, int);                     \
			va_end(ap);                                         \
		}                                                       \
	} while (0)

int open(const char *p, int flags, ...) { mode_t m = 0; MODE_ARG(flags, m); return wrap("open", 0, p, flags, m, 0); }
int open64(const char *p, int flags, ...) { mode_t m = 0; MODE_ARG(flags, m); return wrap("open64", 0, p, flags, m, 0); }
int openat(int d, const char *p, int flags, ...) { mode_t m = 0; MODE_ARG(flags, m); return wrap("openat", d, p, flags, m, 1); }
int openat64(int d, const char *p, int flags, ...) { mode_t m = 0; MODE_ARG(flags, m); return wrap("openat64", d, p, flags, m, 1); }
int __open_2(const char *p, int flags) { return wrap("open", 0, p, flags, 0, 0); }
int __open64_2(const char *p, int flags) { return wrap("open64", 0, p, flags, 0, 0); }

static FILE *wrapf(const char *sym, const char *path, const char *mode)
{
	FILE *(*real)(const char *, const char *) = (FILE * (*)(const char *, const char *)) dlsym(RTLD_NEXT, sym);
	int fd;
	if (!is_cgroup_file(path) || (strcmp(mode, "r") != 0 && strcmp(mode, "re") != 0))
		return real(path, mode);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? NULL : fdopen(fd, "r");
}

FILE *fopen(const char *p, const char *mode) { return wrapf("fopen", p, mode); }
FILE *fopen64(const char *p, const char *mode) { return wrapf("fopen64", p, mode); }
