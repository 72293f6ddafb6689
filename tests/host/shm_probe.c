/* LD_PRELOAD probe for the engine tests: records every shared-memory name a process creates or
 * opens (shm_open, or open/openat of a path under /dev/shm) as one line in $SHM_PROBE_LOG, then
 * does what was asked. The host backend's segment is an anonymous memfd, so a run of the engine
 * under this probe must leave the log empty. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static void note(const char *call, const char *name)
{
    char line[512];
    const char *log = getenv("SHM_PROBE_LOG");
    int fd, n;
    if (log == NULL)
        return;
    n = snprintf(line, sizeof line, "%d %s %s\n", (int)getpid(), call, name);
    /* the raw system call: open() here would come back to this probe */
    fd = (int)syscall(SYS_openat, AT_FDCWD, log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    if (write(fd, line, (size_t)n) < 0) {
        /* nothing to do: the log is best effort */
    }
    close(fd);
}

static int under_dev_shm(const char *path)
{
    return path != NULL && strncmp(path, "/dev/shm/", 9) == 0;
}

int shm_open(const char *name, int oflag, mode_t mode)
{
    int (*real)(const char *, int, mode_t) = (int (*)(const char *, int, mode_t))dlsym(RTLD_NEXT, "shm_open");
    note("shm_open", name);
    return real(name, oflag, mode);
}

static mode_t mode_arg(int flags, va_list ap)
{
    return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

int open(const char *path, int flags, ...)
{
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open");
    va_list ap;
    mode_t m;
    va_start(ap, flags);
    m = mode_arg(flags, ap);
    va_end(ap);
    if (under_dev_shm(path))
        note("open", path);
    return real(path, flags, m);
}

int open64(const char *path, int flags, ...)
{
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, "open64");
    va_list ap;
    mode_t m;
    va_start(ap, flags);
    m = mode_arg(flags, ap);
    va_end(ap);
    if (under_dev_shm(path))
        note("open64", path);
    return real(path, flags, m);
}

int openat(int dirfd, const char *path, int flags, ...)
{
    int (*real)(int, const char *, int, ...) = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
    va_list ap;
    mode_t m;
    va_start(ap, flags);
    m = mode_arg(flags, ap);
    va_end(ap);
    if (under_dev_shm(path))
        note("openat", path);
    return real(dirfd, path, flags, m);
}
