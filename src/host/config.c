/* ncclConfig_t parsing (docs/host-backend.md#config-parsing), following NCCL's parser: read `size`
 * first and copy only that many bytes, so a caller built against older or newer headers (or
 * RCCL's shorter layout ending at nvlsCTAs) keeps working; reset fields newer than the caller's
 * `version` to their defaults; then range-check. On the CPU only `blocking` and `commName` matter;
 * everything else is validated, stored and ignored.
 *
 * Also the checks of the other versioned argument structs: ncclCollConfig_t (the nccl*Config
 * collectives) and ncclEncryptionConfig_t (ncclSetEncryption). */
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
    c->launchOrderImplicit = U;
    c->numRmaSig = U;
    c->rmaEagerInit = U;
    c->hostCftMode = U;
    c->nvlsHostMode = U;
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
        if (tmp.version < V(2, 31, 0)) {
            tmp.launchOrderImplicit = U;
            tmp.numRmaSig = U;
            tmp.rmaEagerInit = U;
            tmp.hostCftMode = U;
        }
        if (tmp.version < V(2, 32, 0))
            tmp.nvlsHostMode = U;
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
        {"launchOrderImplicit", c.launchOrderImplicit, in01(c.launchOrderImplicit)},
        {"rmaEagerInit", c.rmaEagerInit, in01(c.rmaEagerInit)},
        {"numRmaSig", c.numRmaSig, c.numRmaSig == U || c.numRmaSig >= 0},
        {"hostCftMode", c.hostCftMode,
         c.hostCftMode == U || (c.hostCftMode >= ncclHostCftEnable && c.hostCftMode <= ncclHostCftFallback)},
        {"nvlsHostMode", c.nvlsHostMode, c.nvlsHostMode == U || c.nvlsHostMode >= 0},
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

/* ncclCollConfig_t as NCCL 2.32 reads it: at least the 2.31 size, the magic, then the fields of
 * min(size, ours). The host backend has one algorithm per collective and completes on the
 * calling thread (or at group end), so algSelection, the CTA counts, the profiler tag, vendor
 * options and the launch-completion event are validated and otherwise ignored, as the stream
 * argument is. */
ncclResult_t host_coll_config_check(const ncclCollConfig_t *in, const char *fn)
{
    ncclCollConfig_t c;
    if (in == NULL)
        return ncclSuccess; /* the plain collective */
    if (in->size < NCCL_COLL_CONFIG_MIN_SIZE)
        return host_fail(ncclInvalidArgument, "%s: config.size is %zu, below the %d bytes of NCCL 2.31's "
                         "ncclCollConfig_t: initialise it with NCCL_COLLCONFIG_INITIALIZER", fn, in->size,
                         NCCL_COLL_CONFIG_MIN_SIZE);
    if (in->magic != NCCL_API_MAGIC)
        return host_fail(ncclInvalidArgument, "%s: config.magic is 0x%x, not 0x%x: initialise it with "
                         "NCCL_COLLCONFIG_INITIALIZER", fn, in->magic, NCCL_API_MAGIC);
    memset(&c, 0, sizeof c);
    memcpy(&c, in, in->size < sizeof c ? in->size : sizeof c);
    const char *bad = NULL;
    int value = 0;
    if (!(c.minCTAs == U || c.minCTAs > 0))
        bad = "minCTAs", value = c.minCTAs;
    else if (!(c.maxCTAs == U || c.maxCTAs > 0))
        bad = "maxCTAs", value = c.maxCTAs;
    else if (!(c.nvlsCTAs == U || c.nvlsCTAs > 0))
        bad = "nvlsCTAs", value = c.nvlsCTAs;
    else if (!(c.cgaClusterSize == U || c.cgaClusterSize >= 0))
        bad = "cgaClusterSize", value = c.cgaClusterSize;
    else if (c.forceAlgSelection != 0 && c.forceAlgSelection != 1)
        bad = "forceAlgSelection", value = c.forceAlgSelection;
    else if (!(c.CTAPolicy == U || (c.CTAPolicy >= 0 && c.CTAPolicy <= 3)))
        bad = "CTAPolicy", value = c.CTAPolicy;
    if (bad != NULL)
        return host_fail(ncclInvalidArgument, "%s: config.%s = %d is out of range", fn, bad, value);
    if (c.minCTAs != U && c.maxCTAs != U && c.minCTAs > c.maxCTAs)
        return host_fail(ncclInvalidArgument, "%s: config.minCTAs = %d exceeds config.maxCTAs = %d", fn, c.minCTAs,
                         c.maxCTAs);
    return ncclSuccess;
}

/* ncclEncryptionConfig_t: the header, then the mode. */
ncclResult_t host_encryption_check(const ncclEncryptionConfig_t *in, int *mode)
{
    if (in == NULL)
        return host_fail(ncclInvalidArgument, "ncclSetEncryption: config is NULL");
    if (in->magic != NCCL_API_MAGIC)
        return host_fail(ncclInvalidArgument, "ncclSetEncryption: config.magic is 0x%x, not 0x%x: initialise it "
                         "with NCCL_ENCRYPTION_CONFIG_INITIALIZER", in->magic, NCCL_API_MAGIC);
    if (in->size < sizeof *in)
        return host_fail(ncclInvalidArgument, "ncclSetEncryption: config.size is %zu, not %zu", in->size, sizeof *in);
    if (in->mode != ncclEncryptionModeNone && in->mode != ncclEncryptionModePsk)
        return host_fail(ncclInvalidArgument, "ncclSetEncryption: config.mode = %d is neither NONE (0) nor PSK (1)",
                         in->mode);
    *mode = in->mode;
    return ncclSuccess;
}
