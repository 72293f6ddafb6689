/* The C layouts behind the struct wrapper classes (nccl_abi.h, NCCL 2.32.3) and their
 * initializers, which stamp what the NCCL_*_INITIALIZER macros do. Field names are nccl4py
 * 0.6.0's; structs.c builds the classes and _struct_layouts() the numpy dtypes from these tables,
 * so an offset is written down once, as an offsetof. */
#include "structs/struct_layouts.h"

#include <string.h>

#define U NCCL_CONFIG_UNDEF_INT

static void init_zero(void *p) { (void)p; }

static void init_config(void *p)
{
    ncclConfig_t *c = p;
    c->size = sizeof *c;
    c->magic = NCCL_API_MAGIC;
    c->version = NCCL_ABI_API_VERSION;
    int *ints[] = {&c->blocking, &c->cgaClusterSize, &c->minCTAs, &c->maxCTAs, &c->splitShare,
                   &c->trafficClass, &c->collnetEnable, &c->CTAPolicy, &c->shrinkShare, &c->nvlsCTAs,
                   &c->nChannelsPerNetPeer, &c->nvlinkCentricSched, &c->graphUsageMode, &c->numRmaCtx,
                   &c->maxP2pPeers, &c->graphStreamOrdering, &c->launchOrderImplicit, &c->numRmaSig,
                   &c->rmaEagerInit, &c->hostCftMode, &c->nvlsHostMode};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        *ints[i] = U;
}

static void init_sim_info(void *p)
{
    ncclSimInfo_t *s = p;
    s->size = sizeof *s;
    s->magic = NCCL_SIM_INFO_MAGIC;
    s->version = NCCL_ABI_API_VERSION;
    s->estimatedTime = NCCL_UNDEF_FLOAT;
}

static void init_comm_properties(void *p)
{
    ncclCommProperties_t *c = p;
    c->size = sizeof *c;
    c->magic = NCCL_API_MAGIC;
    c->version = NCCL_ABI_API_VERSION;
}

static void init_coll_config(void *p)
{
    ncclCollConfig_t *c = p;
    c->size = sizeof *c;
    c->magic = NCCL_API_MAGIC;
    c->version = NCCL_ABI_API_VERSION;
    c->minCTAs = c->maxCTAs = c->nvlsCTAs = c->cgaClusterSize = U;
    c->forceAlgSelection = 1;
    c->CTAPolicy = U;
}

static void init_encryption_config(void *p)
{
    ncclEncryptionConfig_t *c = p;
    c->size = sizeof *c;
    c->magic = NCCL_API_MAGIC;
    c->version = NCCL_ABI_API_VERSION;
    c->mode = ncclEncryptionModeNone;
}

static void init_dev_comm_requirements(void *p)
{
    ncclDevCommRequirements_t *r = p;
    r->size = sizeof *r;
    r->magic = NCCL_API_MAGIC;
    r->version = NCCL_ABI_API_VERSION;
    r->ginContextCount = 4;
    r->ginConnectionType = ncclGinConnectionNone;
    r->ginTrafficClass = U;
    r->ginStrongSignalsRequired = 1;
    r->ginVaSignalsRequired = 1;
    r->ginCustomStride = 1;
    r->ginType = ncclGinTypeNone;
}

/* A field's docstring names the C member it maps to, so help() on a class shows the header's name. */
#define FIELD(pyname, kind, type, member) {pyname, kind, offsetof(type, member), 0, -1, #type "." #member}
#define CSTR(pyname, type, member, slot) {pyname, F_CSTR, offsetof(type, member), 0, slot, #type "." #member}
#define NESTED(pyname, type, member, sub) {pyname, F_STRUCT, offsetof(type, member), 0, sub, #type "." #member}
#define ARRAY(pyname, type, member, elem, n) {pyname, F_ARRAY, offsetof(type, member), n, elem, #type "." #member}
#define HEADER(type) FIELD("size_", F_SIZE, type, size), FIELD("magic", F_U32, type, magic), \
                     FIELD("version", F_U32, type, version)
#define END {NULL, 0, 0, 0, 0, NULL}

static const nx_field unique_id_fields[] = {
    {"internal", F_BYTES, 0, NCCL_UNIQUE_ID_BYTES, -1, "ncclUniqueId.internal (the id's opaque bytes)"},
    END,
};
static const nx_field config_fields[] = {
    HEADER(ncclConfig_t),
    FIELD("blocking", F_I32, ncclConfig_t, blocking),
    FIELD("cga_cluster_size", F_I32, ncclConfig_t, cgaClusterSize),
    FIELD("min_ctas", F_I32, ncclConfig_t, minCTAs),
    FIELD("max_ctas", F_I32, ncclConfig_t, maxCTAs),
    CSTR("net_name", ncclConfig_t, netName, 0),
    FIELD("split_share", F_I32, ncclConfig_t, splitShare),
    FIELD("traffic_class", F_I32, ncclConfig_t, trafficClass),
    CSTR("comm_name", ncclConfig_t, commName, 1),
    FIELD("collnet_enable", F_I32, ncclConfig_t, collnetEnable),
    FIELD("cta_policy", F_I32, ncclConfig_t, CTAPolicy),
    FIELD("shrink_share", F_I32, ncclConfig_t, shrinkShare),
    FIELD("nvls_ctas", F_I32, ncclConfig_t, nvlsCTAs),
    FIELD("n_channels_per_net_peer", F_I32, ncclConfig_t, nChannelsPerNetPeer),
    FIELD("nvlink_centric_sched", F_I32, ncclConfig_t, nvlinkCentricSched),
    FIELD("graph_usage_mode", F_I32, ncclConfig_t, graphUsageMode),
    FIELD("num_rma_ctx", F_I32, ncclConfig_t, numRmaCtx),
    FIELD("max_p2p_peers", F_I32, ncclConfig_t, maxP2pPeers),
    FIELD("graph_stream_ordering", F_I32, ncclConfig_t, graphStreamOrdering),
    FIELD("launch_order_implicit", F_I32, ncclConfig_t, launchOrderImplicit),
    FIELD("num_rma_sig", F_I32, ncclConfig_t, numRmaSig),
    FIELD("rma_eager_init", F_I32, ncclConfig_t, rmaEagerInit),
    FIELD("host_cft_mode", F_I32, ncclConfig_t, hostCftMode),
    FIELD("nvls_host_mode", F_I32, ncclConfig_t, nvlsHostMode),
    END,
};
static const nx_field sim_info_fields[] = {
    HEADER(ncclSimInfo_t),
    FIELD("estimated_time", F_F32, ncclSimInfo_t, estimatedTime),
    END,
};
static const nx_field wait_signal_desc_fields[] = {
    FIELD("op_cnt", F_I32, ncclWaitSignalDesc_t, opCnt),
    FIELD("peer", F_I32, ncclWaitSignalDesc_t, peer),
    FIELD("sig_idx", F_I32, ncclWaitSignalDesc_t, sigIdx),
    FIELD("ctx", F_I32, ncclWaitSignalDesc_t, ctx),
    END,
};
static const nx_field comm_properties_fields[] = {
    HEADER(ncclCommProperties_t),
    FIELD("rank", F_I32, ncclCommProperties_t, rank),
    FIELD("n_ranks", F_I32, ncclCommProperties_t, nRanks),
    FIELD("cuda_dev", F_I32, ncclCommProperties_t, cudaDev),
    FIELD("nvml_dev", F_I32, ncclCommProperties_t, nvmlDev),
    FIELD("device_api_support", F_U8, ncclCommProperties_t, deviceApiSupport),
    FIELD("multimem_support", F_U8, ncclCommProperties_t, multimemSupport),
    FIELD("gin_type", F_I32, ncclCommProperties_t, ginType),
    FIELD("n_lsa_teams", F_I32, ncclCommProperties_t, nLsaTeams),
    FIELD("host_rma_support", F_U8, ncclCommProperties_t, hostRmaSupport),
    FIELD("railed_gin_type", F_I32, ncclCommProperties_t, railedGinType),
    FIELD("comm_hash", F_U64, ncclCommProperties_t, commHash),
    FIELD("gin_min_stride", F_I32, ncclCommProperties_t, ginMinStride),
    FIELD("gin_connection_type", F_I32, ncclCommProperties_t, ginConnectionType),
    ARRAY("gin_support", ncclCommProperties_t, ginSupport, F_U8, NCCL_GIN_SUPPORT_SLOTS),
    FIELD("dev_comm_runtime_version_size", F_SIZE, ncclCommProperties_t, devCommRuntimeVersionSize),
    FIELD("cft_support", F_U8, ncclCommProperties_t, cftSupport),
    FIELD("cft_multicast_support", F_U8, ncclCommProperties_t, cftMulticastSupport),
    FIELD("cft_counted_support", F_U8, ncclCommProperties_t, cftCountedSupport),
    END,
};
static const nx_field coll_config_fields[] = {
    HEADER(ncclCollConfig_t),
    FIELD("ext", F_PTR, ncclCollConfig_t, ext),
    FIELD("min_ctas", F_I32, ncclCollConfig_t, minCTAs),
    FIELD("max_ctas", F_I32, ncclCollConfig_t, maxCTAs),
    FIELD("nvls_ctas", F_I32, ncclCollConfig_t, nvlsCTAs),
    FIELD("cga_cluster_size", F_I32, ncclCollConfig_t, cgaClusterSize),
    CSTR("alg_selection", ncclCollConfig_t, algSelection, 0),
    FIELD("force_alg_selection", F_I32, ncclCollConfig_t, forceAlgSelection),
    FIELD("cta_policy", F_I32, ncclCollConfig_t, CTAPolicy),
    FIELD("user_profiler_tag", F_U64, ncclCollConfig_t, userProfilerTag),
    FIELD("launch_completion_event_handle", F_PTR, ncclCollConfig_t, launchCompletionEvent),
    END,
};
/* key is {vendorId, optionId}; val is the pointer-sized union (int i, const char *s, void *raw),
 * read and written as the address-sized value: an int i sits in its low 4 bytes. */
static const nx_field config_ext_fields[] = {
    FIELD("next", F_PTR, ncclConfigExt_t, next),
    ARRAY("key", ncclConfigExt_t, key, F_I32, 2),
    FIELD("val", F_PTR, ncclConfigExt_t, val),
    END,
};
static const nx_field encryption_config_fields[] = {
    HEADER(ncclEncryptionConfig_t),
    FIELD("mode", F_I32, ncclEncryptionConfig_t, mode),
    CSTR("psk", ncclEncryptionConfig_t, psk, 0),
    END,
};
static const nx_field team_fields[] = {
    FIELD("n_ranks", F_I32, ncclTeam_t, nRanks),
    FIELD("rank", F_I32, ncclTeam_t, rank),
    FIELD("stride", F_I32, ncclTeam_t, stride),
    END,
};
static const nx_field multimem_handle_fields[] = {
    FIELD("mc_base_ptr", F_PTR, ncclMultimemHandle_t, mcBasePtr),
    END,
};
static const nx_field lsa_barrier_handle_fields[] = {
    FIELD("buf_handle", F_U32, ncclLsaBarrierHandle_t, bufHandle),
    FIELD("n_barriers", F_I32, ncclLsaBarrierHandle_t, nBarriers),
    END,
};
static const nx_field gin_barrier_handle_fields[] = {
    FIELD("signal0", F_U32, ncclGinBarrierHandle_t, signal0),
    FIELD("unused", F_U32, ncclGinBarrierHandle_t, unused),
    END,
};
static const nx_field cft_barrier_handle_fields[] = {
    FIELD("buf_handle", F_U32, ncclCftBarrierHandle_t, bufHandle),
    FIELD("n_barriers", F_I32, ncclCftBarrierHandle_t, nBarriers),
    END,
};
static const nx_field ll_a2a_handle_fields[] = {
    FIELD("buf_handle", F_U32, ncclLLA2AHandle_t, bufHandle),
    FIELD("n_slots", F_U32, ncclLLA2AHandle_t, nSlots),
    END,
};
static const nx_field resource_window_vidmem_fields[] = {
    FIELD("lsa_flat_base", F_PTR, ncclResourceWindowVidmem_t, lsaFlatBase),
    FIELD("stride4g", F_U32, ncclResourceWindowVidmem_t, stride4G),
    FIELD("mc_offset4k", F_U32, ncclResourceWindowVidmem_t, mcOffset4K),
    END,
};
static const nx_field dev_resource_requirements_fields[] = {
    FIELD("next", F_PTR, ncclDevResourceRequirements_t, next),
    FIELD("buffer_size", F_SIZE, ncclDevResourceRequirements_t, bufferSize),
    FIELD("buffer_align", F_SIZE, ncclDevResourceRequirements_t, bufferAlign),
    FIELD("out_buffer_handle", F_PTR, ncclDevResourceRequirements_t, outBufferHandle),
    FIELD("gin_signal_count", F_I32, ncclDevResourceRequirements_t, ginSignalCount),
    FIELD("gin_counter_count", F_I32, ncclDevResourceRequirements_t, ginCounterCount),
    FIELD("out_gin_signal_start", F_PTR, ncclDevResourceRequirements_t, outGinSignalStart),
    FIELD("out_gin_counter_start", F_PTR, ncclDevResourceRequirements_t, outGinCounterStart),
    END,
};
static const nx_field team_requirements_fields[] = {
    FIELD("next", F_PTR, ncclTeamRequirements_t, next),
    NESTED("team", ncclTeamRequirements_t, team, NX_STRUCT_TEAM),
    FIELD("multimem", F_U8, ncclTeamRequirements_t, multimem),
    FIELD("out_multimem_handle", F_PTR, ncclTeamRequirements_t, outMultimemHandle),
    END,
};
static const nx_field dev_comm_requirements_fields[] = {
    HEADER(ncclDevCommRequirements_t),
    FIELD("resource_requirements_list", F_PTR, ncclDevCommRequirements_t, resourceRequirementsList),
    FIELD("team_requirements_list", F_PTR, ncclDevCommRequirements_t, teamRequirementsList),
    FIELD("lsa_multimem", F_U8, ncclDevCommRequirements_t, lsaMultimem),
    FIELD("barrier_count", F_I32, ncclDevCommRequirements_t, barrierCount),
    FIELD("lsa_barrier_count", F_I32, ncclDevCommRequirements_t, lsaBarrierCount),
    FIELD("rail_gin_barrier_count", F_I32, ncclDevCommRequirements_t, railGinBarrierCount),
    FIELD("lsa_ll_a2a_block_count", F_I32, ncclDevCommRequirements_t, lsaLLA2ABlockCount),
    FIELD("lsa_ll_a2a_slot_count", F_I32, ncclDevCommRequirements_t, lsaLLA2ASlotCount),
    FIELD("gin_force_enable", F_U8, ncclDevCommRequirements_t, ginForceEnable),
    FIELD("gin_context_count", F_I32, ncclDevCommRequirements_t, ginContextCount),
    FIELD("gin_signal_count", F_I32, ncclDevCommRequirements_t, ginSignalCount),
    FIELD("gin_counter_count", F_I32, ncclDevCommRequirements_t, ginCounterCount),
    FIELD("gin_connection_type", F_I32, ncclDevCommRequirements_t, ginConnectionType),
    FIELD("gin_exclusive_contexts", F_U8, ncclDevCommRequirements_t, ginExclusiveContexts),
    FIELD("gin_queue_depth", F_I32, ncclDevCommRequirements_t, ginQueueDepth),
    FIELD("gin_traffic_class", F_I32, ncclDevCommRequirements_t, ginTrafficClass),
    FIELD("world_gin_barrier_count", F_I32, ncclDevCommRequirements_t, worldGinBarrierCount),
    FIELD("gin_strong_signals_required", F_U8, ncclDevCommRequirements_t, ginStrongSignalsRequired),
    FIELD("gin_va_signals_required", F_U8, ncclDevCommRequirements_t, ginVaSignalsRequired),
    FIELD("gin_custom_stride", F_I32, ncclDevCommRequirements_t, ginCustomStride),
    FIELD("gin_type", F_I32, ncclDevCommRequirements_t, ginType),
    FIELD("use_runtime_version", F_U8, ncclDevCommRequirements_t, useRuntimeVersion),
    FIELD("cft_caps", F_I32, ncclDevCommRequirements_t, cftCaps),
    FIELD("cft_barrier_count", F_I32, ncclDevCommRequirements_t, cftBarrierCount),
    END,
};
static const nx_field dev_comm_fields[] = {
    FIELD("magic", F_U32, ncclDevComm_t, magic),
    FIELD("version", F_U32, ncclDevComm_t, version),
    FIELD("rank", F_I32, ncclDevComm_t, rank),
    FIELD("n_ranks", F_I32, ncclDevComm_t, nRanks),
    FIELD("n_ranks_rcp32", F_U32, ncclDevComm_t, nRanks_rcp32),
    FIELD("lsa_rank", F_I32, ncclDevComm_t, lsaRank),
    FIELD("lsa_size", F_I32, ncclDevComm_t, lsaSize),
    FIELD("lsa_size_rcp32", F_U32, ncclDevComm_t, lsaSize_rcp32),
    FIELD("window_table", F_PTR, ncclDevComm_t, windowTable),
    FIELD("resource_window", F_PTR, ncclDevComm_t, resourceWindow),
    NESTED("resource_window_inlined", ncclDevComm_t, resourceWindow_inlined, NX_STRUCT_RESOURCE_WINDOW_VIDMEM),
    NESTED("hybrid_dense_gin_barrier", ncclDevComm_t, hybridDenseGinBarrier, NX_STRUCT_GIN_BARRIER_HANDLE),
    NESTED("lsa_multimem", ncclDevComm_t, lsaMultimem, NX_STRUCT_MULTIMEM_HANDLE),
    NESTED("lsa_barrier", ncclDevComm_t, lsaBarrier, NX_STRUCT_LSA_BARRIER_HANDLE),
    NESTED("rail_gin_barrier", ncclDevComm_t, railGinBarrier, NX_STRUCT_GIN_BARRIER_HANDLE),
    FIELD("gin_connection_count", F_U8, ncclDevComm_t, ginConnectionCount),
    FIELD("backend_index", F_U8, ncclDevComm_t, backendIndex),
    ARRAY("gin_net_device_types", ncclDevComm_t, ginNetDeviceTypes, F_U8, NCCL_GIN_MAX_CONNECTIONS),
    ARRAY("gin_handles", ncclDevComm_t, ginHandles, F_PTR, NCCL_GIN_MAX_CONNECTIONS),
    FIELD("gin_signal_count", F_I32, ncclDevComm_t, ginSignalCount),
    FIELD("gin_counter_count", F_I32, ncclDevComm_t, ginCounterCount),
    FIELD("gin_signal_shadows", F_PTR, ncclDevComm_t, ginSignalShadows),
    FIELD("gin_context_count", F_U32, ncclDevComm_t, ginContextCount),
    FIELD("gin_connection_stride", F_I32, ncclDevComm_t, ginConnectionStride),
    FIELD("gin_context_stride", F_I32, ncclDevComm_t, ginContextStride),
    FIELD("gin_strong_legacy_signals", F_U8, ncclDevComm_t, ginStrongLegacySignals),
    FIELD("abort_flag", F_PTR, ncclDevComm_t, abortFlag),
    NESTED("hybrid_lsa_barrier", ncclDevComm_t, hybridLsaBarrier, NX_STRUCT_LSA_BARRIER_HANDLE),
    NESTED("hybrid_rail_gin_barrier", ncclDevComm_t, hybridRailGinBarrier, NX_STRUCT_GIN_BARRIER_HANDLE),
    NESTED("world_gin_barrier", ncclDevComm_t, worldGinBarrier, NX_STRUCT_GIN_BARRIER_HANDLE),
    FIELD("gin_connection_stride_rcp32", F_U32, ncclDevComm_t, ginConnectionStride_rcp32),
    FIELD("cft_rank", F_I32, ncclDevComm_t, cftRank),
    FIELD("cft_size", F_I32, ncclDevComm_t, cftSize),
    FIELD("cft_multimem_rank", F_I32, ncclDevComm_t, cftMultimemRank),
    FIELD("cft_multimem_size", F_I32, ncclDevComm_t, cftMultimemSize),
    FIELD("cft_multimem_size_rcp32", F_U32, ncclDevComm_t, cftMultimemSize_rcp32),
    FIELD("uc_le_id", F_U32, ncclDevComm_t, ucLeId),
    FIELD("mc_le_id", F_U32, ncclDevComm_t, mcLeId),
    NESTED("cft_barrier", ncclDevComm_t, cftBarrier, NX_STRUCT_CFT_BARRIER_HANDLE),
    NESTED("cft_multimem_barrier", ncclDevComm_t, cftMultimemBarrier, NX_STRUCT_CFT_BARRIER_HANDLE),
    END,
};

/* The class docstring starts with its text signature (the classes take no arguments), then says
 * which C struct the class wraps and how to get one from memory that already holds it. */
#define DESC(kind, cls, dtype, type, init, fields, what)                                                  \
    [kind] = {"nccl.bindings.nccl." cls, cls, dtype, sizeof(type), init, fields,                          \
              cls "()\n--\n\n" what "\n\nA wrapper of " #type ", zero-initialised as its NCCL initializer "    \
                  "does. Fields are attributes; from_buffer(), from_data() and from_ptr() view existing "      \
                  "memory; int(obj) and .ptr give the address; " dtype " is the matching numpy dtype."}
const nx_struct_desc nx_struct_descs[NX_NSTRUCTS] = {
    DESC(NX_STRUCT_UNIQUE_ID, "UniqueId", "unique_id_dtype", ncclUniqueId, init_zero, unique_id_fields,
         "A unique id: what every rank of a new communicator must share (get_unique_id())."),
    DESC(NX_STRUCT_CONFIG, "Config", "config_dtype", ncclConfig_t, init_config, config_fields,
         "Communicator configuration for comm_init_rank_config, comm_split and comm_shrink."),
    DESC(NX_STRUCT_SIM_INFO, "SimInfo", "sim_info_dtype", ncclSimInfo_t, init_sim_info, sim_info_fields,
         "What a group simulation reports (group_simulate_end): the estimated time."),
    DESC(NX_STRUCT_WAIT_SIGNAL_DESC, "WaitSignalDesc", "wait_signal_desc_dtype", ncclWaitSignalDesc_t, init_zero,
         wait_signal_desc_fields,
         "One peer's entry of wait_signal: the signal count to wait for from that peer."),
    DESC(NX_STRUCT_COMM_PROPERTIES, "CommProperties", "comm_properties_dtype", ncclCommProperties_t,
         init_comm_properties, comm_properties_fields,
         "What comm_query_properties reports about a communicator (ranks, devices, supported features)."),
    DESC(NX_STRUCT_COLL_CONFIG, "CollConfig", "coll_config_dtype", ncclCollConfig_t, init_coll_config,
         coll_config_fields,
         "Per-call settings of the ``*_config`` collectives (CTAs, algorithm selection)."),
    DESC(NX_STRUCT_CONFIG_EXT, "ConfigExt", "config_ext_dtype", ncclConfigExt_t, init_zero, config_ext_fields,
         "Extended communicator configuration (ncclConfigExt_t)."),
    DESC(NX_STRUCT_ENCRYPTION_CONFIG, "EncryptionConfig", "encryption_config_dtype", ncclEncryptionConfig_t,
         init_encryption_config, encryption_config_fields,
         "Traffic encryption settings for set_encryption."),
    DESC(NX_STRUCT_TEAM, "Team", "team_dtype", ncclTeam_t, init_zero, team_fields,
         "A team (a set of ranks) of a device communicator: rank, size and stride."),
    DESC(NX_STRUCT_MULTIMEM_HANDLE, "MultimemHandle", "multimem_handle_dtype", ncclMultimemHandle_t, init_zero,
         multimem_handle_fields,
         "A multimem (NVLS) handle of a device communicator."),
    DESC(NX_STRUCT_LSA_BARRIER_HANDLE, "LsaBarrierHandle", "lsa_barrier_handle_dtype", ncclLsaBarrierHandle_t,
         init_zero, lsa_barrier_handle_fields,
         "A load/store-accessible barrier handle of a device communicator."),
    DESC(NX_STRUCT_GIN_BARRIER_HANDLE, "GinBarrierHandle", "gin_barrier_handle_dtype", ncclGinBarrierHandle_t,
         init_zero, gin_barrier_handle_fields,
         "A GPU-initiated-networking barrier handle of a device communicator."),
    DESC(NX_STRUCT_CFT_BARRIER_HANDLE, "CftBarrierHandle", "cft_barrier_handle_dtype", ncclCftBarrierHandle_t,
         init_zero, cft_barrier_handle_fields,
         "A CFT barrier handle of a device communicator."),
    DESC(NX_STRUCT_LL_A2A_HANDLE, "LLA2AHandle", "ll_a2a_handle_dtype", ncclLLA2AHandle_t, init_zero,
         ll_a2a_handle_fields,
         "A low-latency all-to-all handle of a device communicator."),
    DESC(NX_STRUCT_RESOURCE_WINDOW_VIDMEM, "ResourceWindowVidmem", "resource_window_vidmem_dtype",
         ncclResourceWindowVidmem_t, init_zero, resource_window_vidmem_fields,
         "A window's device-memory resource of a device communicator."),
    DESC(NX_STRUCT_DEV_RESOURCE_REQUIREMENTS, "DevResourceRequirements", "dev_resource_requirements_dtype",
         ncclDevResourceRequirements_t, init_zero, dev_resource_requirements_fields,
         "Resources a device communicator must provide (a linked list entry of DevCommRequirements)."),
    DESC(NX_STRUCT_TEAM_REQUIREMENTS, "TeamRequirements", "team_requirements_dtype", ncclTeamRequirements_t,
         init_zero, team_requirements_fields,
         "A team a device communicator must provide (a linked list entry of DevCommRequirements)."),
    DESC(NX_STRUCT_DEV_COMM_REQUIREMENTS, "DevCommRequirements", "dev_comm_requirements_dtype",
         ncclDevCommRequirements_t, init_dev_comm_requirements, dev_comm_requirements_fields,
         "What dev_comm_create must provide: barriers, LSA/GIN resources, teams."),
    DESC(NX_STRUCT_DEV_COMM, "DevComm", "dev_comm_dtype", ncclDevComm_t, init_zero, dev_comm_fields,
         "A device communicator as dev_comm_create fills it (read-only on the host)."),
};

size_t nx_field_elem_size(nx_field_kind elem)
{
    switch (elem) {
    case F_U8: return 1;
    case F_I32: return 4;
    default: return 8; /* F_PTR */
    }
}
