/* A minimal NCCL-ABI library for the loader's discovery tests: it only says which copy it is.
 * Built several times with different -D flags:
 *   MINI_VERSION  the ncclGetVersion code (tells copies apart)
 *   MINI_RCCL     also export ncclAllReduceWithBias, as RCCL does
 *   MINI_NOT_NCCL export nothing NCCL-like ("not an NCCL/RCCL library") */
#include <stddef.h>

#ifndef MINI_NOT_NCCL
int ncclGetVersion(int *version)
{
    *version = MINI_VERSION;
    return 0;
}

const char *ncclGetErrorString(int result)
{
    (void)result;
    return "mini error";
}

#ifdef MINI_RCCL
int ncclAllReduceWithBias(const void *s, void *r, size_t n, int dt, int op, void *comm, void *stream, const void *acc)
{
    (void)s, (void)r, (void)n, (void)dt, (void)op, (void)comm, (void)stream, (void)acc;
    return 0;
}
#endif
#else
int mini_unrelated_symbol(void) { return 0; }
#endif
