/* The per-communicator shared segment (docs/host-backend.md#the-shared-segment).
 *
 * Rank 0 creates it as an anonymous memory file (memfd_create), sizes it with posix_fallocate,
 * so that running out of memory fails now with ncclSystemError instead of a later SIGBUS, and
 * seals its size; the peers receive the descriptor over a Unix-domain socket (bootstrap.c) and
 * check owner, seals, size, magic and the communicator's token before they use it. The segment
 * never has a name: nothing is left in /dev/shm or anywhere else when a rank is killed at any
 * instant, and the memory goes with the last mapping.
 *
 * Layout: header (4 KiB) | per-rank words (bell, state, done) | n slots | n(n-1) rings |
 * n x n signal counters (rma.c). */
#include <errno.h>
#include <fcntl.h>
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

static void layout(host_seg_header *h, int n, size_t chunk, size_t p2p, int pipeline_steps)
{
    h->magic = SEG_MAGIC;
    h->layout = HOST_SEG_LAYOUT;
    h->nranks = (uint32_t)n;
    h->chunk_bytes = chunk;
    h->p2p_bytes = p2p;
    h->pipeline_steps = (uint32_t)pipeline_steps;
    h->off_ranks = PAGE;
    h->off_slots = align_up(PAGE + (size_t)n * sizeof(host_seg_rank), PAGE);
    /* Two step buffers per rank in the chunk's budget (a slot stays one chunk in size): double
     * buffering halves the waits of a step, which costs more than the bytes. */
    h->buf_bytes = (chunk / 2) & ~(size_t)(HOST_CACHELINE - 1);
    h->buf_stride = align_up(sizeof(host_slot_hdr) + h->buf_bytes, HOST_CACHELINE);
    h->slot_stride = align_up(2 * h->buf_stride, PAGE);
    h->off_rings = h->off_slots + (size_t)n * h->slot_stride;
    h->ring_stride = align_up(sizeof(host_ring_hdr) + p2p, PAGE);
    h->off_signals = h->off_rings + (size_t)n * (size_t)(n - 1) * h->ring_stride;
    h->total_bytes = h->off_signals + align_up((size_t)n * (size_t)n * sizeof(uint64_t), PAGE);
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
    seg->pipeline_steps = (int)seg->hdr->pipeline_steps;
}

/* The seals every segment carries: its size can change neither way, nor can the seals. */
#define SEG_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

ncclResult_t host_seg_create(host_seg *seg, int nranks, const uint8_t token[HOST_TOKEN_BYTES], int *fdp)
{
    const host_params_t *p = host_params();
    host_seg_header h;
    char why[160];
    void *base;
    int fd, r;
    memset(&h, 0, sizeof h);
    layout(&h, nranks, host_chunk_bytes(nranks), p->p2p_bytes, p->pipeline_steps);
    fd = memfd_create("nccl-host-segment", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return host_fail(ncclSystemError, "memfd_create failed: %s", host_errno_text(errno, why, sizeof why));
    r = posix_fallocate(fd, 0, (off_t)h.total_bytes);
    if (r != 0)
        goto fail;
    if (fcntl(fd, F_ADD_SEALS, SEG_SEALS) != 0) {
        r = errno;
        goto fail;
    }
    base = mmap(NULL, h.total_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        r = errno;
        goto fail;
    }
    memcpy(base, &h, sizeof h);
    memcpy(((host_seg_header *)base)->token, token, HOST_TOKEN_BYTES);
    seg_fill(seg, base, h.total_bytes);
    *fdp = fd;
    HOST_INFO(HOST_SUB_SHM, "created segment: %zu bytes for %d ranks", seg->size, nranks);
    return ncclSuccess;
fail:
    close(fd);
    return host_fail(ncclSystemError, "cannot create a shared segment of %llu bytes: %s (out of memory?)",
                     (unsigned long long)h.total_bytes, strerror(r));
}

ncclResult_t host_seg_attach(host_seg *seg, int fd, int nranks, const uint8_t token[HOST_TOKEN_BYTES])
{
    struct stat st;
    host_seg_header *h;
    void *base;
    int seals = fcntl(fd, F_GET_SEALS);
    if (fstat(fd, &st) != 0)
        return host_fail(ncclSystemError, "fstat of the shared segment failed: %s", strerror(errno));
    if (st.st_uid != geteuid() || seals < 0 || (seals & SEG_SEALS) != SEG_SEALS || (size_t)st.st_size < PAGE)
        return host_fail(ncclSystemError, "refusing the shared segment: owner %u, seals 0x%x, size %lld (expected "
                         "owner %u, size sealed)", (unsigned)st.st_uid, (unsigned)seals, (long long)st.st_size,
                         (unsigned)geteuid());
    base = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED)
        return host_fail(ncclSystemError, "mmap of the shared segment failed: %s", strerror(errno));
    h = base;
    if (h->magic != SEG_MAGIC || h->layout != HOST_SEG_LAYOUT || h->nranks != (uint32_t)nranks ||
        h->pipeline_steps < 1 ||
        h->total_bytes != (uint64_t)st.st_size || !host_consttime_equal(h->token, token, HOST_TOKEN_BYTES)) {
        munmap(base, (size_t)st.st_size);
        return host_fail(ncclSystemError, "refusing the shared segment: its header does not match this communicator");
    }
    seg_fill(seg, base, (size_t)st.st_size);
    return ncclSuccess;
}

void host_seg_unmap(host_seg *seg)
{
    if (seg->base != NULL)
        munmap(seg->base, seg->size);
    memset(seg, 0, sizeof *seg);
}
