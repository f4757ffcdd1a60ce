package main

// The text of vigil-watch --help and vigil-watch replay --help.

const watchHelp = `NAME
    vigil-watch - tell a Slurm job that it has hung, and why

SYNOPSIS
    vigil-watch [OPTIONS]
    vigil-watch replay [OPTIONS] FILE... (- for standard input)
    vigil-watch --config FILE replay [OPTIONS] FILE...
    vigil-watch rules test [--config FILE] [--kmsg] [--nodes N,...] [--all] FILE...
    vigil-watch rules list [--config FILE]
    vigil-watch ras-query [ADDR]

DESCRIPTION
    vigil-watch runs inside a job as one task per node and samples the job on
    its node every period: the I/O of every process of the job (/proc/PID/io),
    the job's CPU time and processes, and each accelerator's utilisation, memory
    and power. It leaves its own job step out.

    The rule: a node is suspect when the job's I/O on it progressed less than
    --io-bytes over the whole window, and hung when its resource usage over
    the window is flat too (every accelerator steady, at 100% with low power or
    idle at 0%, and the CPU steady). Gaps in the samples and unreadable files
    never by themselves make a node hung; progress makes it recover.

    When: the window always covers the last --window of samples, so a job
    that stops making progress is reported one window after its last
    progress, however long it has run. --grace protects a slow start: no
    verdict comes before the job is --grace old. The first verdict is
    possible at the longer of grace and window after the watcher starts
    (defaults: grace 10m, window 30m, so 30 minutes; a job that stalls after
    an hour is reported 30 minutes after it stalled, not an hour). A start
    that makes progress within the grace is never reported. The start-up log
    line and each event's evidence (first_verdict, grace_s, window_s) say
    when the first verdict can come.

    Sooner, for jobs that say how they go. A job that prints progress lines
    ("epoch 3 step 1500", "iteration 1200/100000", ...) has a pulse: once 5
    beats are seen (polls of its output with a progress line), a silence of
    max(3 x the median interval, 2m) with every node's I/O and usage flat
    since the next line was due is a hang, named then (for a line a minute:
    about 3 minutes after the last one; pulse_factor, pulse_floor,
    pulse_beats). Strong evidence (a fault XID or uncorrectable ECC error, a
    collective timeout, an NCCL transport error, a rank's processes gone or
    stopped while its peers' run, NCCL's RAS naming ranks dead) followed by
    3 flat periods on every node is one too (confirm_periods). A checkpoint
    that writes, an evaluation that keeps the devices busy or a compile
    before the devices are used is none. The digest, the report, the
    comment and the notifications say how the hang was detected (window,
    pulse, evidence, ras) and how long after the last progress line.

    On a job of several nodes the watchers meet (MUNGE-sealed, on one of four
    ports of --port to --port+999 picked by a hash of the job id): the watcher on the first node in sorted order coordinates,
    gets every node's summary each period (state, reading, matched lines of
    the job's output and kernel log), and alone announces one digest per hang
    of the job (cause, culprit hosts, hint); if it stops, the next node takes
    over. A lone watcher (one node, --port 0, no MUNGE) acts for its node:
    on a hang it logs one line, writes a JSON report, updates the job's comment,
    and notifies (webhook, mail) once per hang episode; it cancels or requeues
    the job only when asked to (--action). --action requeue-exclude requeues
    the hung job without the hang's culprit hosts (scontrol requeuehold,
    ExcNodeList = the job's own exclusions and the culprits, release), while
    its partition keeps enough usable nodes for it without them; a digest
    without culprits, or one whose trouble looks like the job's own, is
    requeued as it is. The comment, report, webhook and mail say what was
    done ("requeued without n3"). It prints every event as one JSON
    line on standard output (log lines go to standard error) and exits 0 on
    SIGTERM or when the job's cgroup leaves the node. (When a batch script
    ends, Slurm kills the remaining steps, this one included.)

    A job that fails rather than hangs (a rank killed, one that left a
    collective early, a device or network error that took the job down)
    gets a digest too, as the job ends: on SIGTERM each watcher reads the
    job's output once more, and the coordinator (or the lone watcher on the
    batch host) sends one digest of event "failed" naming the rank that
    failed first, and whether it looks like the cluster's or the job's own,
    to a report, the webhook and mail (Slurm keeps no comment on a finished
    job); the members write their reports from the coordinator's farewell,
    and the epilog re-checks the culprits of a failure that looks like the
    cluster's.

    One watcher per job and node: a second vigil-watch of the same job on
    the same node (the site's SPANK plugin started one with watch=auto, and
    the batch script has an srun ... vigil-watch line too) logs which one
    watches and exits 0 without acting. Where the site starts watchers, set
    the job's options with --vigil-hang-time and friends instead.

    The watchers meet at the addresses Slurm has for the job's nodes
    (NodeAddr, one scontrol show node call; --node-addrs overrides), so
    node names need not resolve. A meeting that was wanted and failed is a
    warning with the reason.

    When the flags, environment or config are not valid (exit 2) inside a
    job, the job's comment says "vigil: not watching: WHY" and the batch
    host appends the same to the job's standard error file.

    vigil-watch replay runs the rule offline over traces recorded with
    --record (one file per host, merged by time; - reads standard input) and
    prints one JSON line per event, to tune the thresholds on your own jobs.
    It acts on nothing.

    While a node is suspect or hung, or the job may be hung (its progress
    lines silent for twice their cadence, strong evidence pending),
    vigil-watch asks NCCL's own RAS service of the job (NCCL 2.24 and
    later: NCCL_RAS_ADDR, else localhost:28028; nothing when
    NCCL_RAS_ENABLE=0) at most once per period, and records its answer
    (stream "ras") as evidence for the digest: dead or unresponsive ranks,
    ranks behind in collectives; dead ranks are strong evidence. A port
    that is not NCCL's is asked once. vigil-watch ras-query [ADDR] asks it
    once (within 5 s) and prints the parsed answer as one JSON line: exit 0,
    or 1 when nothing or something else answered.
`

const watchHelpTail = `
    Precedence: flags, then the environment, then the [watch] section of the
    config file, then the defaults.

ENVIRONMENT
    VIGIL_HANG_DETECT_TIME
        The job's own hang window: minutes as a bare number ("45") or a
        Go duration ("90s", "2h"). --window overrides it. The [policy]
        section of the config bounds it (min_hang_time, max_hang_time).
        A window shorter than the start-up grace cuts the grace to it
        (--grace overrides).
    VIGIL_HANG_ACTION
        The job's action on a hang: notify, cancel, requeue or
        requeue-exclude, when [policy] hang_actions allows it. --action overrides it. vigil's SPANK plugin
        sets both from --vigil-hang-time and --vigil-hang-action.
    VIGIL_NOTIFY, VIGIL_WEBHOOK_URL
        The job's own notification choice (mail, webhook, none) and webhook,
        from --vigil-notify and --vigil-webhook: added to --webhook-url and [watch] mail,
        when [policy] notify and webhooks allow them; anything else is
        dropped with a log line.
    SLURM_JOB_ID, SLURM_JOB_UID, SLURM_JOB_USER, SLURMD_NODENAME, SLURM_STEP_ID,
    SLURM_RESTART_COUNT
        Set by Slurm in the job step; they name the job, its user (mail), this
        node, the watcher's own step (left out of the samples) and the job's
        restart count (--max-requeues).

FILES
    /etc/vigil/vigil.toml
        Config file; keys of [watch]: window, period, grace, io_bytes,
        min_coverage, util_stddev, power_stddev_w, busy_power_w,
        mem_change_mib, high_util, idle_util, cpu_stddev_cores,
        cpu_stddev_fraction, cpu_idle_cores, cpu_spin_is_hang,
        unused_mem_mib, pulse_factor, pulse_floor, pulse_beats,
        confirm_periods, straggler_window, action,
        max_requeues, webhook_timeout, webhook_attempts, mail,
        mail_prog, comment, report_dir, slurm_bin_dir, port, munge_socket,
        takeover_periods. The file names no webhook (every user reads it;
        [watch] webhook_url is an error): the watcher posts to the job's own
        (--webhook-url, --vigil-webhook), and vigil-epilog forwards the job's
        hang digest to the admins' [notify] webhook_url (secrets file).
    REPORT_DIR/vigil-hang-JOB-NODE-TIME.json
        One report per hang: what was flat, since when, the evidence, culprits.
    REPORT_DIR/vigil-hang-JOB-NODE-TIME.html
        The same hang as one self-contained page: the digest on top, one
        chart per host (I/O, CPU, device utilisation and power), culprits
        framed. The report's "html" names it.

EXAMPLES
    In a batch script, before the training starts:

        #!/bin/bash
        #SBATCH --nodes=4 --gpus-per-node=8
        export VIGIL_HANG_DETECT_TIME=20          # minutes
        srun --overlap --ntasks-per-node=1 vigil-watch &
        srun python train.py

    The same, with a webhook and the watcher's log in a file per node:

        srun --overlap --ntasks-per-node=1 --error=vigil-%j-%N.log vigil-watch \
            --webhook-url https://hooks.slack.com/services/T000/B000/XXXX &

    Record the samples, then tune the window offline:

        srun --overlap --ntasks-per-node=1 vigil-watch --record trace-%j-%N.jsonl &
        ...
        vigil-watch replay --window 10m trace-1234-*.jsonl

    Requeue a hung job at most twice, without doing it yet:

        vigil-watch --action requeue --max-requeues 2 --dry-run

    Restart a hung job (sbatch --requeue) on healthy nodes, without the
    hosts its hang's digest blames:

        vigil-watch --action requeue-exclude

EXIT STATUS
    0 SIGTERM or SIGINT, or the job's cgroup left the node; replay finished
    1 vigil-watch could not run (not inside a job, unreadable trace ...)
    2 bad flags, environment or config
`

const replayHelp = `NAME
    vigil-watch replay - run the hang rule offline over recorded traces

SYNOPSIS
    vigil-watch replay [OPTIONS] FILE...
    vigil-watch replay [OPTIONS] -

DESCRIPTION
    Reads traces written by vigil-watch --record (one JSON line per host per
    sample): one file per host, as --record %N writes them, or files of many
    hosts, each in time order; - reads standard input. The files are merged
    by time, so several files give the same events as one file of their
    sorted lines. It runs the same detector as the watcher and prints one
    JSON line per event: suspect, hung or recovered, with the evidence (and,
    for several hosts, the likely culprit hosts). It acts on nothing;
    VIGIL_HANG_DETECT_TIME is not read. Use it to tune the [watch]
    thresholds on your own jobs.

    No verdict comes before a host's samples of a job span the longer of
    --grace and --window. When no host's samples are that long, replay says
    so on standard error, e.g. "trace covers 29m; first verdict needs 30m of
    one host's samples (the longer of grace 10m and window 30m)".

    --html FILE also writes the replay as one HTML page that loads nothing
    from outside: the digests (cause, hint, culprit hosts) and each host's
    latest event on top, then one chart per host of its I/O rate, CPU,
    device utilisation and power over the window before the first hung
    verdict, with the events marked and the culprit hosts highlighted.

EXAMPLES
    vigil-watch replay --window 20m --period 60s trace-1234-*.jsonl | jq -c 'select(.event=="hung")'
    zcat trace-1234-gpu07.jsonl.gz | vigil-watch replay --window 20m -
    vigil-watch replay --html hang-1234.html trace-1234-*.jsonl > events-1234.jsonl
`
