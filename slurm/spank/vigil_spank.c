/*
 * vigil_spank.c: vigil's SPANK plugin.
 *
 * Adds per-job options to sbatch, salloc and srun:
 *
 *   --vigil-checks=LIST          which node checks vigil-prolog runs (or "none")
 *   --vigil-timing=WHEN          before | after-requeue
 *   --vigil-hang-time=DURATION   vigil-watch's window: minutes or a Go duration, or "off"
 *   --vigil-hang-action=ACTION   notify (or none) | cancel | requeue | requeue-exclude
 *   --vigil-notify=LIST          how vigil tells the job's user: mail,webhook (or none)
 *   --vigil-webhook=URL          the job's webhook, one of [policy] webhooks
 *
 * Values are checked on the submit host by `vigil-prolog policy-check`: their
 * syntax and the site's [policy] (the TOML config is the one source of
 * truth), with the parsers the nodes run. The plugin parses no value itself:
 * where policy-check cannot run, it only refuses an empty or over-long value
 * and lets the nodes apply the policy at run time. Values reach
 * vigil-prolog and vigil-epilog as SPANK_VIGIL_* variables
 * (spank_job_control_setenv) and the job's steps as VIGIL_HANG_DETECT_TIME,
 * VIGIL_HANG_ACTION, VIGIL_NOTIFY and VIGIL_WEBHOOK_URL (spank_setenv). vigil-prolog and vigil-watch apply
 * them again, within the policy, at run time.
 *
 * With watch=auto (or watch=config and [policy] auto_watch = true) the
 * plugin starts vigil-watch on every node of the job from the job's extern
 * step (PrologFlags=Contain), as the job's user, and stops it when the job
 * ends.
 *
 * plugstack.conf:
 *   optional /usr/local/lib/vigil/vigil_spank.so [config=/etc/vigil/vigil.toml]
 *       [prolog=/usr/local/bin/vigil-prolog] [watcher=/usr/local/bin/vigil-watch]
 *       [watch=off|auto|config] [state_dir=/run/vigil/spank]
 *       [watch_log=%o/vigil-watch-%j-%n.log] [policy_timeout=10]
 *
 * Built with `gcc -fPIC -shared` against libslurm-dev's <slurm/spank.h>; it
 * links no library.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <slurm/spank.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

SPANK_PLUGIN(vigil, 1);

/* The extern step's id (SLURM_EXTERN_CONT in <slurm/slurm.h>). */
#define VIGIL_EXTERN_STEP 0xfffffffcU

#define VIGIL_PATH_MAX 1024
#define VIGIL_VALUE_MAX 1024
#define VIGIL_MSG_MAX 2048

enum { OPT_CHECKS = 1, OPT_TIMING, OPT_HANG_TIME, OPT_HANG_ACTION, OPT_NOTIFY, OPT_WEBHOOK, OPT_COUNT };
enum { WATCH_OFF = 0, WATCH_AUTO, WATCH_CONFIG };

/* Plugin arguments from plugstack.conf. */
static struct {
	char config[VIGIL_PATH_MAX];
	char prolog[VIGIL_PATH_MAX];
	char watcher[VIGIL_PATH_MAX];
	char state_dir[VIGIL_PATH_MAX];
	char watch_log[VIGIL_PATH_MAX];
	int watch;
	int policy_timeout; /* seconds */
	int parsed;
	int args_rc; /* parse_args' result: -1 when an argument is unknown */
} cfg;

/* The job's option values, as given. */
static char values[OPT_COUNT][VIGIL_VALUE_MAX];
static int given[OPT_COUNT];

/* The watcher this extern step started, 0 when none. */
static pid_t watcher_pid;

/* Option names, and the job control variables (SPANK_<name> in the prolog). */
static const char *opt_names[OPT_COUNT] = {
	NULL, "vigil-checks", "vigil-timing", "vigil-hang-time", "vigil-hang-action",
	"vigil-notify", "vigil-webhook",
};
static const char *ctl_names[OPT_COUNT] = {
	NULL, "VIGIL_CHECKS", "VIGIL_TIMING", "VIGIL_HANG_TIME", "VIGIL_HANG_ACTION",
	"VIGIL_NOTIFY", "VIGIL_WEBHOOK",
};

static int opt_cb(int val, const char *optarg, int remote);

static struct spank_option options[] = {
	{ "vigil-checks", "LIST",
	  "Node checks vigil runs before this job: a comma-separated subset of "
	  "those the site allows, or 'none' to skip them (where allowed).",
	  1, OPT_CHECKS, opt_cb },
	{ "vigil-timing", "WHEN",
	  "When vigil checks the nodes: 'before' every start of the job, or "
	  "'after-requeue' only when it was requeued.",
	  1, OPT_TIMING, opt_cb },
	{ "vigil-hang-time", "DURATION",
	  "vigil-watch's hang detection window: minutes ('30') or a duration "
	  "('90s', '2h'); 'off' opts out of watching (where allowed).",
	  1, OPT_HANG_TIME, opt_cb },
	{ "vigil-hang-action", "ACTION",
	  "What vigil-watch does when the job hangs: notify, cancel, requeue, "
	  "or requeue-exclude (requeue without the hang's culprit hosts), "
	  "within the site's policy.",
	  1, OPT_HANG_ACTION, opt_cb },
	{ "vigil-notify", "LIST",
	  "How vigil tells you of a hang or of a node of this job that failed "
	  "its checks: 'mail', 'webhook' or both (comma-separated), or 'none' "
	  "(within the site's policy).",
	  1, OPT_NOTIFY, opt_cb },
	{ "vigil-webhook", "URL",
	  "The webhook vigil posts to for this job: one the site allows. "
	  "Without --vigil-notify it chooses the webhook.",
	  1, OPT_WEBHOOK, opt_cb },
	SPANK_OPTIONS_TABLE_END
};

/* ---------------------------------------------------------------------- */
/* Plugin arguments                                                        */

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src);
}

/*
 * parse_args reads the plugstack.conf arguments once; it returns -1 (every
 * time) when one of them is unknown or malformed, after saying which at
 * error level. slurm_spank_init then fails, so that a `required` plugin
 * refuses the job at sbatch, salloc and srun rather than run it with a
 * setting that was not meant (watch=sometimes would leave jobs unwatched).
 */
static int parse_args(int ac, char **av)
{
	int i, rc = 0;

	if (cfg.parsed)
		return cfg.args_rc;
	copy(cfg.config, sizeof(cfg.config), "/etc/vigil/vigil.toml");
	copy(cfg.prolog, sizeof(cfg.prolog), "/usr/local/bin/vigil-prolog");
	copy(cfg.watcher, sizeof(cfg.watcher), "/usr/local/bin/vigil-watch");
	copy(cfg.state_dir, sizeof(cfg.state_dir), "/run/vigil/spank");
	copy(cfg.watch_log, sizeof(cfg.watch_log), "%o/vigil-watch-%j-%n.log");
	cfg.watch = WATCH_OFF;
	cfg.policy_timeout = 10;
	for (i = 0; i < ac; i++) {
		const char *a = av[i];
		const char *eq = strchr(a, '=');
		const char *v = eq ? eq + 1 : "";
		size_t klen = eq ? (size_t)(eq - a) : strlen(a);

#define KEY(k) (klen == strlen(k) && strncmp(a, k, klen) == 0)
		if (KEY("config"))
			copy(cfg.config, sizeof(cfg.config), v);
		else if (KEY("prolog"))
			copy(cfg.prolog, sizeof(cfg.prolog), v);
		else if (KEY("watcher"))
			copy(cfg.watcher, sizeof(cfg.watcher), v);
		else if (KEY("state_dir"))
			copy(cfg.state_dir, sizeof(cfg.state_dir), v);
		else if (KEY("watch_log"))
			copy(cfg.watch_log, sizeof(cfg.watch_log), v);
		else if (KEY("policy_timeout") && atoi(v) > 0)
			cfg.policy_timeout = atoi(v);
		else if (KEY("watch") && strcmp(v, "off") == 0)
			cfg.watch = WATCH_OFF;
		else if (KEY("watch") && strcmp(v, "auto") == 0)
			cfg.watch = WATCH_AUTO;
		else if (KEY("watch") && strcmp(v, "config") == 0)
			cfg.watch = WATCH_CONFIG;
		else {
			slurm_error("vigil: plugstack.conf: unknown argument \"%s\" "
				    "(known: config= prolog= watcher= watch=off|auto|config "
				    "state_dir= watch_log= policy_timeout=SECONDS); "
				    "a required plugin refuses jobs until the line is fixed", a);
			rc = -1;
		}
#undef KEY
	}
	cfg.parsed = 1;
	cfg.args_rc = rc;
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Values                                                                  */

/*
 * check_value refuses what the plugin cannot carry: an empty value, or one
 * too long for its buffers. Everything else (the syntax of each option, the
 * policy) is vigil-prolog policy-check's: one parser per setting, in Go.
 */
static int check_value(const char *v, char *err, size_t errlen)
{
	if (!v || !*v) {
		snprintf(err, errlen, "a value is required");
		return -1;
	}
	if (strlen(v) >= VIGIL_VALUE_MAX) {
		snprintf(err, errlen, "value too long");
		return -1;
	}
	return 0;
}

/*
 * reason returns policy-check's message without the "--vigil-OPT=VALUE: "
 * its syntax errors start with, which the plugin's own message already says.
 */
static const char *reason(int val, const char *v, const char *msg)
{
	char prefix[VIGIL_VALUE_MAX + 64];
	size_t n;

	snprintf(prefix, sizeof(prefix), "--%s=%s: ", opt_names[val], v);
	n = strlen(prefix);
	return strncmp(msg, prefix, n) == 0 ? msg + n : msg;
}

/* ---------------------------------------------------------------------- */
/* Policy check on the submit host                                         */

static void trim(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * policy_check runs `vigil-prolog policy-check --config FILE --OPTION=VALUE`.
 * It returns 0 when the policy allows the value, 1 when it refuses it (msg
 * holds vigil-prolog's message), -2 when vigil-prolog is missing (or not
 * executable) at prolog= and -1 when the policy could not be checked for
 * another reason (msg says why).
 */
static int policy_check(int val, const char *v, char *msg, size_t msglen)
{
	int fds[2], status = 0;
	size_t len = 0;
	pid_t pid;
	double deadline;
	char arg[VIGIL_VALUE_MAX + 64];

	msg[0] = '\0';
	if (access(cfg.prolog, X_OK) != 0) {
		snprintf(msg, msglen, "%s: %s", cfg.prolog, strerror(errno));
		return -2;
	}
	snprintf(arg, sizeof(arg), "--%s=%s", opt_names[val] + strlen("vigil-"), v);
	if (pipe(fds) < 0) {
		snprintf(msg, msglen, "pipe: %s", strerror(errno));
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		snprintf(msg, msglen, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		char *argv[] = { cfg.prolog, "policy-check", "--config", cfg.config, arg, NULL };
		int nul = open("/dev/null", O_RDONLY);

		if (nul >= 0)
			dup2(nul, 0);
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	deadline = now_s() + cfg.policy_timeout;
	for (;;) {
		struct pollfd pfd = { .fd = fds[0], .events = POLLIN };
		int left = (int)((deadline - now_s()) * 1000);
		ssize_t n;

		if (left <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
			close(fds[0]);
			snprintf(msg, msglen, "%s policy-check did not answer within %d s",
				 cfg.prolog, cfg.policy_timeout);
			return -1;
		}
		if (poll(&pfd, 1, left) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (!(pfd.revents & (POLLIN | POLLHUP)))
			continue;
		if (len + 1 >= msglen) { /* full: drain */
			char sink[256];

			n = read(fds[0], sink, sizeof(sink));
		} else {
			n = read(fds[0], msg + len, msglen - len - 1);
			if (n > 0)
				len += n;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
	}
	msg[len] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	trim(msg);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
		return 1;
	if (!msg[0])
		snprintf(msg, msglen, "%s policy-check exited with status 0x%x", cfg.prolog, status);
	return -1;
}

/* ---------------------------------------------------------------------- */
/* Options                                                                 */

static int opt_cb(int val, const char *optarg, int remote)
{
	char err[VIGIL_MSG_MAX];

	if (val <= 0 || val >= OPT_COUNT)
		return -1;
	if (check_value(optarg, err, sizeof(err)) < 0) {
		slurm_error("vigil: --%s=%s: %s", opt_names[val], optarg ? optarg : "", err);
		return -1;
	}
	copy(values[val], sizeof(values[val]), optarg);
	given[val] = 1;
	if (remote)
		return 0;
	switch (policy_check(val, optarg, err, sizeof(err))) {
	case 0:
		break;
	case 1:
		slurm_error("vigil: --%s=%s: %s",
			    opt_names[val], optarg, reason(val, optarg, err));
		return -1;
	case -2:
		/* A broken install: say so where the user and the admin see it. */
		slurm_error("vigil: prolog=%s in plugstack.conf: the policy is not "
			    "checked on this host; the nodes apply it when the job "
			    "starts (install vigil-prolog there or fix prolog=)", err);
		return 0;
	default:
		/* policy-check could not run here (bad config, timeout): the
		 * nodes parse the value and apply the policy when the job runs. */
		slurm_verbose("vigil: policy not checked on this host (%s); "
			    "the nodes apply it when the job starts", err);
	}
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	int i;

	if (parse_args(ac, av) < 0 && (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR))
		/* Refused where the job is submitted, never on a node (no drain on a doubt). */
		return -1;
	if (ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR && ctx != S_CTX_REMOTE)
		return 0;
	if ((ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) && cfg.watch != WATCH_OFF &&
	    access(cfg.watcher, X_OK) != 0)
		/* The same line is on every node: the watcher will not start there either. */
		slurm_error("vigil: watcher=%s in plugstack.conf: %s: watch=%s "
			    "starts no vigil-watch where it is missing (install it or fix watcher=)",
			    cfg.watcher, strerror(errno),
			    cfg.watch == WATCH_AUTO ? "auto" : "config");
	for (i = 0; options[i].name; i++) {
		spank_err_t rc = spank_option_register(sp, &options[i]);

		if (rc != ESPANK_SUCCESS) {
			slurm_error("vigil: registering --%s: %s", options[i].name,
				    spank_strerror(rc));
			return -1;
		}
	}
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	uint32_t step = 0;
	int i;

	parse_args(ac, av);
	if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) {
		for (i = 1; i < OPT_COUNT; i++) {
			spank_err_t rc;

			if (!given[i])
				continue;
			rc = spank_job_control_setenv(sp, ctl_names[i], values[i], 1);
			if (rc != ESPANK_SUCCESS) {
				slurm_error("vigil: passing --%s to the prolog: %s",
					    opt_names[i], spank_strerror(rc));
				return -1;
			}
		}
		return 0;
	}
	if (ctx != S_CTX_REMOTE)
		return 0;
	if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
	    step == VIGIL_EXTERN_STEP)
		return 0;
	/* The job's steps: a watcher started by hand reads these. */
	if (given[OPT_HANG_TIME] && strcmp(values[OPT_HANG_TIME], "off") != 0)
		spank_setenv(sp, "VIGIL_HANG_DETECT_TIME", values[OPT_HANG_TIME], 1);
	if (given[OPT_HANG_ACTION])
		spank_setenv(sp, "VIGIL_HANG_ACTION", values[OPT_HANG_ACTION], 1);
	if (given[OPT_NOTIFY])
		spank_setenv(sp, "VIGIL_NOTIFY", values[OPT_NOTIFY], 1);
	if (given[OPT_WEBHOOK])
		spank_setenv(sp, "VIGIL_WEBHOOK_URL", values[OPT_WEBHOOK], 1);
	return 0;
}

/* ---------------------------------------------------------------------- */
/* Automatic watching: prolog hand-off, extern step, exit                  */

/* handoff_path is <state_dir>/job<ID>-<node>.env. */
static int handoff_path(char *buf, size_t n, const char *job, const char *node)
{
	int r;

	if (!job || !*job || !node || !*node || strchr(node, '/') || strchr(job, '/'))
		return -1;
	r = snprintf(buf, n, "%s/job%s-%s.env", cfg.state_dir, job, node);
	return (r < 0 || (size_t)r >= n) ? -1 : 0;
}

/* mkdir_p makes dir and its missing parents (the last one with mode). */
static int mkdir_p(const char *dir, mode_t mode)
{
	char buf[VIGIL_PATH_MAX];
	char *p;

	copy(buf, sizeof(buf), dir);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

/* Variables the prolog's environment hands to the watcher: {from, to}. */
static const char *handoff_vars[][2] = {
	{ "SPANK_VIGIL_HANG_TIME", "VIGIL_HANG_DETECT_TIME" },
	{ "SPANK_VIGIL_HANG_ACTION", "VIGIL_HANG_ACTION" },
	{ "SPANK_VIGIL_NOTIFY", "VIGIL_NOTIFY" },
	{ "SPANK_VIGIL_WEBHOOK", "VIGIL_WEBHOOK_URL" },
	{ "SLURM_CONF", "SLURM_CONF" },
	{ "SLURM_CLUSTER_NAME", "SLURM_CLUSTER_NAME" },
	{ "SLURM_JOB_USER", "SLURM_JOB_USER" },
	{ "SLURM_JOB_WORK_DIR", "SLURM_JOB_WORK_DIR" },
	{ "SLURM_JOB_STDOUT", "VIGIL_JOB_STDOUT" },
	{ "SLURM_JOB_PARTITION", "SLURM_JOB_PARTITION" },
	{ "SLURM_NODELIST", "SLURM_JOB_NODELIST" },
	{ "SLURM_JOB_GPUS", "SLURM_JOB_GPUS" },
	{ "CUDA_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES" },
	{ "SLURM_JOB_RESTART_COUNT", "SLURM_RESTART_COUNT" },
	{ NULL, NULL },
};

/*
 * The hand-off file holds one KEY=VALUE line per variable, KEY one of
 * handoff_vars' names. A value is handed over whole or not at all: one
 * with a newline, or longer than HANDOFF_VALUE_MAX, is left out (and
 * logged), and the reader takes a line of any length as one line, so that
 * no part of a long value is ever read as a variable of its own.
 */
#define HANDOFF_VALUE_MAX 32768

/* handoff_key reports whether k is a variable the hand-off carries. */
static int handoff_key(const char *k)
{
	int i;

	for (i = 0; handoff_vars[i][0]; i++)
		if (strcmp(k, handoff_vars[i][1]) == 0)
			return 1;
	return 0;
}

/* write_handoff writes the hand-off file at path from this environment. */
static int write_handoff(const char *path)
{
	char tmp[VIGIL_PATH_MAX + 8];
	FILE *f;
	int i, fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		slurm_error("vigil: %s: %m", tmp);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (i = 0; handoff_vars[i][0]; i++) {
		const char *v = getenv(handoff_vars[i][0]);

		if (!v || !*v)
			continue;
		if (strchr(v, '\n') || strlen(v) > HANDOFF_VALUE_MAX) {
			slurm_error("vigil: %s (%zu bytes) not handed to the watcher: it holds a newline or is longer than %d bytes",
				    handoff_vars[i][0], strlen(v), HANDOFF_VALUE_MAX);
			continue;
		}
		fprintf(f, "%s=%s\n", handoff_vars[i][1], v);
	}
	if (fclose(f) != 0 || rename(tmp, path) < 0) {
		slurm_error("vigil: writing %s: %m", path);
		unlink(tmp);
		return -1;
	}
	return 0;
}

/*
 * slurm_spank_job_prolog runs as root on each node before the extern step
 * starts. The extern step does not see the job's SPANK variables, so the
 * values the watcher needs are handed over in a root-only file.
 */
int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
	char path[VIGIL_PATH_MAX];

	(void)sp;
	parse_args(ac, av);
	if (cfg.watch == WATCH_OFF)
		return 0;
	if (handoff_path(path, sizeof(path), getenv("SLURM_JOB_ID"), getenv("SLURMD_NODENAME")) < 0)
		return 0;
	if (mkdir_p(cfg.state_dir, 0700) < 0) {
		slurm_error("vigil: mkdir %s: %m", cfg.state_dir);
		return 0;
	}
	write_handoff(path);
	return 0;
}

int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
	char path[VIGIL_PATH_MAX];

	(void)sp;
	parse_args(ac, av);
	if (cfg.watch != WATCH_OFF &&
	    handoff_path(path, sizeof(path), getenv("SLURM_JOB_ID"), getenv("SLURMD_NODENAME")) == 0)
		unlink(path);
	return 0;
}

/* A small environment for the watcher, built before fork. */
#define ENV_MAX 48
struct env {
	char *v[ENV_MAX + 1];
	int n;
};

static void env_set(struct env *e, const char *k, const char *v)
{
	size_t kl = strlen(k);
	int i;
	char *s;

	if (!v)
		return;
	if (asprintf(&s, "%s=%s", k, v) < 0)
		return;
	for (i = 0; i < e->n; i++) {
		if (strncmp(e->v[i], k, kl) == 0 && e->v[i][kl] == '=') {
			free(e->v[i]);
			e->v[i] = s;
			return;
		}
	}
	if (e->n < ENV_MAX) {
		e->v[e->n++] = s;
		e->v[e->n] = NULL;
	} else {
		free(s);
	}
}

static const char *env_get(struct env *e, const char *k)
{
	size_t kl = strlen(k);
	int i;

	for (i = 0; i < e->n; i++)
		if (strncmp(e->v[i], k, kl) == 0 && e->v[i][kl] == '=')
			return e->v[i] + kl + 1;
	return NULL;
}

static void env_free(struct env *e)
{
	int i;

	for (i = 0; i < e->n; i++)
		free(e->v[i]);
	e->n = 0;
}

/*
 * read_handoff loads the hand-off's KEY=VALUE lines into e, then removes
 * the file. A line is read whole whatever its length (getline); one that
 * is longer than the writer writes, holds a NUL byte or no '=', or whose
 * KEY is not a hand-off variable, is skipped whole.
 */
static void read_handoff(const char *path, struct env *e)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *eq = strchr(line, '=');

		if (n > HANDOFF_VALUE_MAX + 64 || !eq || strlen(line) != (size_t)n) {
			slurm_error("vigil: %s: a line of %zd bytes skipped", path, n);
			continue;
		}
		if (n > 0 && line[n - 1] == '\n')
			line[n - 1] = '\0';
		*eq = '\0';
		if (!handoff_key(line)) {
			slurm_error("vigil: %s: unexpected variable skipped", path);
			continue;
		}
		env_set(e, line, eq + 1);
	}
	free(line);
	fclose(f);
	unlink(path);
}

/*
 * output_dir is the directory of the batch job's standard output
 * (SLURM_JOB_STDOUT of the prolog, handed over as VIGIL_JOB_STDOUT; its
 * file name may still hold Slurm's %j patterns), relative paths taken from
 * workdir; workdir itself when there is none (an interactive job), when
 * the path has no directory, or when the directory holds a '%' pattern.
 */
static void output_dir(char *out, size_t n, const char *stdout_path, const char *workdir)
{
	const char *slash;
	int len;

	if (!stdout_path || !*stdout_path || !(slash = strrchr(stdout_path, '/'))) {
		copy(out, n, workdir);
		return;
	}
	len = (int)(slash - stdout_path);
	if (memchr(stdout_path, '%', (size_t)len)) {
		copy(out, n, workdir);
		return;
	}
	if (stdout_path[0] == '/')
		snprintf(out, n, "%.*s", len ? len : 1, stdout_path);
	else
		snprintf(out, n, "%s/%.*s", workdir, len, stdout_path);
}

/*
 * expand_log replaces %j (job), %n (node), %u (user), %w (work dir), %o
 * (the directory of the job's output), %%.
 */
static void expand_log(char *out, size_t n, const char *pat, const char *job,
		       const char *node, const char *user, const char *workdir, const char *outdir)
{
	size_t o = 0;
	const char *p;

	for (p = pat; *p && o + 1 < n; p++) {
		const char *sub = NULL;

		if (*p == '%' && p[1]) {
			switch (p[1]) {
			case 'j': sub = job; break;
			case 'n': sub = node; break;
			case 'u': sub = user; break;
			case 'w': sub = workdir; break;
			case 'o': sub = outdir; break;
			case '%': sub = "%"; break;
			}
		}
		if (sub) {
			o += snprintf(out + o, n - o, "%s", sub);
			if (o >= n)
				o = n - 1;
			p++;
			continue;
		}
		out[o++] = *p;
	}
	out[o] = '\0';
}

/*
 * job_cgroups lists the job-level cgroup directories (.../job_<id>) of the
 * cgroup v1 controllers in which this slurmstepd sits, at the job's level
 * or in its extern step, and, on cgroup v2, a leaf of the job's own beside
 * its steps (.../job_<id>/vigil_watch, made here: a v2 process lives in a
 * leaf). The watcher moves itself there, out of the extern step: the
 * moment the step's sleep dies on the job's SIGTERM, slurmstepd SIGKILLs
 * every process of the step's cgroup, before it calls slurm_spank_exit,
 * which would leave the watcher no time to send the digest of a job that
 * failed. slurm_spank_exit ends it instead, and then removes the
 * directories (the v2 leaf, then its job directory) that Slurm could not
 * remove while it ran.
 */
#define CG_MAX 16
#define CG_V2_LEAF "/vigil_watch"
static char job_cgs[CG_MAX][VIGIL_PATH_MAX];
static int njob_cgs;

/*
 * job_cgroups_in reads /proc/PID/cgroup lines from f; mnt is where the
 * cgroup file systems are mounted (/sys/fs/cgroup).
 */
static int job_cgroups_in(FILE *f, const char *mnt, uint32_t job, char paths[CG_MAX][VIGIL_PATH_MAX])
{
	char line[VIGIL_PATH_MAX], comp[64];
	int n = 0;
	size_t cl;

	cl = snprintf(comp, sizeof(comp), "/job_%u", job);
	while (n < CG_MAX && fgets(line, sizeof(line), f)) {
		char *ctl, *path, *c, *at;
		int v2;

		trim(line);
		ctl = strchr(line, ':');
		if (!ctl)
			continue;
		ctl++;
		path = strchr(ctl, ':');
		if (!path)
			continue;
		v2 = path == ctl; /* cgroup v2: "0::/..." */
		*path++ = '\0';
		for (at = strstr(path, comp); at; at = strstr(at + 1, comp))
			if (at[cl] == '\0' || at[cl] == '/')
				break;
		if (!at)
			continue;
		at[cl] = '\0';
		if (v2) {
			if (snprintf(paths[n], VIGIL_PATH_MAX, "%s%s" CG_V2_LEAF, mnt, path) >= VIGIL_PATH_MAX)
				continue;
			if (mkdir(paths[n], 0755) < 0 && errno != EEXIST)
				continue;
		} else {
			if ((c = strchr(ctl, ','))) /* comounted: the first name is mounted too */
				*c = '\0';
			if (strncmp(ctl, "name=", 5) == 0)
				continue;
			snprintf(paths[n], VIGIL_PATH_MAX, "%s/%s%s", mnt, ctl, path);
		}
		if (access(paths[n], W_OK) == 0)
			n++;
	}
	return n;
}

static int job_cgroups(uint32_t job, char paths[CG_MAX][VIGIL_PATH_MAX])
{
	FILE *f = fopen("/proc/self/cgroup", "re");
	int n;

	if (!f)
		return 0;
	n = job_cgroups_in(f, "/sys/fs/cgroup", job, paths);
	fclose(f);
	return n;
}

/* rmdir_job_cgroups removes the directories job_cgroups listed or made. */
static void rmdir_job_cgroups(char paths[CG_MAX][VIGIL_PATH_MAX], int n)
{
	size_t ll = strlen(CG_V2_LEAF);
	int i;

	for (i = 0; i < n; i++) {
		size_t l = strlen(paths[i]);

		rmdir(paths[i]);
		if (l > ll && strcmp(paths[i] + l - ll, CG_V2_LEAF) == 0) {
			paths[i][l - ll] = '\0';
			rmdir(paths[i]);
		}
	}
}

/* write_pid writes pid in decimal to dir's cgroup.procs (async-signal-safe). */
static void write_pid(const char *dir, pid_t pid)
{
	char buf[24], path[VIGIL_PATH_MAX + 16];
	int i = sizeof(buf), fd;
	size_t n = strlen(dir);

	if (n + sizeof("/cgroup.procs") > sizeof(path))
		return;
	memcpy(path, dir, n);
	memcpy(path + n, "/cgroup.procs", sizeof("/cgroup.procs"));
	fd = open(path, O_WRONLY);

	if (fd < 0)
		return;
	buf[--i] = '\n';
	do {
		buf[--i] = '0' + pid % 10;
		pid /= 10;
	} while (pid > 0 && i > 0);
	if (write(fd, buf + i, sizeof(buf) - i) < 0) {
		/* best effort: slurm_spank_exit still stops the watcher */
	}
	close(fd);
}

/*
 * start_watcher forks vigil-watch for this node of the job, as the job's
 * user, in a session of its own. Everything that is not async-signal-safe
 * (user and group lookups, the environment, paths) is done before fork.
 */
static void start_watcher(spank_t sp)
{
	uid_t uid;
	gid_t gid;
	uint32_t job = 0, restarts = 0;
	const char *node = getenv("SLURMD_NODENAME");
	char jobs[32], uids[32], gids[32], rs[32];
	char path[VIGIL_PATH_MAX], logpath[VIGIL_PATH_MAX], outdir[VIGIL_PATH_MAX];
	char pwbuf[4096];
	struct passwd pw, *pwp = NULL;
	gid_t groups[256];
	int ngroups = 256;
	struct env e = { .n = 0 };
	const char *workdir;
	char user[256] = "";
	struct stat st;
	char *argv[4];
	int argc = 0, ncg, i;
	pid_t parent = getpid(), pid;

	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS) {
		slurm_error("vigil: extern step: cannot read the job's ids; not starting vigil-watch");
		return;
	}
	spank_get_item(sp, S_SLURM_RESTART_COUNT, &restarts);
	snprintf(jobs, sizeof(jobs), "%u", job);
	snprintf(uids, sizeof(uids), "%u", (unsigned)uid);
	snprintf(gids, sizeof(gids), "%u", (unsigned)gid);
	snprintf(rs, sizeof(rs), "%u", restarts);
	if (!node || !*node) {
		slurm_error("vigil: extern step: SLURMD_NODENAME is not set; not starting vigil-watch");
		return;
	}
	if (handoff_path(path, sizeof(path), jobs, node) == 0)
		read_handoff(path, &e);

	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &pwp) != 0 || !pwp)
		pwp = NULL;
	if (env_get(&e, "SLURM_JOB_USER"))
		copy(user, sizeof(user), env_get(&e, "SLURM_JOB_USER"));
	else if (pwp)
		copy(user, sizeof(user), pwp->pw_name);
	if (pwp) {
		if (getgrouplist(pwp->pw_name, gid, groups, &ngroups) < 0)
			ngroups = 0;
	} else {
		ngroups = 0;
	}
	env_set(&e, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	if (pwp) {
		env_set(&e, "HOME", pwp->pw_dir);
		env_set(&e, "USER", pwp->pw_name);
		env_set(&e, "LOGNAME", pwp->pw_name);
	}
	env_set(&e, "SLURM_JOB_ID", jobs);
	env_set(&e, "SLURM_JOBID", jobs);
	env_set(&e, "SLURM_JOB_UID", uids);
	env_set(&e, "SLURM_JOB_GID", gids);
	if (user[0])
		env_set(&e, "SLURM_JOB_USER", user);
	env_set(&e, "SLURMD_NODENAME", node);
	env_set(&e, "SLURM_STEP_ID", "extern");
	if (!env_get(&e, "SLURM_RESTART_COUNT"))
		env_set(&e, "SLURM_RESTART_COUNT", rs);
	env_set(&e, "VIGIL_SPANK_WATCH", cfg.watch == WATCH_AUTO ? "auto" : "config");
	workdir = env_get(&e, "SLURM_JOB_WORK_DIR");
	if (!workdir || !*workdir)
		workdir = pwp ? pwp->pw_dir : "/";
	output_dir(outdir, sizeof(outdir), env_get(&e, "VIGIL_JOB_STDOUT"), workdir);
	expand_log(logpath, sizeof(logpath), cfg.watch_log, jobs, node,
		   user[0] ? user : uids, workdir, outdir);

	ncg = njob_cgs = job_cgroups(job, job_cgs);

	argv[argc++] = cfg.watcher;
	if (stat(cfg.config, &st) == 0) {
		argv[argc++] = "--config";
		argv[argc++] = cfg.config;
	}
	argv[argc] = NULL;
	if (access(cfg.watcher, X_OK) != 0) {
		slurm_error("vigil: %s: %m; not starting vigil-watch for job %s", cfg.watcher, jobs);
		env_free(&e);
		return;
	}

	pid = fork();
	if (pid < 0) {
		slurm_error("vigil: fork: %m; not starting vigil-watch for job %s", jobs);
		env_free(&e);
		return;
	}
	if (pid == 0) {
		sigset_t all;
		int fd, sig;
		long maxfd;

		/* Async-signal-safe calls only from here on. */
		for (i = 0; i < ncg; i++)
			write_pid(job_cgs[i], getpid());
		setsid();
		sigemptyset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		for (sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				signal(sig, SIG_DFL);
		if (setgroups(ngroups, groups) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
			_exit(126);
		if (uid != 0 && setuid(0) == 0) /* privileges must be gone for good */
			_exit(126);
		/* Die with the extern step, should it go first. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(0);
		if (chdir(workdir) < 0 && chdir("/") < 0)
			_exit(126);
		fd = open("/dev/null", O_RDONLY);
		if (fd >= 0 && fd != 0) {
			dup2(fd, 0);
			close(fd);
		}
		fd = open(logpath, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd < 0)
			fd = open("/dev/null", O_WRONLY);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			if (fd > 2)
				close(fd);
		}
		maxfd = sysconf(_SC_OPEN_MAX);
		if (maxfd < 0 || maxfd > 65536)
			maxfd = 65536;
		for (fd = 3; fd < maxfd; fd++)
			close(fd);
		execve(argv[0], argv, e.v);
		_exit(127);
	}
	watcher_pid = pid;
	slurm_info("vigil: started vigil-watch (pid %d) for job %s on %s as uid %u, log %s",
		   (int)pid, jobs, node, (unsigned)uid, logpath);
	env_free(&e);
}

/*
 * In the extern step (PrologFlags=Contain), slurm_spank_task_post_fork runs
 * once, after the step's cgroups exist: start the watcher there.
 */
int slurm_spank_task_post_fork(spank_t sp, int ac, char **av)
{
	uint32_t step = 0;

	parse_args(ac, av);
	if (cfg.watch == WATCH_OFF || !spank_remote(sp) || watcher_pid > 0)
		return 0;
	if (spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
	    step != VIGIL_EXTERN_STEP)
		return 0;
	start_watcher(sp);
	return 0;
}

/*
 * VIGIL_WATCH_END_WAIT is how long slurm_spank_exit waits, in 50 ms steps,
 * for the watcher to end once told to: it reads the job's output once
 * more, and the coordinator sends the digest of a job that failed, within
 * vigil-watch's own bound of 15 s (loop.FinishTimeout). 20 s, inside
 * Slurm's KillWait default of 30 s, after which slurmd gives up on the step.
 */
#define VIGIL_WATCH_END_WAIT 400

/*
 * slurm_spank_exit stops the watcher when the extern step ends (its sleep
 * is gone: the job is ending), then removes the job's cgroup directories
 * that Slurm's clean-up left because the watcher was in them (rmdir
 * removes only an empty cgroup).
 */
int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	int i, status;

	(void)sp;
	(void)ac;
	(void)av;
	if (watcher_pid <= 0)
		return 0;
	kill(-watcher_pid, SIGTERM);
	kill(watcher_pid, SIGTERM);
	for (i = 0; i < VIGIL_WATCH_END_WAIT; i++) {
		pid_t r = waitpid(watcher_pid, &status, WNOHANG);

		if (r == watcher_pid || (r < 0 && errno == ECHILD))
			break;
		usleep(50000);
	}
	if (i == VIGIL_WATCH_END_WAIT) {
		slurm_error("vigil: vigil-watch (pid %d) still running %d s after SIGTERM; killing it",
			    (int)watcher_pid, VIGIL_WATCH_END_WAIT / 20);
		kill(-watcher_pid, SIGKILL);
		kill(watcher_pid, SIGKILL);
		waitpid(watcher_pid, &status, 0);
	}
	watcher_pid = 0;
	rmdir_job_cgroups(job_cgs, njob_cgs);
	njob_cgs = 0;
	return 0;
}

#ifdef VIGIL_SPANK_SELFTEST
/*
 * A test driver (not part of the plugin): `selftest OPTION VALUE` prints
 * "ok" or the plugin's own error, and `selftest reason OPTION VALUE MSG`
 * the part of policy-check's message the plugin shows, so the little C
 * that handles values is tested without Slurm; `selftest handoff-write PATH`
 * writes the hand-off file from the environment and `selftest handoff-read
 * PATH` prints the variables the watcher would get from it; `selftest
 * job-cgroups FILE MNT JOB` prints the cgroups job_cgroups_in finds (or
 * makes) for JOB from FILE's /proc/PID/cgroup lines under MNT, then
 * removes them as slurm_spank_exit does.
 * Build: gcc -DVIGIL_SPANK_SELFTEST -o selftest vigil_spank.c
 */
int main(int argc, char **argv)
{
	char err[VIGIL_MSG_MAX];
	int i;

	if (argc == 5 && strcmp(argv[1], "reason") == 0) {
		for (i = 1; i < OPT_COUNT; i++)
			if (strcmp(argv[2], opt_names[i]) == 0) {
				printf("%s\n", reason(i, argv[3], argv[4]));
				return 0;
			}
		return 2;
	}
	if (argc == 3 && strcmp(argv[1], "handoff-write") == 0)
		return write_handoff(argv[2]) < 0;
	if (argc == 3 && strcmp(argv[1], "handoff-read") == 0) {
		struct env e = { .n = 0 };

		read_handoff(argv[2], &e);
		for (i = 0; i < e.n; i++)
			printf("%s\n", e.v[i]);
		env_free(&e);
		return 0;
	}
	if (argc == 5 && strcmp(argv[1], "job-cgroups") == 0) {
		char paths[CG_MAX][VIGIL_PATH_MAX];
		FILE *f = fopen(argv[2], "re");
		int n;

		if (!f)
			return 1;
		n = job_cgroups_in(f, argv[3], (uint32_t)strtoul(argv[4], NULL, 10), paths);
		fclose(f);
		for (i = 0; i < n; i++)
			printf("%s\n", paths[i]);
		rmdir_job_cgroups(paths, n);
		return 0;
	}
	if (argc != 3)
		return 2;
	for (i = 1; i < OPT_COUNT; i++) {
		if (strcmp(argv[1], opt_names[i]) != 0)
			continue;
		if (check_value(argv[2], err, sizeof(err)) < 0) {
			printf("error: %s\n", err);
			return 1;
		}
		printf("ok\n");
		return 0;
	}
	return 2;
}

/* Stand-ins for the symbols slurmd, slurmstepd and the clients provide. */
void slurm_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
void slurm_info(const char *fmt, ...) { (void)fmt; }
void slurm_verbose(const char *fmt, ...) { (void)fmt; }
spank_err_t spank_option_register(spank_t sp, struct spank_option *o) { (void)sp; (void)o; return ESPANK_SUCCESS; }
const char *spank_strerror(spank_err_t e) { (void)e; return ""; }
spank_context_t spank_context(void) { return S_CTX_ERROR; }
int spank_remote(spank_t sp) { (void)sp; return 0; }
spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...) { (void)sp; (void)item; return ESPANK_ERROR; }
spank_err_t spank_setenv(spank_t sp, const char *k, const char *v, int o) { (void)sp; (void)k; (void)v; (void)o; return ESPANK_SUCCESS; }
spank_err_t spank_job_control_setenv(spank_t sp, const char *k, const char *v, int o) { (void)sp; (void)k; (void)v; (void)o; return ESPANK_SUCCESS; }
#endif
