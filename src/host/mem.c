/* ncclMemAlloc/ncclMemFree and buffer registration (docs/host-backend.md#memory-and-registration).
 *
 * ncclMemAlloc hands out page-aligned host memory rounded up to a page, each block its own
 * anonymous memory file (memfd) sealed at its size, so that peers on this machine can map it: a
 * window over the block (window.c) passes the descriptor to them over a Unix-domain socket, as the
 * segment is passed, and the seals let them trust the size they map. The blocks are kept in a
 * process-wide list so ncclMemFree can reject pointers it never returned. Registration has no
 * effect on the data path (Differs 10): it records the range and returns a non-NULL handle. */
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
    struct host_block *next;
} host_block;

static pthread_mutex_t host_blocks_lock = PTHREAD_MUTEX_INITIALIZER;
static host_block *host_blocks; /* guarded by host_blocks_lock */

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
    if (ptr == NULL)
        return ncclSuccess;
    pthread_mutex_lock(&host_blocks_lock);
    for (host_block **pp = &host_blocks; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->ptr == ptr) {
            found = *pp;
            *pp = found->next;
            break;
        }
    pthread_mutex_unlock(&host_blocks_lock);
    if (found == NULL)
        return host_fail(ncclInvalidArgument, "ncclMemFree: %p was not returned by ncclMemAlloc (or was freed)", ptr);
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
    pthread_mutex_lock(&c->lock);
    r->next = c->regs;
    c->regs = r;
    pthread_mutex_unlock(&c->lock);
    *handle = r;
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
            if (*pp == handle) {
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
