/* ncclConfig_t parsing (HOST_BACKEND.md section 2.3), following NCCL 2.30's parser: read `size`
 * first and copy only that many bytes, so a caller built against older or newer headers (or
 * RCCL's shorter layout ending at splitShare) keeps working; reset fields newer than the caller's
 * `version` to their defaults; then range-check. On the CPU only `blocking` and `commName` matter;
 * everything else is validated, stored and ignored. */
#include <string.h>

#include "nccl_host.h"

#define U NCCL_CONFIG_UNDEF_INT
#define V(x, y, z) NCCL_ABI_VERSION_CODE(x, y, z)

void host_config_default(ncclConfig_t *c)
{
    memset(c, 0, sizeof *c);
    c->size = sizeof *c;
    c->magic = NCCL_API_MAGIC;
    c->version = NCCL_ABI_API_VERSION;
    c->blocking = U;
    c->cgaClusterSize = U;
    c->minCTAs = U;
    c->maxCTAs = U;
    c->netName = NCCL_CONFIG_UNDEF_PTR;
    c->splitShare = U;
    c->trafficClass = U;
    c->commName = NCCL_CONFIG_UNDEF_PTR;
    c->collnetEnable = U;
    c->CTAPolicy = U;
    c->shrinkShare = U;
    c->nvlsCTAs = U;
    c->nChannelsPerNetPeer = U;
    c->nvlinkCentricSched = U;
    c->graphUsageMode = U;
    c->numRmaCtx = U;
    c->maxP2pPeers = U;
    c->graphStreamOrdering = U;
}

static int in01(int v)
{
    return v == U || v == 0 || v == 1;
}

ncclResult_t host_config_parse(const ncclConfig_t *in, ncclConfig_t *out, const char *fn)
{
    ncclConfig_t c;
    size_t n;
    const host_params_t *p = host_params();
    host_config_default(&c);
    if (in != NULL) {
        ncclConfig_t tmp;
        n = in->size < sizeof tmp ? in->size : sizeof tmp;
        host_config_default(&tmp);
        memcpy(&tmp, in, n);
        /* magic sits at offset 8 in every layout; it is read from the caller's struct directly. */
        if (in->magic != NCCL_API_MAGIC)
            return host_fail(ncclInvalidArgument,
                             "%s: config.magic is 0x%x, not 0x%x: initialise it with NCCL_CONFIG_INITIALIZER", fn,
                             in->magic, NCCL_API_MAGIC);
        /* Version gating: a caller stamping an older version never set the newer fields. */
        if (tmp.version < V(2, 14, 0))
            tmp.blocking = U;
        if (tmp.version < V(2, 17, 0)) {
            tmp.cgaClusterSize = U;
            tmp.minCTAs = U;
            tmp.maxCTAs = U;
            tmp.netName = NULL;
        }
        if (tmp.version < V(2, 25, 0))
            tmp.trafficClass = U;
        if (tmp.version < V(2, 27, 0)) {
            tmp.collnetEnable = U;
            tmp.CTAPolicy = U;
            tmp.shrinkShare = U;
            tmp.nvlsCTAs = U;
        }
        if (tmp.version < V(2, 28, 0)) {
            tmp.nChannelsPerNetPeer = U;
            tmp.nvlinkCentricSched = U;
        }
        if (tmp.version < V(2, 29, 0)) {
            tmp.graphUsageMode = U;
            tmp.numRmaCtx = U;
        }
        if (tmp.version < V(2, 30, 0))
            tmp.maxP2pPeers = U;
        if (tmp.version < V(2, 30, 5))
            tmp.graphStreamOrdering = U;
        c = tmp;
        c.size = sizeof c;
    }
    /* Every field in range, checked in this order: the first one out of range is reported. */
    const struct {
        const char *field;
        int value, ok;
    } checks[] = {
        {"blocking", c.blocking, in01(c.blocking)},
        {"splitShare", c.splitShare, in01(c.splitShare)},
        {"shrinkShare", c.shrinkShare, in01(c.shrinkShare)},
        {"nvlinkCentricSched", c.nvlinkCentricSched, in01(c.nvlinkCentricSched)},
        {"graphStreamOrdering", c.graphStreamOrdering, in01(c.graphStreamOrdering)},
        {"collnetEnable", c.collnetEnable, in01(c.collnetEnable)},
        {"graphUsageMode", c.graphUsageMode, c.graphUsageMode == U || (c.graphUsageMode >= 0 && c.graphUsageMode <= 2)},
        {"cgaClusterSize", c.cgaClusterSize, c.cgaClusterSize == U || c.cgaClusterSize >= 0},
        {"minCTAs", c.minCTAs, c.minCTAs == U || c.minCTAs > 0},
        {"maxCTAs", c.maxCTAs, c.maxCTAs == U || c.maxCTAs > 0},
        {"nvlsCTAs", c.nvlsCTAs, c.nvlsCTAs == U || c.nvlsCTAs > 0},
        {"maxP2pPeers", c.maxP2pPeers, c.maxP2pPeers == U || c.maxP2pPeers > 0},
        /* Compared raw, as NCCL 2.30 does: minCTAs set while maxCTAs is UNDEF is rejected. */
        {"minCTAs", c.minCTAs, c.minCTAs <= c.maxCTAs},
        {"nChannelsPerNetPeer", c.nChannelsPerNetPeer,
         c.nChannelsPerNetPeer == U || (c.nChannelsPerNetPeer >= 1 && c.nChannelsPerNetPeer <= 64)},
        {"CTAPolicy", c.CTAPolicy, c.CTAPolicy == U || (c.CTAPolicy >= 0 && c.CTAPolicy <= 3)},
        {"numRmaCtx", c.numRmaCtx, c.numRmaCtx == U || c.numRmaCtx >= 0},
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (!checks[i].ok)
            return host_fail(ncclInvalidArgument, "%s: config.%s = %d is out of range", fn, checks[i].field,
                             checks[i].value);
    if (c.blocking == U)
        c.blocking = 1;
    if (p->comm_blocking >= 0)
        c.blocking = p->comm_blocking;
    *out = c;
    return ncclSuccess;
}
