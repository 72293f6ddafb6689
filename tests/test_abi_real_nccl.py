"""The struct layouts of nccl_abi.h (through nccl.bindings.nccl's classes and dtypes) against the
real NCCL 2.32.3 header of the nvidia-nccl-cu12 wheel (a test extra): a small C program compiled
against the wheel's nccl.h and nccl_device/host.h prints sizeof and offsetof of every field, and
every class must agree. The header needs CUDA's runtime header only for two opaque handle types,
so the test writes a stand-in for it; no CUDA SDK is involved."""

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import nccl.bindings.nccl as b
from nccl import _ext


def _wheel_include():
    try:
        spec = importlib.util.find_spec("nvidia.nccl")
    except ModuleNotFoundError:
        return None
    for d in (spec.submodule_search_locations if spec else None) or ():
        inc = Path(d) / "include"
        if (inc / "nccl.h").exists() and (inc / "nccl_device" / "host.h").exists():
            return inc
    return None


INCLUDE = _wheel_include()
pytestmark = pytest.mark.skipif(INCLUDE is None or shutil.which("gcc") is None,
                                reason="needs the nvidia-nccl-cu12 wheel's headers and gcc")

# Python class -> (C type in the wheel's headers, {field: C member}). Written from the headers'
# member names, independently of struct_layouts.c.
HEADER = {"size_": "size", "magic": "magic", "version": "version"}
LAYOUTS = {
    "UniqueId": ("ncclUniqueId", {"internal": "internal"}),
    "Config": ("ncclConfig_t", {**HEADER, "blocking": "blocking", "cga_cluster_size": "cgaClusterSize",
                                "min_ctas": "minCTAs", "max_ctas": "maxCTAs", "net_name": "netName",
                                "split_share": "splitShare", "traffic_class": "trafficClass",
                                "comm_name": "commName", "collnet_enable": "collnetEnable", "cta_policy": "CTAPolicy",
                                "shrink_share": "shrinkShare", "nvls_ctas": "nvlsCTAs",
                                "n_channels_per_net_peer": "nChannelsPerNetPeer",
                                "nvlink_centric_sched": "nvlinkCentricSched", "graph_usage_mode": "graphUsageMode",
                                "num_rma_ctx": "numRmaCtx", "max_p2p_peers": "maxP2pPeers",
                                "graph_stream_ordering": "graphStreamOrdering",
                                "launch_order_implicit": "launchOrderImplicit", "num_rma_sig": "numRmaSig",
                                "rma_eager_init": "rmaEagerInit", "host_cft_mode": "hostCftMode",
                                "nvls_host_mode": "nvlsHostMode"}),
    "SimInfo": ("ncclSimInfo_t", {**HEADER, "estimated_time": "estimatedTime"}),
    "WaitSignalDesc": ("ncclWaitSignalDesc_t", {"op_cnt": "opCnt", "peer": "peer", "sig_idx": "sigIdx",
                                                "ctx": "ctx"}),
    "CommProperties": ("ncclCommProperties_t", {
        **HEADER, "rank": "rank", "n_ranks": "nRanks", "cuda_dev": "cudaDev", "nvml_dev": "nvmlDev",
        "device_api_support": "deviceApiSupport", "multimem_support": "multimemSupport", "gin_type": "ginType",
        "n_lsa_teams": "nLsaTeams", "host_rma_support": "hostRmaSupport", "railed_gin_type": "railedGinType",
        "comm_hash": "commHash", "gin_min_stride": "ginMinStride", "gin_connection_type": "ginConnectionType",
        "gin_support": "ginSupport", "dev_comm_runtime_version_size": "devCommRuntimeVersionSize",
        "cft_support": "cftSupport", "cft_multicast_support": "cftMulticastSupport",
        "cft_counted_support": "cftCountedSupport"}),
    "CollConfig": ("ncclCollConfig_t", {
        **HEADER, "ext": "ext", "min_ctas": "minCTAs", "max_ctas": "maxCTAs", "nvls_ctas": "nvlsCTAs",
        "cga_cluster_size": "cgaClusterSize", "alg_selection": "algSelection",
        "force_alg_selection": "forceAlgSelection", "cta_policy": "CTAPolicy", "user_profiler_tag": "userProfilerTag",
        "launch_completion_event_handle": "launchCompletionEvent"}),
    "ConfigExt": ("ncclConfigExt_t", {"next": "next", "key": "key", "val": "val"}),
    "EncryptionConfig": ("ncclEncryptionConfig_t", {**HEADER, "mode": "mode", "psk": "psk"}),
    "Team": ("ncclTeam_t", {"n_ranks": "nRanks", "rank": "rank", "stride": "stride"}),
    "MultimemHandle": ("ncclMultimemHandle_t", {"mc_base_ptr": "mcBasePtr"}),
    "LsaBarrierHandle": ("ncclLsaBarrierHandle_t", {"buf_handle": "bufHandle", "n_barriers": "nBarriers"}),
    "GinBarrierHandle": ("ncclGinBarrierHandle_t", {"signal0": "signal0", "unused": "unused"}),
    "CftBarrierHandle": ("ncclCftBarrierHandle_t", {"buf_handle": "bufHandle", "n_barriers": "nBarriers"}),
    "LLA2AHandle": ("ncclLLA2AHandle_t", {"buf_handle": "bufHandle", "n_slots": "nSlots"}),
    "ResourceWindowVidmem": ("ncclResourceWindow_vidmem_t", {"lsa_flat_base": "lsaFlatBase", "stride4g": "stride4G",
                                                             "mc_offset4k": "mcOffset4K"}),
    "DevResourceRequirements": ("ncclDevResourceRequirements_t", {
        "next": "next", "buffer_size": "bufferSize", "buffer_align": "bufferAlign",
        "out_buffer_handle": "outBufferHandle", "gin_signal_count": "ginSignalCount",
        "gin_counter_count": "ginCounterCount", "out_gin_signal_start": "outGinSignalStart",
        "out_gin_counter_start": "outGinCounterStart"}),
    "TeamRequirements": ("ncclTeamRequirements_t", {"next": "next", "team": "team", "multimem": "multimem",
                                                    "out_multimem_handle": "outMultimemHandle"}),
    "DevCommRequirements": ("ncclDevCommRequirements_t", {
        **HEADER, "resource_requirements_list": "resourceRequirementsList",
        "team_requirements_list": "teamRequirementsList", "lsa_multimem": "lsaMultimem",
        "barrier_count": "barrierCount", "lsa_barrier_count": "lsaBarrierCount",
        "rail_gin_barrier_count": "railGinBarrierCount", "lsa_ll_a2a_block_count": "lsaLLA2ABlockCount",
        "lsa_ll_a2a_slot_count": "lsaLLA2ASlotCount", "gin_force_enable": "ginForceEnable",
        "gin_context_count": "ginContextCount", "gin_signal_count": "ginSignalCount",
        "gin_counter_count": "ginCounterCount", "gin_connection_type": "ginConnectionType",
        "gin_exclusive_contexts": "ginExclusiveContexts", "gin_queue_depth": "ginQueueDepth",
        "gin_traffic_class": "ginTrafficClass", "world_gin_barrier_count": "worldGinBarrierCount",
        "gin_strong_signals_required": "ginStrongSignalsRequired", "gin_va_signals_required": "ginVaSignalsRequired",
        "gin_custom_stride": "ginCustomStride", "gin_type": "ginType", "use_runtime_version": "useRuntimeVersion",
        "cft_caps": "cftCaps", "cft_barrier_count": "cftBarrierCount"}),
    "DevComm": ("struct ncclDevComm", {
        "magic": "magic", "version": "version", "rank": "rank", "n_ranks": "nRanks", "n_ranks_rcp32": "nRanks_rcp32",
        "lsa_rank": "lsaRank", "lsa_size": "lsaSize", "lsa_size_rcp32": "lsaSize_rcp32", "window_table": "windowTable",
        "resource_window": "resourceWindow", "resource_window_inlined": "resourceWindow_inlined",
        "hybrid_dense_gin_barrier": "hybridDenseGinBarrier", "lsa_multimem": "lsaMultimem",
        "lsa_barrier": "lsaBarrier", "rail_gin_barrier": "railGinBarrier",
        "gin_connection_count": "ginConnectionCount", "backend_index": "backendIndex",
        "gin_net_device_types": "ginNetDeviceTypes", "gin_handles": "ginHandles",
        "gin_signal_count": "ginSignalCount", "gin_counter_count": "ginCounterCount",
        "gin_signal_shadows": "ginSignalShadows", "gin_context_count": "ginContextCount",
        "gin_connection_stride": "ginConnectionStride", "gin_context_stride": "ginContextStride",
        "gin_strong_legacy_signals": "ginStrongLegacySignals", "abort_flag": "abortFlag",
        "hybrid_lsa_barrier": "hybridLsaBarrier", "hybrid_rail_gin_barrier": "hybridRailGinBarrier",
        "world_gin_barrier": "worldGinBarrier", "gin_connection_stride_rcp32": "ginConnectionStride_rcp32",
        "cft_rank": "cftRank", "cft_size": "cftSize", "cft_multimem_rank": "cftMultimemRank",
        "cft_multimem_size": "cftMultimemSize", "cft_multimem_size_rcp32": "cftMultimemSize_rcp32",
        "uc_le_id": "ucLeId", "mc_le_id": "mcLeId", "cft_barrier": "cftBarrier",
        "cft_multimem_barrier": "cftMultimemBarrier"}),
}

CUDA_STANDIN = """#pragma once
#include <stddef.h>
#include <stdint.h>
#define CUDART_VERSION 12090
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef enum { CU_MEM_LOCATION_TYPE_INVALID = 0 } CUmemLocationType;
"""


@pytest.fixture(scope="module")
def header(tmp_path_factory):
    """{'version': NCCL_VERSION_CODE, 'Class': size, 'Class.field': offset} from the wheel's headers."""
    d = tmp_path_factory.mktemp("nccl_h")
    cuda = d / "cuda"
    cuda.mkdir()
    (cuda / "cuda_runtime.h").write_text(CUDA_STANDIN)
    for name in ("cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "cuda.h"):
        (cuda / name).write_text("#pragma once\n")
    lines = ['#include <stdbool.h>', '#include <stdio.h>', '#include <nccl.h>', '#include <nccl_device/host.h>',
             "int main(void) {", '    printf("version %d\\n", NCCL_VERSION_CODE);']
    for cls, (ctype, fields) in LAYOUTS.items():
        lines.append(f'    printf("{cls} %zu\\n", sizeof({ctype}));')
        for field, member in fields.items():
            lines.append(f'    printf("{cls}.{field} %zu\\n", offsetof({ctype}, {member}));')
    lines += ["    return 0;", "}"]
    src = d / "layouts.c"
    src.write_text("\n".join(lines) + "\n")
    exe = d / "layouts"
    r = subprocess.run(["gcc", "-std=gnu11", "-I", str(cuda), "-I", str(INCLUDE), str(src), "-o", str(exe)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=30).stdout
    return {k: int(v) for k, v in (ln.split() for ln in out.splitlines())}


def test_header_is_the_version_we_implement(header):
    assert header["version"] == 23203
    assert b.Config().version == header["version"]


def test_every_class_is_listed():
    assert set(LAYOUTS) == set(_ext._struct_layouts())


@pytest.mark.parametrize("cls", sorted(LAYOUTS))
def test_sizes_and_offsets_match_the_header(header, cls):
    dtype_name, size, fields = _ext._struct_layouts()[cls]
    assert size == header[cls], f"sizeof {LAYOUTS[cls][0]}"
    assert len(bytes(getattr(b, cls)())) == header[cls]
    dt = getattr(b, dtype_name)
    assert dt.itemsize == header[cls]
    ours = {field: offset for field, offset, _, _ in fields}
    assert set(ours) == set(LAYOUTS[cls][1])
    for field in ours:
        assert ours[field] == header[f"{cls}.{field}"], f"{cls}.{field}"
        assert dt.fields[field][1] == header[f"{cls}.{field}"], f"{cls}.{field} in {dtype_name}"


def test_headline_sizes(header):
    assert (header["Config"], header["CommProperties"], header["CollConfig"], header["DevComm"]) == (120, 152, 72, 248)


def test_every_host_function_of_the_header_is_a_row():
    """Every function nccl.h and nccl_device/host.h declare for the host is an ABI row, except the
    ones abi.h leaves out on purpose (and says why)."""
    text = (INCLUDE / "nccl.h").read_text() + (INCLUDE / "nccl_device" / "host.h").read_text()
    text = re.sub(r"#if defined\(NCCL_OS_WINDOWS\).*?#endif", "", text, flags=re.S)
    declared = set(re.findall(r"^\s*(?:NCCL_EXTERN_C\s+)?(?:ncclResult_t|ncclTeam_t|int|void|const char\s*\*)\s+"
                              r"(nccl[A-Z]\w*)\s*\(", text, flags=re.M))
    declared -= {"ncclResetDebugInit"}  # deprecated, "not part of the NCCL API"
    rows = {name for name, _, rccl_only in _ext._abi_symbols() if not rccl_only}
    assert declared - rows == {"ncclCftBarrierCreateRequirement"}  # declared, exported by no release yet
    assert rows <= declared
