/* Logging and the last-error text (docs/host-backend.md#errors-and-logging).
 *
 *   NCCL_DEBUG / NCCL_HOST_DEBUG   VERSION, WARN, INFO, TRACE (the latter wins for this library)
 *   NCCL_DEBUG_SUBSYS             INIT,BOOTSTRAP,ENV by default; comma list, leading ^ negates;
 *                                 ours: INIT BOOTSTRAP COLL P2P SHM ENV ALLOC CALL ALL
 *   NCCL_DEBUG_FILE               file name with %h (host) and %p (pid); stdout/stderr accepted
 *
 * One line per message, written with one write(2), formatted only when the level is enabled:
 *   <host>:<pid>:<tid> [<rank>] NCCL-HOST <LEVEL> <message>
 * WARN always updates the process-global last-error text, whatever NCCL_DEBUG says, except on a
 * background thread that serves no call (the bootstrap root): its warnings are only logged, so
 * they never replace the error of a call that another thread is about to return. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <fcntl.h>

#include "nccl_error_text.h"
#include "nccl_host.h"

int host_log_level = HOST_LOG_NONE;                 /* written once in host_log_init */
unsigned host_log_subsys = HOST_SUB_INIT | HOST_SUB_BOOTSTRAP | HOST_SUB_ENV;
static int host_log_fd = STDOUT_FILENO;             /* written once in host_log_init */
static char host_hostname[64] = "localhost";

static pthread_mutex_t host_last_error_lock = PTHREAD_MUTEX_INITIALIZER;
static char host_last_error_text[1024];             /* guarded by host_last_error_lock */
static _Thread_local char host_last_error_copy[1024];
static _Thread_local int host_log_rank = -1;
static _Thread_local int host_log_background;      /* this thread's warnings are log-only */

static const struct {
    const char *name;
    unsigned bit;
} subsys_names[] = {
    {"INIT", HOST_SUB_INIT}, {"BOOTSTRAP", HOST_SUB_BOOTSTRAP}, {"COLL", HOST_SUB_COLL},
    {"P2P", HOST_SUB_P2P},   {"SHM", HOST_SUB_SHM},             {"ENV", HOST_SUB_ENV},
    {"ALLOC", HOST_SUB_ALLOC}, {"CALL", HOST_SUB_CALL},         {"ALL", HOST_SUB_ALL},
};

static unsigned parse_subsys(const char *s)
{
    char buf[256];
    unsigned mask = 0;
    int negate = 0;
    char *save = NULL, *tok;
    if (*s == '^') {
        negate = 1;
        s++;
    }
    snprintf(buf, sizeof buf, "%s", s);
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        for (size_t i = 0; i < sizeof subsys_names / sizeof subsys_names[0]; i++)
            if (strcasecmp(tok, subsys_names[i].name) == 0)
                mask |= subsys_names[i].bit;
        /* NCCL's own subsystem names (NET, GRAPH, TUNING, ...) are accepted and ignored. */
    }
    return negate ? ~mask : mask;
}

static void open_log_file(const char *spec)
{
    char path[512];
    size_t o = 0;
    int fd;
    if (strcmp(spec, "stdout") == 0 || strcmp(spec, "/dev/stdout") == 0)
        return;
    if (strcmp(spec, "stderr") == 0 || strcmp(spec, "/dev/stderr") == 0) {
        host_log_fd = STDERR_FILENO;
        return;
    }
    for (const char *p = spec; *p != '\0' && o + 32 < sizeof path; p++) {
        if (p[0] == '%' && p[1] == 'h') {
            o += (size_t)snprintf(path + o, sizeof path - o, "%s", host_hostname);
            p++;
        } else if (p[0] == '%' && p[1] == 'p') {
            o += (size_t)snprintf(path + o, sizeof path - o, "%d", (int)getpid());
            p++;
        } else {
            path[o++] = *p;
        }
    }
    path[o] = '\0';
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0)
        host_log_fd = fd;
}

void host_log_init(void)
{
    const char *lvl = getenv("NCCL_HOST_DEBUG");
    const char *sub = getenv("NCCL_DEBUG_SUBSYS");
    const char *file = getenv("NCCL_DEBUG_FILE");
    if (lvl == NULL || *lvl == '\0')
        lvl = getenv("NCCL_DEBUG");
    gethostname(host_hostname, sizeof host_hostname - 1);
    host_hostname[sizeof host_hostname - 1] = '\0';
    if (lvl != NULL) {
        if (strcasecmp(lvl, "VERSION") == 0)
            host_log_level = HOST_LOG_VERSION;
        else if (strcasecmp(lvl, "WARN") == 0)
            host_log_level = HOST_LOG_WARN;
        else if (strcasecmp(lvl, "INFO") == 0)
            host_log_level = HOST_LOG_INFO;
        else if (strcasecmp(lvl, "TRACE") == 0)
            host_log_level = HOST_LOG_TRACE;
        else if (strcasecmp(lvl, "ABORT") == 0)
            host_log_level = HOST_LOG_WARN;
    }
    if (sub != NULL && *sub != '\0')
        host_log_subsys = parse_subsys(sub);
    if (file != NULL && *file != '\0' && host_log_level > HOST_LOG_NONE)
        open_log_file(file);
}

void host_log_set_rank(int rank)
{
    host_log_rank = rank;
}

void host_log_set_background(void)
{
    host_log_background = 1;
}

int host_log_get_rank(void)
{
    return host_log_rank;
}

static const char *level_name(int level)
{
    switch (level) {
    case HOST_LOG_VERSION: return "VERSION";
    case HOST_LOG_WARN: return "WARN";
    case HOST_LOG_INFO: return "INFO";
    default: return "TRACE";
    }
}

void host_vlog(int level, unsigned subsys, const char *fmt, va_list ap)
{
    char msg[1024];
    char line[1200];
    int print = level <= host_log_level && (level <= HOST_LOG_WARN || (host_log_subsys & subsys));
    int n;
    if (level != HOST_LOG_WARN && !print)
        return;
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (level == HOST_LOG_WARN && !host_log_background) {
        pthread_mutex_lock(&host_last_error_lock);
        memcpy(host_last_error_text, msg, sizeof msg);
        pthread_mutex_unlock(&host_last_error_lock);
    }
    if (!print)
        return;
    if (host_log_rank >= 0)
        n = snprintf(line, sizeof line, "%s:%d:%ld [%d] NCCL-HOST %s %s\n", host_hostname, (int)getpid(),
                     (long)syscall(SYS_gettid), host_log_rank, level_name(level), msg);
    else
        n = snprintf(line, sizeof line, "%s:%d:%ld NCCL-HOST %s %s\n", host_hostname, (int)getpid(),
                     (long)syscall(SYS_gettid), level_name(level), msg);
    if (n > (int)sizeof line - 1) {
        n = (int)sizeof line - 1;
        line[n - 1] = '\n';
    }
    /* One write per line keeps lines of concurrent ranks whole; a failed log write is not an
     * error worth reporting anywhere. */
    ssize_t w = write(host_log_fd, line, (size_t)n);
    (void)w;
}

void host_log(int level, unsigned subsys, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    host_vlog(level, subsys, fmt, ap);
    va_end(ap);
}

ncclResult_t host_fail(ncclResult_t rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    host_vlog(HOST_LOG_WARN, HOST_SUB_ALL, fmt, ap);
    va_end(ap);
    return rc;
}

const char *host_last_error(void)
{
    pthread_mutex_lock(&host_last_error_lock);
    memcpy(host_last_error_copy, host_last_error_text, sizeof host_last_error_copy);
    pthread_mutex_unlock(&host_last_error_lock);
    return host_last_error_copy;
}

const char *host_error_string(ncclResult_t rc)
{
    /* RCCL releases on the 2.21 base have no ncclTimeout and print the default text. */
    if (rc == ncclTimeout && host_params()->flavor == HOST_FLAVOR_RCCL && host_params()->version_code < 23000)
        return NCCL_ERROR_TEXT_UNKNOWN;
    return nccl_error_text((int)rc);
}
