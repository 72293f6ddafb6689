/* The per-communicator shared segment (HOST_BACKEND.md sections 10 and 11.3).
 *
 * Rank 0 creates it with shm_open(O_CREAT | O_EXCL, 0600), fchmod(0600) against a umask, and
 * sizes it with posix_fallocate, so a full shm filesystem fails now with ncclSystemError instead of
 * a later SIGBUS. Every rank attaches and checks owner, mode, size, magic and the communicator's
 * token; rank 0 unlinks the name as soon as all ranks attached (bootstrap.c), or on any failure.
 * Names are nccl-host-<uid>-<pid>-<random>; a creator killed inside the attach window leaves its
 * name behind, and the next creator of the same uid sweeps names whose pid is gone.
 *
 * Layout: header (4 KiB) | per-rank words (bell, state, done) | n slots | n(n-1) rings. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nccl_host.h"

#define SEG_MAGIC 0x4e43484f53545347ull /* "NCHOSTSG" */
#define PAGE 4096u

static size_t align_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

static void layout(host_seg_header *h, int n, size_t chunk, size_t p2p)
{
    h->magic = SEG_MAGIC;
    h->layout = HOST_SEG_LAYOUT;
    h->nranks = (uint32_t)n;
    h->chunk_bytes = chunk;
    h->p2p_bytes = p2p;
    h->off_ranks = PAGE;
    h->off_slots = align_up(PAGE + (size_t)n * sizeof(host_seg_rank), PAGE);
    /* Two step buffers per rank in the chunk's budget (the segment keeps the size of section
     * 11.3): double buffering halves the waits of a step, which costs more than the bytes. */
    h->buf_bytes = (chunk / 2) & ~(size_t)(HOST_CACHELINE - 1);
    h->buf_stride = align_up(sizeof(host_slot_hdr) + h->buf_bytes, HOST_CACHELINE);
    h->slot_stride = align_up(2 * h->buf_stride, PAGE);
    h->off_rings = h->off_slots + (size_t)n * h->slot_stride;
    h->ring_stride = align_up(sizeof(host_ring_hdr) + p2p, PAGE);
    h->total_bytes = h->off_rings + (size_t)n * (size_t)(n - 1) * h->ring_stride;
}

/* Removes names left by dead creators of our uid (a kill -9 inside the attach window). */
static void sweep(void)
{
    char prefix[64];
    DIR *d = opendir("/dev/shm");
    struct dirent *e;
    int plen;
    if (d == NULL)
        return;
    plen = snprintf(prefix, sizeof prefix, "nccl-host-%u-", (unsigned)geteuid());
    while ((e = readdir(d)) != NULL) {
        char path[300];
        long pid;
        if (strncmp(e->d_name, prefix, (size_t)plen) != 0)
            continue;
        pid = strtol(e->d_name + plen, NULL, 10);
        if (pid <= 0 || pid == (long)getpid())
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        snprintf(path, sizeof path, "/%s", e->d_name);
        if (shm_unlink(path) == 0)
            HOST_INFO(HOST_SUB_SHM, "swept stale segment %s of dead pid %ld", path, pid);
    }
    closedir(d);
}

static void seg_fill(host_seg *seg, void *base, size_t size)
{
    seg->base = base;
    seg->size = size;
    seg->hdr = base;
    seg->nranks = (int)seg->hdr->nranks;
    seg->chunk_bytes = seg->hdr->chunk_bytes;
    seg->buf_bytes = seg->hdr->buf_bytes;
    seg->p2p_bytes = seg->hdr->p2p_bytes;
}

ncclResult_t host_seg_create(host_seg *seg, int nranks, const uint8_t token[HOST_TOKEN_BYTES], char *name,
                             size_t namelen)
{
    ncclResult_t rc;
    const host_params_t *p = host_params();
    host_seg_header h;
    uint64_t rnd;
    void *base;
    int fd, r;
    memset(&h, 0, sizeof h);
    layout(&h, nranks, host_chunk_bytes(nranks), p->p2p_bytes);
    sweep();
    if (HOST_FAILED(rc = host_random_bytes(&rnd, sizeof rnd)))
        return rc;
    snprintf(name, namelen, "/nccl-host-%u-%d-%016llx", (unsigned)geteuid(), (int)getpid(), (unsigned long long)rnd);
    fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        return host_fail(ncclSystemError, "shm_open(%s) failed: %s", name, strerror(errno));
    if (fchmod(fd, 0600) != 0) {
        r = errno;
        goto fail;
    }
    r = posix_fallocate(fd, 0, (off_t)h.total_bytes);
    if (r != 0)
        goto fail;
    base = mmap(NULL, h.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        r = errno;
        goto fail;
    }
    close(fd);
    memcpy(base, &h, sizeof h);
    memcpy(((host_seg_header *)base)->token, token, HOST_TOKEN_BYTES);
    seg_fill(seg, base, h.total_bytes);
    HOST_INFO(HOST_SUB_SHM, "created segment %s: %zu bytes for %d ranks", name, seg->size, nranks);
    return ncclSuccess;
fail:
    close(fd);
    shm_unlink(name);
    return host_fail(ncclSystemError, "cannot size shared segment %s to %llu bytes: %s (is /dev/shm full?)", name,
                     (unsigned long long)h.total_bytes, strerror(r));
}

ncclResult_t host_seg_attach(host_seg *seg, const char *name, int nranks, const uint8_t token[HOST_TOKEN_BYTES])
{
    struct stat st;
    host_seg_header *h;
    void *base;
    int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
    if (fd < 0)
        return host_fail(ncclSystemError, "cannot open shared segment %s: %s", name, strerror(errno));
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return host_fail(ncclSystemError, "fstat(%s) failed: %s", name, strerror(e));
    }
    if (st.st_uid != geteuid() || (st.st_mode & 0777) != 0600 || (size_t)st.st_size < PAGE) {
        close(fd);
        return host_fail(ncclSystemError, "refusing shared segment %s: owner %u mode %o size %lld (expected owner %u, "
                         "mode 600)", name, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777),
                         (long long)st.st_size, (unsigned)geteuid());
    }
    base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (base == MAP_FAILED)
        return host_fail(ncclSystemError, "mmap of shared segment %s failed: %s", name, strerror(errno));
    h = base;
    if (h->magic != SEG_MAGIC || h->layout != HOST_SEG_LAYOUT || h->nranks != (uint32_t)nranks ||
        h->total_bytes != (uint64_t)st.st_size || !host_consttime_equal(h->token, token, HOST_TOKEN_BYTES)) {
        munmap(base, (size_t)st.st_size);
        return host_fail(ncclSystemError, "refusing shared segment %s: header does not match this communicator", name);
    }
    seg_fill(seg, base, (size_t)st.st_size);
    return ncclSuccess;
}

ncclResult_t host_seg_unlink(const char *name)
{
    if (shm_unlink(name) != 0 && errno != ENOENT)
        return host_fail(ncclSystemError, "shm_unlink(%s) failed: %s", name, strerror(errno));
    return ncclSuccess;
}

void host_seg_unmap(host_seg *seg)
{
    if (seg->base != NULL)
        munmap(seg->base, seg->size);
    memset(seg, 0, sizeof *seg);
}
