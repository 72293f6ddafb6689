/* ncclMemAlloc/ncclMemFree and buffer registration (docs/host-backend.md#memory-and-registration).
 *
 * ncclMemAlloc hands out page-aligned host memory rounded up to a page, each block its own
 * anonymous memory file (memfd) sealed at its size, so that peers on this machine can map it: a
 * window over the block (window.c) passes the descriptor to them over a Unix-domain socket, as the
 * segment is passed, and the seals let them trust the size they map. The blocks are kept in a
 * process-wide list so ncclMemFree can reject pointers it never returned, and so a window can pin
 * the block it lies in: ncclMemFree refuses a block a window still covers, since the window's
 * own part is the block's address here. Registration refuses memory that is not live: a range
 * running past the end of the block it starts in, or one that is not mapped (the last freed
 * blocks are remembered to say so). ncclCommRegister has no effect on the data path (Differs 10):
 * it records the range and returns a handle that is never reused. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nccl_host.h"

typedef struct host_block {
    void *ptr;
    size_t size;
    int fd;
    int pins;                    /* windows over this block (host_mem_pin) */
    struct host_block *next;
} host_block;

static pthread_mutex_t host_blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static host_block *host_blocks; /* guarded by host_blocks_lock */

/* The last blocks freed, only to word a refusal ("freed by ncclMemFree"): whether memory is live
 * is decided by the mapping, since the address may be mapped again by anyone. */
#define FREED_KEPT 64
static struct {
    uintptr_t lo, hi;
} host_freed[FREED_KEPT];       /* guarded by host_blocks_lock */
static unsigned host_freed_next; /* guarded by host_blocks_lock */

/* Registration handles (ncclCommRegister) are numbers, never addresses, so a stale handle never
 * names a later registration. */
#define REG_HANDLE_TAG ((uintptr_t)0x4e52u << 48)
static _Atomic uint64_t host_reg_ids;

/* A block's size can change neither way, nor can its seals: a peer's mapping never outlives it. */
#define BLOCK_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

int host_mem_lookup(const void *buff, size_t size, int *fd, size_t *off)
{
    uintptr_t p = (uintptr_t)buff;
    int found = 0;
    pthread_mutex_lock(&host_blocks_lock);
    for (host_block *b = host_blocks; b != NULL && !found; b = b->next) {
        uintptr_t lo = (uintptr_t)b->ptr;
        if (p >= lo && p - lo <= b->size && size <= b->size - (p - lo)) {
            *fd = fcntl(b->fd, F_DUPFD_CLOEXEC, 0);
            *off = (size_t)(p - lo);
            found = *fd >= 0;
        }
    }
    pthread_mutex_unlock(&host_blocks_lock);
    return found;
}

/* Whether [lo, lo + len) (page-aligned lo) is mapped in this process: mincore fails with ENOMEM
 * over a hole. 1 mapped, 0 not, -1 cannot tell (another error: the check is skipped). */
static int range_mapped(uintptr_t lo, size_t len)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    unsigned char vec[4096];
    while (len > 0) {
        size_t n = len < sizeof vec * page ? len : sizeof vec * page;
        if (mincore((void *)lo, n, vec) != 0)
            return errno == ENOMEM ? 0 : -1;
        lo += n;
        len -= n;
    }
    return 1;
}

/* The block holding address p (host_blocks_lock held), or NULL. */
static host_block *block_at(uintptr_t p)
{
    for (host_block *b = host_blocks; b != NULL; b = b->next)
        if (p >= (uintptr_t)b->ptr && p - (uintptr_t)b->ptr < b->size)
            return b;
    return NULL;
}

static int was_freed(uintptr_t p)
{
    for (unsigned i = 0; i < FREED_KEPT; i++)
        if (p >= host_freed[i].lo && p < host_freed[i].hi)
            return 1;
    return 0;
}

ncclResult_t host_mem_pin(const void *buff, size_t size, const char *fn, void **block)
{
    uintptr_t p = (uintptr_t)buff, lo, end;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    host_block *b;
    int freed, mapped;
    *block = NULL;
    if (size == 0)
        return ncclSuccess; /* no memory is used */
    if (size > UINTPTR_MAX - p)
        return host_fail(ncclInvalidArgument, "%s: buff %p + size %zu wraps around the address space", fn, buff, size);
    pthread_mutex_lock(&host_blocks_lock);
    b = block_at(p);
    if (b != NULL && size <= b->size - (p - (uintptr_t)b->ptr)) {
        b->pins++;
        *block = b->ptr;
    }
    freed = b == NULL && was_freed(p);
    pthread_mutex_unlock(&host_blocks_lock);
    if (*block != NULL)
        return ncclSuccess;
    if (b != NULL)
        return host_fail(ncclInvalidArgument, "%s: buff %p + size %zu runs past the end of the ncclMemAlloc block it "
                         "starts in (%zu bytes at %p; the range starts %zu bytes into it)", fn, buff, size, b->size,
                         b->ptr, (size_t)(p - (uintptr_t)b->ptr));
    lo = p / page * page;
    end = p + size; /* no overflow: checked above */
    mapped = range_mapped(lo, end - lo);
    if (mapped == 0 && freed)
        return host_fail(ncclInvalidArgument, "%s: buff %p lies in an ncclMemAlloc block that was freed "
                         "(ncclMemFree): its memory is no longer mapped in this process", fn, buff);
    if (mapped == 0)
        return host_fail(ncclInvalidArgument, "%s: buff %p + size %zu is not memory of this process: part of the "
                         "range is not mapped (freed, or never allocated)", fn, buff, size);
    return ncclSuccess;
}

void host_mem_unpin(void *block)
{
    host_block *b;
    if (block == NULL)
        return;
    pthread_mutex_lock(&host_blocks_lock);
    b = block_at((uintptr_t)block);
    if (b != NULL && b->pins > 0)
        b->pins--;
    pthread_mutex_unlock(&host_blocks_lock);
}

void host_mem_atfork_child(void)
{
    /* The child has none of our threads, and its communicators' windows cannot be deregistered
     * there: their pins do not hold its copies of the blocks (the parent keeps its own). */
    pthread_mutex_init(&host_blocks_lock, NULL);
    for (host_block *b = host_blocks; b != NULL; b = b->next)
        b->pins = 0;
}

ncclResult_t host_mem_alloc(void **ptr, size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), rounded;
    host_block *b;
    void *p = MAP_FAILED;
    char why[160];
    int fd = -1, e;
    if (ptr == NULL)
        return host_fail(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
    *ptr = NULL;
    if (size == 0)
        return ncclSuccess;
    if (size > SIZE_MAX / 2 - page)
        return host_fail(ncclSystemError, "ncclMemAlloc: cannot allocate %zu bytes", size);
    rounded = (size + page - 1) / page * page;
    b = malloc(sizeof *b);
    if (b == NULL)
        return host_fail(ncclSystemError, "ncclMemAlloc: out of memory");
    fd = memfd_create("nccl-host-mem", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)rounded) != 0 || fcntl(fd, F_ADD_SEALS, BLOCK_SEALS) != 0 ||
        (p = mmap(NULL, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        e = errno;
        if (fd >= 0)
            close(fd);
        free(b);
        return host_fail(ncclSystemError, "ncclMemAlloc: cannot allocate %zu bytes: %s", size,
                         host_errno_text(e, why, sizeof why));
    }
    b->ptr = p;
    b->size = rounded;
    b->fd = fd;
    b->pins = 0;
    pthread_mutex_lock(&host_blocks_lock);
    b->next = host_blocks;
    host_blocks = b;
    pthread_mutex_unlock(&host_blocks_lock);
    HOST_INFO(HOST_SUB_ALLOC, "ncclMemAlloc: %zu bytes at %p", rounded, p);
    *ptr = p;
    return ncclSuccess;
}

ncclResult_t host_mem_free(void *ptr)
{
    host_block *found = NULL;
    int pins = 0;
    if (ptr == NULL)
        return ncclSuccess;
    pthread_mutex_lock(&host_blocks_lock);
    for (host_block **pp = &host_blocks; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->ptr == ptr) {
            found = *pp;
            pins = found->pins;
            if (pins == 0) {
                *pp = found->next;
                host_freed[host_freed_next % FREED_KEPT].lo = (uintptr_t)found->ptr;
                host_freed[host_freed_next % FREED_KEPT].hi = (uintptr_t)found->ptr + found->size;
                host_freed_next++;
            }
            break;
        }
    pthread_mutex_unlock(&host_blocks_lock);
    if (found == NULL)
        return host_fail(ncclInvalidArgument, "ncclMemFree: %p was not returned by ncclMemAlloc (or was freed)", ptr);
    if (pins > 0)
        return host_fail(ncclInvalidUsage, "ncclMemFree: %p is still registered in %d window(s) "
                         "(ncclCommWindowRegister): deregister them, or destroy or abort their communicator, before "
                         "freeing it", ptr, pins);
    munmap(found->ptr, found->size);
    close(found->fd);
    free(found);
    return ncclSuccess;
}

ncclResult_t host_register(ncclComm_t comm, void *buff, size_t size, void **handle)
{
    host_comm *c;
    host_reg *r;
    ncclResult_t rc;
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclCommRegister", &c)))
        return rc;
    if (HOST_FAILED(rc = host_comm_usable(c, "ncclCommRegister")))
        goto exit;
    if (handle == NULL || (buff == NULL && size > 0)) {
        rc = host_fail(ncclInvalidArgument, "ncclCommRegister: %s is NULL", handle == NULL ? "handle" : "buff");
        goto exit;
    }
    r = malloc(sizeof *r);
    if (r == NULL) {
        rc = host_fail(ncclSystemError, "ncclCommRegister: out of memory");
        goto exit;
    }
    r->buff = buff;
    r->size = size;
    r->id = REG_HANDLE_TAG | (uintptr_t)(atomic_fetch_add_explicit(&host_reg_ids, 1, memory_order_relaxed) + 1);
    pthread_mutex_lock(&c->lock);
    r->next = c->regs;
    c->regs = r;
    pthread_mutex_unlock(&c->lock);
    *handle = (void *)r->id;
exit:
    host_comm_leave(c);
    return rc;
}

ncclResult_t host_deregister(ncclComm_t comm, void *handle)
{
    ncclResult_t rc;
    host_comm *c;
    host_reg *found = NULL;
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclCommDeregister", &c)))
        return rc;
    if (handle != NULL) {
        pthread_mutex_lock(&c->lock);
        for (host_reg **pp = &c->regs; *pp != NULL; pp = &(*pp)->next)
            if ((void *)(*pp)->id == handle) {
                found = *pp;
                *pp = found->next;
                break;
            }
        pthread_mutex_unlock(&c->lock);
    }
    host_comm_leave(c);
    if (handle == NULL)
        return ncclSuccess;
    if (found == NULL)
        return host_fail(ncclInvalidUsage, "ncclCommDeregister: %p is not a registration handle of this communicator",
                         handle);
    free(found);
    return ncclSuccess;
}

void host_reg_free_all(host_comm *c)
{
    while (c->regs != NULL) {
        host_reg *r = c->regs;
        c->regs = r->next;
        free(r);
    }
}
