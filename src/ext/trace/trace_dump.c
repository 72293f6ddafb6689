/* The flight recorder's dump (docs/api/trace.md#the-file-format): every ring of the process into
 * one JSON-lines file, written whole to a temporary file and renamed over the old one.
 *
 * The writer is C from end to end: it takes no thread state and no GIL, so it runs on a thread of
 * its own (for SIGUSR1 and after a library error), at exit, and under dump_trace() with the GIL
 * released. A snapshot holds the ring list's lock only while it copies the entries. Nothing here
 * raises into the program: a failed write is reported once on stderr. */
#include "trace/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buffer/buffer.h"
#include "loader/loader.h"
#include "module/errors.h"

enum { WANT_SIGNAL = 1, WANT_ERROR = 2 };

static pthread_mutex_t dump_mu = PTHREAD_MUTEX_INITIALIZER; /* one writer at a time */
static pthread_mutex_t service_mu = PTHREAD_MUTEX_INITIALIZER;
static int service_running;    /* the writer thread exists in this process (service_mu) */
static int service_once;       /* handler and exit hook installed (service_mu) */
static sem_t wake;
static int wanted;             /* WANT_* bits, set by the handler and nx_trace_error (atomic) */
static int errors_seen;        /* a library error was raised in this process (atomic) */
static int failure_logged;     /* atomic */
static int exiting;            /* the exit snapshot is written: the thread writes no other (dump_mu) */
static char last_error[512];   /* the text of the last library error (error_mu) */
static pthread_mutex_t error_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---- text ---- */

static void put_string(FILE *f, const char *s)
{
    if (s == NULL) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void put_int_or_null(FILE *f, int present, long long v)
{
    if (present)
        fprintf(f, "%lld", v);
    else
        fputs("null", f);
}

static void put_u64_or_null(FILE *f, int present, uint64_t v)
{
    if (present)
        fprintf(f, "%llu", (unsigned long long)v);
    else
        fputs("null", f);
}

static const char *const redop_names[] = {"sum", "prod", "max", "min", "avg"};
static const char *const origin_names[] = {"init", "split", "shrink", "grow"};

/* The first of the environment variables that is an integer (>= 0), else -1. */
static long env_int(const char *const *names)
{
    for (; *names != NULL; names++) {
        const char *v = getenv(*names);
        char *end;
        if (v == NULL || *v == '\0')
            continue;
        long n = strtol(v, &end, 10);
        if (*end == '\0' && n >= 0)
            return n;
    }
    return -1;
}

static const char *job_id(void)
{
    static const char *const names[] = {"NCCL4PY_TRACE_JOB", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", NULL};
    for (const char *const *n = names; *n != NULL; n++) {
        const char *v = getenv(*n);
        if (v != NULL && *v != '\0')
            return v;
    }
    return NULL;
}

/* ---- the lines ---- */

static void put_header(FILE *f, const nx_trace_snapshot *s, long rank, long world, const char *reason,
                       const char *error)
{
    char host[256] = {0};
    if (gethostname(host, sizeof host - 1) != 0)
        host[0] = '\0';
    fputs("{\"format\": \"nccl4py-trace\", \"version\": 1, \"job\": ", f);
    put_string(f, job_id());
    fputs(", \"rank\": ", f);
    put_int_or_null(f, rank >= 0, rank);
    fputs(", \"world_size\": ", f);
    put_int_or_null(f, world > 0, world);
    fprintf(f, ", \"pid\": %ld, \"host\": ", (long)getpid());
    put_string(f, host);
    fputs(", \"reason\": ", f);
    put_string(f, reason);
    fputs(", \"error\": ", f);
    put_string(f, error);
    double resolution;
    const char *clock = nx_trace_clock_name(&resolution);
    fprintf(f, ", \"wall\": %.6f, \"monotonic\": %.6f, \"clock\": \"%s\", \"resolution\": %.9f, \"buffer\": %ld, "
            "\"library\": ", s->wall1, s->mono1, clock, resolution, nx_trace_default_size());
    put_string(f, nx_loader_ready() ? nx_loader_info()->path : NULL);
    fputs("}\n", f);
}

static void put_comm(FILE *f, const nx_trace_ring_copy *c)
{
    fprintf(f, "{\"type\": \"comm\", \"comm\": \"%016llx\", \"rank\": ", (unsigned long long)c->id);
    put_int_or_null(f, c->rank >= 0, c->rank);
    fputs(", \"nranks\": ", f);
    put_int_or_null(f, c->nranks > 0, c->nranks);
    if (c->has_parent)
        fprintf(f, ", \"parent\": \"%016llx\"", (unsigned long long)c->parent);
    else
        fputs(", \"parent\": null", f);
    int split = c->origin == NX_ORIGIN_SPLIT;
    fputs(", \"color\": ", f);
    put_int_or_null(f, split && c->color != NCCL_SPLIT_NOCOLOR, c->color);
    fputs(", \"key\": ", f);
    put_int_or_null(f, split, c->key);
    fprintf(f, ", \"origin\": \"%s\", \"recorded\": %llu, \"dropped\": %llu}\n", origin_names[c->origin],
            (unsigned long long)c->recorded, (unsigned long long)(c->recorded - c->n));
}

static void put_entry(FILE *f, const nx_trace_snapshot *s, const nx_trace_ring_copy *c, const nx_trace_entry *e)
{
    char dtype[16] = "";
    const char *file, *func;
    int line;
    nx_trace_site_get(e->site, &file, &line, &func);
    fprintf(f, "{\"type\": \"op\", \"comm\": \"%016llx\", \"seq\": %llu, \"coll\": %llu, \"op\": \"%s\", \"count\": ",
            (unsigned long long)c->id, (unsigned long long)(e->stamp / 2), (unsigned long long)e->coll,
            nx_trace_op_name(e->call.op));
    put_u64_or_null(f, e->call.flags & NX_TF_COUNT, e->call.count);
    fputs(", \"dtype\": ", f);
    if (e->call.flags & NX_TF_DTYPE) {
        const char *n = nx_dtype_name((ncclDataType_t)e->call.dtype);
        for (size_t i = 0; n[i] != '\0' && i + 1 < sizeof dtype; i++)
            dtype[i] = (char)(n[i] >= 'A' && n[i] <= 'Z' ? n[i] - 'A' + 'a' : n[i]);
        put_string(f, dtype);
    } else {
        fputs("null", f);
    }
    fputs(", \"redop\": ", f);
    if (!(e->call.flags & NX_TF_REDOP))
        fputs("null", f);
    else if (e->call.redop >= 0 && e->call.redop < 5)
        fprintf(f, "\"%s\"", redop_names[e->call.redop]);
    else
        fprintf(f, "\"custom:%d\"", e->call.redop);
    fputs(", \"root\": ", f);
    put_int_or_null(f, e->call.flags & NX_TF_ROOT, e->call.rank);
    fputs(", \"peer\": ", f);
    put_int_or_null(f, e->call.flags & NX_TF_PEER, e->call.rank);
    fputs(", \"group\": ", f);
    put_int_or_null(f, e->group != 0, e->group);
    fputs(", \"stream\": ", f);
    put_u64_or_null(f, e->call.flags & NX_TF_STREAM, e->call.stream);
    fputs(", \"sendbuff\": ", f);
    put_u64_or_null(f, e->call.flags & NX_TF_SEND, e->call.send);
    fputs(", \"recvbuff\": ", f);
    put_u64_or_null(f, e->call.flags & NX_TF_RECV, e->call.recv);
    fputs(", \"file\": ", f);
    put_string(f, file);
    fputs(", \"line\": ", f);
    put_int_or_null(f, file != NULL, line);
    fputs(", \"func\": ", f);
    put_string(f, func);
    double m_enter = nx_trace_ticks_to_mono(s, e->t_enter);
    fprintf(f, ", \"t_enter\": %.6f, \"m_enter\": %.6f, \"m_return\": ", m_enter + (s->wall1 - s->mono1), m_enter);
    if (e->t_return != 0)
        fprintf(f, "%.6f, \"rc\": %d}\n", nx_trace_ticks_to_mono(s, e->t_return), e->rc);
    else
        fputs("null, \"rc\": null}\n", f);
}

/* ---- the file ---- */

static NX_COLD void log_failure(const char *what, const char *path, int err)
{
    if (__atomic_exchange_n(&failure_logged, 1, __ATOMIC_ACQ_REL))
        return;
    fprintf(stderr, "nccl4py: could not write the flight recorder's dump (%s %s: %s); later failures are not "
            "reported (docs/api/trace.md)\n", what, path, strerror(err));
}

/* The default folder is ours alone: made with mode 0700, and refused if something else is there. */
static int make_private_dir(const char *dir)
{
    struct stat st;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    if (lstat(dir, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
        errno = EACCES;
        return -1;
    }
    return 0;
}

/* mkdir -p for NCCL4PY_TRACE_DIR (the umask's permissions). */
static int make_dirs(char *path)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int r = mkdir(path, 0777);
        *p = '/';
        if (r != 0 && errno != EEXIST)
            return -1;
    }
    return mkdir(path, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

/* The trace directory, created if missing; 0, or -1 with errno. */
static int trace_dir(char *out, size_t n)
{
    const char *dir = getenv("NCCL4PY_TRACE_DIR");
    if (dir != NULL && *dir != '\0') {
        if ((size_t)snprintf(out, n, "%s", dir) >= n) {
            errno = ENAMETOOLONG;
            return -1;
        }
        return make_dirs(out);
    }
    const char *tmp = getenv("TMPDIR");
    const char *job = job_id();
    char name[128];
    if (job != NULL) {
        size_t i = 0;
        for (; job[i] != '\0' && i + 1 < sizeof name; i++) {
            char ch = job[i];
            int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                     ch == '_' || ch == '.';
            name[i] = ok ? ch : '_';
        }
        name[i] = '\0';
    } else {
        snprintf(name, sizeof name, "uid%ld", (long)geteuid());
    }
    if ((size_t)snprintf(out, n, "%s/nccl4py-trace-%s", tmp != NULL && *tmp != '\0' ? tmp : "/tmp", name) >= n) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return make_private_dir(out);
}

static void put_snapshot(FILE *f, const nx_trace_snapshot *s, long rank, long world, const char *reason,
                         const char *error)
{
    put_header(f, s, rank, world, reason, error);
    for (size_t i = 0; i < s->n; i++)
        put_comm(f, &s->rings[i]);
    for (size_t i = 0; i < s->n; i++)
        for (size_t k = 0; k < s->rings[i].n; k++)
            put_entry(f, s, &s->rings[i], &s->rings[i].e[k]);
}

/* Writes one snapshot; the file's path into `path` (0), or -1 after logging the failure once. */
static int write_dump(const char *reason, char *path, size_t npath)
{
    static const char *const rank_vars[] = {"RANK", "SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK", NULL};
    static const char *const size_vars[] = {"WORLD_SIZE", "SLURM_NTASKS", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", NULL};
    char dir[PATH_MAX], tmp[PATH_MAX + 64], error[sizeof last_error];
    int r = -1;
    nx_trace_snapshot *s = NULL;
    pthread_mutex_lock(&dump_mu);
    if (exiting)
        goto done; /* the writer thread's late request: the exit snapshot stays the last word */
    exiting = strcmp(reason, "exit") == 0;
    s = nx_trace_snapshot_take();
    if (s == NULL) {
        log_failure("snapshot", "(memory)", ENOMEM);
        goto done;
    }
    if (trace_dir(dir, sizeof dir) != 0) {
        log_failure("folder", dir, errno);
        goto done;
    }
    long rank = env_int(rank_vars), world = env_int(size_vars);
    if (rank < 0)
        rank = s->first_rank;
    if (world <= 0)
        world = s->first_nranks;
    if (rank >= 0)
        snprintf(path, npath, "%s/rank%ld.jsonl", dir, rank);
    else
        snprintf(path, npath, "%s/pid%ld.jsonl", dir, (long)getpid());
    snprintf(tmp, sizeof tmp, "%s/.%s.%ld.tmp", dir, strrchr(path, '/') + 1, (long)getpid());
    pthread_mutex_lock(&error_mu);
    memcpy(error, last_error, sizeof error);
    pthread_mutex_unlock(&error_mu);
    int with_error = error[0] != '\0' && (strcmp(reason, "error") == 0 || strcmp(reason, "exit") == 0);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (f == NULL) {
        log_failure("file", tmp, errno);
        if (fd >= 0)
            close(fd);
        goto done;
    }
    put_snapshot(f, s, rank, world, reason, with_error ? error : NULL);
    int bad = ferror(f), err = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = 1;
        err = errno;
    }
    if (bad) {
        unlink(tmp);
        log_failure("file", path, err);
        goto done;
    }
    r = 0;
done:
    nx_trace_snapshot_free(s);
    pthread_mutex_unlock(&dump_mu);
    return r;
}

/* ---- when: the writer thread, SIGUSR1, errors, exit ---- */

static void on_sigusr1(int sig)
{
    (void)sig;
    int saved = errno;
    __atomic_or_fetch(&wanted, WANT_SIGNAL, __ATOMIC_RELEASE);
    sem_post(&wake); /* async-signal-safe */
    errno = saved;
}

/* NCCL4PY_WAIT_WARNING (docs/api/trace.md#calls-that-wait): seconds after which a call still inside
 * the library is reported, 0 (unset) for never. Under python -m nccl.run the launcher reports it
 * (it reads the "wait" dump and asks the other ranks for theirs); elsewhere the rank says it on
 * stderr. Read once, when the writer thread starts. */
static double wait_warning;
static int wait_said_by_launcher;

static void read_wait_warning(void)
{
    const char *v = getenv("NCCL4PY_WAIT_WARNING");
    char *end;
    wait_warning = 0;
    if (v != NULL && *v != '\0') {
        errno = 0;
        double s = strtod(v, &end);
        if (errno == 0 && *end == '\0' && s >= 0 && s < 1e9)
            wait_warning = s;
        else
            fprintf(stderr, "nccl4py: NCCL4PY_WAIT_WARNING=%s is not a number of seconds; calls that wait are "
                    "not reported\n", v);
    }
    const char *launcher = getenv("NCCL4PY_LAUNCHER");
    wait_said_by_launcher = launcher != NULL && strcmp(launcher, "nccl.run") == 0;
}

/* A dump with reason "wait" when a call has waited wait_warning seconds, and a line for each. */
static void report_stalls(void)
{
    nx_trace_stall st[8];
    char path[PATH_MAX + 32];
    int n = nx_trace_stalled(wait_warning, st, 8);
    if (n == 0 || write_dump("wait", path, sizeof path) != 0 || wait_said_by_launcher)
        return;
    for (int i = 0; i < n; i++) {
        const char *file, *func;
        int line;
        nx_trace_site_get(st[i].site, &file, &line, &func);
        fprintf(stderr, "nccl4py: rank %d of comm %016llx still waiting in %s (seq %llu) at %s:%d after %.0f s; its "
                "dump: %s\n", st[i].rank, (unsigned long long)st[i].comm, nx_trace_op_name(st[i].op),
                (unsigned long long)st[i].seq, file != NULL ? file : "(no Python caller)", line, st[i].waited, path);
    }
}

/* Waits for the semaphore; with a wait warning, at most a quarter of it (0.05 to 1 s). */
static void wait_for_work(void)
{
    if (wait_warning <= 0) {
        while (sem_wait(&wake) != 0 && errno == EINTR)
            ;
        return;
    }
    double step = wait_warning / 4 < 0.05 ? 0.05 : wait_warning / 4 > 1.0 ? 1.0 : wait_warning / 4;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long ns = until.tv_nsec + (long)(step * 1e9);
    until.tv_sec += ns / 1000000000L;
    until.tv_nsec = ns % 1000000000L;
    while (sem_timedwait(&wake, &until) != 0 && errno == EINTR)
        ;
}

static void *service_main(void *arg)
{
    (void)arg;
    char path[PATH_MAX + 32];
    for (;;) {
        wait_for_work();
        int w = __atomic_exchange_n(&wanted, 0, __ATOMIC_ACQ_REL);
        if ((w & WANT_SIGNAL) && write_dump("signal", path, sizeof path) == 0)
            nx_trace_stack_request(path);
        if (w & WANT_ERROR)
            write_dump("error", path, sizeof path);
        if (wait_warning > 0)
            report_stalls();
    }
    return NULL;
}

static void at_exit(void)
{
    char path[PATH_MAX + 32];
    if (__atomic_load_n(&errors_seen, __ATOMIC_ACQUIRE))
        write_dump("exit", path, sizeof path);
}

static void fork_prepare(void)
{
    pthread_mutex_lock(&service_mu);
    pthread_mutex_lock(&dump_mu);
    nx_trace_fork_prepare();
    nx_trace_stack_fork(NX_FORK_PREPARE);
}

static void fork_parent(void)
{
    nx_trace_stack_fork(NX_FORK_PARENT);
    nx_trace_fork_done();
    pthread_mutex_unlock(&dump_mu);
    pthread_mutex_unlock(&service_mu);
}

static void fork_child(void)
{
    nx_trace_stack_fork(NX_FORK_CHILD);
    nx_trace_fork_done();
    pthread_mutex_unlock(&dump_mu);
    service_running = 0; /* the writer thread stayed in the parent; the next ring starts one */
    pthread_mutex_unlock(&service_mu);
}

static void install_handler(void)
{
    const char *v = getenv("NCCL4PY_TRACE_SIGNAL");
    struct sigaction old, sa;
    if ((v != NULL && strcmp(v, "0") == 0) || sigaction(SIGUSR1, NULL, &old) != 0)
        return;
    /* A handler the program installed first (Python's signal module, faulthandler) stays. */
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
        return;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigusr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
}

void nx_trace_start_service(void)
{
    pthread_mutex_lock(&service_mu);
    if (!service_once) {
        if (sem_init(&wake, 0, 0) != 0) {
            pthread_mutex_unlock(&service_mu);
            return;
        }
        service_once = 1;
        read_wait_warning();
        atexit(at_exit);
        pthread_atfork(fork_prepare, fork_parent, fork_child);
        install_handler();
    }
    if (!service_running) {
        pthread_t t;
        pthread_attr_t attr;
        sigset_t all, prev;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 256 * 1024);
        /* The thread takes no signal: SIGINT and the rest stay with the program's threads. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &prev);
        service_running = pthread_create(&t, &attr, service_main, NULL) == 0;
        pthread_sigmask(SIG_SETMASK, &prev, NULL);
        pthread_attr_destroy(&attr);
    }
    pthread_mutex_unlock(&service_mu);
}

void nx_trace_error(int status, const char *last)
{
    if (!nx_trace_active())
        return;
    const char *text = nx_builtin_error_string(status);
    int has_last = last != NULL && *last != '\0';
    /* NCCL's "(run with NCCL_DEBUG=... for details)" is left out when the details follow, as in
     * NCCLError's message (src/nccl/_errors.py). */
    const char *hint = has_last ? strstr(text, " (run with NCCL_DEBUG=") : NULL;
    int text_len = hint != NULL ? (int)(hint - text) : (int)strlen(text);
    pthread_mutex_lock(&error_mu);
    snprintf(last_error, sizeof last_error, "%.*s (status %d)%s%s", text_len, text, status, has_last ? ": " : "",
             has_last ? last : "");
    pthread_mutex_unlock(&error_mu);
    __atomic_store_n(&errors_seen, 1, __ATOMIC_RELEASE);
    __atomic_or_fetch(&wanted, WANT_ERROR, __ATOMIC_RELEASE);
    nx_trace_start_service();
    sem_post(&wake);
}

/* ---- Python ---- */

PyDoc_STRVAR(dump_trace__doc__, "_dump_trace()\n--\n\n"
"Write this process's flight-recorder file now (nccl.core.dump_trace); its path, or None when the\n"
"write failed (reported once on stderr).");

static PyObject *dump_trace(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    char path[PATH_MAX + 32];
    int r;
    Py_BEGIN_ALLOW_THREADS
    r = write_dump("dump_trace", path, sizeof path);
    Py_END_ALLOW_THREADS
    if (r != 0)
        Py_RETURN_NONE;
    return PyUnicode_DecodeFSDefault(path);
}

PyDoc_STRVAR(trace_ops__doc__, "_trace_ops()\n--\n\n"
"The file format's op names in the recorder's order, each with whether every rank of a communicator\n"
"makes the call (counted by an entry's 'coll') and the word before its peer ('to', 'from', or '' for\n"
"a call without one): a tuple of (name, bool, str), for nccl.trace.");

static PyObject *trace_ops(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    PyObject *out = PyTuple_New(NX_T_NOPS);
    if (out == NULL)
        return NULL;
    for (int op = 0; op < NX_T_NOPS; op++) {
        PyObject *row = Py_BuildValue("(sOs)", nx_trace_op_name(op), nx_trace_op_every_rank(op) ? Py_True : Py_False,
                                      nx_trace_op_peer(op));
        if (row == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, op, row);
    }
    return out;
}

PyDoc_STRVAR(trace_front_dir__doc__, "_trace_front_dir(path)\n--\n\n"
"Record calls made from Python files under the directory `path` (a str ending in '/') as made by\n"
"their caller, as calls from nccl4py's own code are (nccl.torch passes torch's directory).");

static PyObject *trace_front_dir(PyObject *module, PyObject *arg)
{
    (void)module;
    const char *dir = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    if (dir == NULL) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "_trace_front_dir() argument must be str, not %.100s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (nx_trace_add_front_dir(dir) < 0) {
        PyErr_SetString(PyExc_RuntimeError, "_trace_front_dir(): the table of directories is full");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef trace_methods[] = {
    {"_dump_trace", dump_trace, METH_NOARGS, dump_trace__doc__},
    {"_trace_front_dir", trace_front_dir, METH_O, trace_front_dir__doc__},
    {"_trace_ops", trace_ops, METH_NOARGS, trace_ops__doc__},
    {NULL, NULL, 0, NULL},
};

int nx_trace_setup(PyObject *module, nx_state *st)
{
    (void)st;
    nx_trace_set_package_dir(module);
    if (nx_trace_stack_setup(module) < 0)
        return -1;
    return PyModule_AddFunctions(module, trace_methods);
}
