"""Reference data from docs/compatibility.md#functions-and-minimum-versions and
docs/compatibility.md#rccl-only-collectives that the binding tests compare the code
against. Written down here by hand, from the specification, and deliberately not derived from the
ABI table or the extension: the tests check those against it."""

# The C symbol behind every Python function (docs/compatibility.md#functions-and-minimum-versions,
# docs/compatibility.md#rccl-only-collectives): the independent list the
# ABI table is checked against. Fallback spellings map to the function that falls back to them.
C_TO_PY = {
    "ncclMemAlloc": "mem_alloc", "ncclMemFree": "mem_free", "ncclGetVersion": "get_version",
    "ncclGetUniqueId": "get_unique_id", "ncclCommInitRankConfig": "comm_init_rank_config",
    "ncclCommInitRank": "comm_init_rank", "ncclCommInitAll": "comm_init_all",
    "ncclCommFinalize": "comm_finalize", "ncclCommDestroy": "comm_destroy", "ncclCommAbort": "comm_abort",
    "ncclCommRevoke": "comm_revoke", "ncclCommSplit": "comm_split", "ncclCommShrink": "comm_shrink",
    "ncclCommGetUniqueId": "comm_get_unique_id", "ncclCommGrow": "comm_grow",
    "ncclCommInitRankScalable": "comm_init_rank_scalable", "ncclGetErrorString": "get_error_string",
    "ncclGetLastError": "get_last_error", "ncclCommGetAsyncError": "comm_get_async_error",
    "ncclCommCount": "comm_count", "ncclCommCuDevice": "comm_cu_device", "ncclCommUserRank": "comm_user_rank",
    "ncclCommRegister": "comm_register", "ncclCommDeregister": "comm_deregister",
    "ncclCommSuspend": "comm_suspend", "ncclCommResume": "comm_resume", "ncclCommMemStats": "comm_mem_stats",
    "ncclCommWindowRegister": "comm_window_register", "ncclCommWindowDeregister": "comm_window_deregister",
    "ncclWinGetUserPtr": "win_get_user_ptr", "ncclRedOpCreatePreMulSum": "red_op_create_pre_mul_sum",
    "ncclRedOpDestroy": "red_op_destroy", "ncclReduce": "reduce", "ncclBcast": "bcast",
    "ncclBroadcast": "broadcast", "ncclAllReduce": "all_reduce", "ncclReduceScatter": "reduce_scatter",
    "ncclAllGather": "all_gather", "ncclAlltoAll": "allto_all", "ncclGather": "gather", "ncclScatter": "scatter",
    "ncclSend": "send", "ncclRecv": "recv", "ncclPutSignal": "put_signal", "ncclSignal": "signal",
    "ncclWaitSignal": "wait_signal", "ncclGroupStart": "group_start", "ncclGroupEnd": "group_end",
    "ncclGroupSimulateEnd": "group_simulate_end", "ncclCommQueryProperties": "comm_query_properties",
    "ncclDevCommCreate": "dev_comm_create", "ncclDevCommDestroy": "dev_comm_destroy",
    "ncclGetLsaMultimemDevicePointer": "get_lsa_multimem_device_pointer",
    "ncclGetLsaDevicePointer": "get_lsa_device_pointer", "ncclGetPeerDevicePointer": "get_peer_device_pointer",
    # NCCL 2.28-2.32 rows behind nccl4py 0.4.1-0.6.0's names
    "ncclGetMultimemDevicePointer": "get_multimem_device_pointer",
    "ncclGetMultimemDeviceLeInfo": "get_multimem_device_le_info", "ncclGetCftDeviceLeInfo": "get_cft_device_le_info",
    "ncclGetPeerDeviceLeInfo": "get_peer_device_le_info", "ncclTeamWorld": "team_world", "ncclTeamLsa": "team_lsa",
    "ncclTeamRail": "team_rail", "ncclTeamCft": "team_cft", "ncclTeamCftMultimem": "team_cft_multimem",
    "ncclTeamRankToWorld": "team_rank_to_world", "ncclTeamRankToLsa": "team_rank_to_lsa",
    "ncclLsaBarrierCreateRequirement": "lsa_barrier_create_requirement",
    "ncclGinBarrierCreateRequirement": "gin_barrier_create_requirement", "ncclLLA2ACalcSlots": "ll_a2a_calc_slots",
    "ncclLLA2ACreateRequirement": "ll_a2a_create_requirement", "ncclAllReduceConfig": "all_reduce_config",
    "ncclBroadcastConfig": "broadcast_config", "ncclReduceConfig": "reduce_config",
    "ncclAllGatherConfig": "all_gather_config", "ncclReduceScatterConfig": "reduce_scatter_config",
    "ncclAlltoAllConfig": "allto_all_config", "ncclGatherConfig": "gather_config", "ncclScatterConfig": "scatter_config",
    "ncclSetEncryption": "set_encryption", "ncclParamGetParameter": "param_get_parameter",
    "ncclParamGetAllParameterKeys": "param_get_all_keys", "ncclParamDumpAll": "param_dump_all",
    # the handle-based parameter API has no 0.6.0 name: the names its wrappers would take
    "ncclParamBind": "param_bind", "ncclParamGetI8": "param_get_i8", "ncclParamGetI16": "param_get_i16",
    "ncclParamGetI32": "param_get_i32", "ncclParamGetI64": "param_get_i64", "ncclParamGetU8": "param_get_u8",
    "ncclParamGetU16": "param_get_u16", "ncclParamGetU32": "param_get_u32", "ncclParamGetU64": "param_get_u64",
    "ncclParamGetStr": "param_get_str", "ncclParamGet": "param_get",
    # RCCL-only rows
    "ncclAllReduceWithBias": "rocm_extensions.all_reduce_with_bias",
    "ncclAlltoAllv": "rocm_extensions.all_to_all_v",
    "ncclAllToAllv": "rocm_extensions.all_to_all_v",
    "ncclAllToAll": "allto_all",
}
LOADER_FUNCTIONS = {"get_library_path", "get_library_flavour", "get_load_attempts", "check_status"}

# ABI rows with no Python wrapper, on purpose: NCCL 2.30's handle-based parameter reads, which no
# nccl4py release names (param_get_parameter reads any parameter by key). nccl.bindings.nccl lists
# the same rows in _NOT_WRAPPED, and `python -m nccl doctor` prints them.
NOT_WRAPPED = {
    "ncclParamBind", "ncclParamGetI8", "ncclParamGetI16", "ncclParamGetI32", "ncclParamGetI64", "ncclParamGetU8",
    "ncclParamGetU16", "ncclParamGetU32", "ncclParamGetU64", "ncclParamGetStr", "ncclParamGet",
}

# nccl4py 0.3.1 spellings kept as aliases of the names 0.5.0 gave them (same object).
ALIASES = {"lla2a_calc_slots": "ll_a2a_calc_slots", "RedOp_dummy": "RedOpDummy",
           "ResourceWindow_vidmem": "ResourceWindowVidmem"}

# Minimum NCCL versions of docs/compatibility.md#low-level-bindings ("<=2.3" is 2.3.0, the table's "always").
API_MIN_VERSION = {
    "ncclMemAlloc": "2.19.1", "ncclMemFree": "2.19.1", "ncclGetVersion": "2.3.0", "ncclGetUniqueId": "2.3.0",
    "ncclCommInitRankConfig": "2.14.3", "ncclCommInitRank": "2.3.0", "ncclCommInitAll": "2.3.0",
    "ncclCommFinalize": "2.14.3", "ncclCommDestroy": "2.3.0", "ncclCommAbort": "2.4.2",
    "ncclCommRevoke": "2.28.7", "ncclCommSplit": "2.18.1", "ncclCommShrink": "2.27.3",
    "ncclCommGetUniqueId": "2.29.2", "ncclCommGrow": "2.29.2", "ncclCommInitRankScalable": "2.23.4",
    "ncclGetErrorString": "2.3.0", "ncclGetLastError": "2.13.4", "ncclCommGetAsyncError": "2.4.2",
    "ncclCommCount": "2.3.0", "ncclCommCuDevice": "2.3.0", "ncclCommUserRank": "2.3.0",
    "ncclCommRegister": "2.19.1", "ncclCommDeregister": "2.19.1", "ncclCommSuspend": "2.29.7",
    "ncclCommResume": "2.29.7", "ncclCommMemStats": "2.29.7", "ncclCommWindowRegister": "2.27.3",
    "ncclCommWindowDeregister": "2.27.3", "ncclWinGetUserPtr": "2.29.2", "ncclRedOpCreatePreMulSum": "2.11.4",
    "ncclRedOpDestroy": "2.11.4", "ncclReduce": "2.3.0", "ncclBcast": "2.3.0", "ncclBroadcast": "2.3.0",
    "ncclAllReduce": "2.3.0", "ncclReduceScatter": "2.3.0", "ncclAllGather": "2.3.0", "ncclAlltoAll": "2.28.3",
    "ncclGather": "2.28.3", "ncclScatter": "2.28.3", "ncclSend": "2.7.3", "ncclRecv": "2.7.3",
    "ncclPutSignal": "2.29.2", "ncclSignal": "2.29.2", "ncclWaitSignal": "2.29.2", "ncclGroupStart": "2.3.0",
    "ncclGroupEnd": "2.3.0", "ncclGroupSimulateEnd": "2.22.3", "ncclCommQueryProperties": "2.29.2",
    "ncclDevCommCreate": "2.28.3", "ncclDevCommDestroy": "2.28.3", "ncclGetLsaMultimemDevicePointer": "2.29.2",
    "ncclGetLsaDevicePointer": "2.29.2", "ncclGetPeerDevicePointer": "2.29.2",
    # the first nvidia-nccl-cu12 release whose header declares each
    "ncclGetMultimemDevicePointer": "2.29.2", "ncclGetMultimemDeviceLeInfo": "2.31.2",
    "ncclGetCftDeviceLeInfo": "2.31.2", "ncclGetPeerDeviceLeInfo": "2.31.2", "ncclTeamWorld": "2.28.3",
    "ncclTeamLsa": "2.28.3", "ncclTeamRail": "2.28.3", "ncclTeamCft": "2.31.2", "ncclTeamCftMultimem": "2.31.2",
    "ncclTeamRankToWorld": "2.28.3", "ncclTeamRankToLsa": "2.28.3", "ncclLsaBarrierCreateRequirement": "2.28.3",
    "ncclGinBarrierCreateRequirement": "2.29.2", "ncclLLA2ACalcSlots": "2.28.3", "ncclLLA2ACreateRequirement": "2.28.3",
    "ncclAllReduceConfig": "2.31.2", "ncclBroadcastConfig": "2.31.2", "ncclReduceConfig": "2.31.2",
    "ncclAllGatherConfig": "2.31.2", "ncclReduceScatterConfig": "2.31.2", "ncclAlltoAllConfig": "2.31.2",
    "ncclGatherConfig": "2.31.2", "ncclScatterConfig": "2.31.2", "ncclSetEncryption": "2.32.3",
    "ncclParamBind": "2.30.4", "ncclParamGetI8": "2.30.4", "ncclParamGetI16": "2.30.4", "ncclParamGetI32": "2.30.4",
    "ncclParamGetI64": "2.30.4", "ncclParamGetU8": "2.30.4", "ncclParamGetU16": "2.30.4",
    "ncclParamGetU32": "2.30.4", "ncclParamGetU64": "2.30.4", "ncclParamGetStr": "2.30.4", "ncclParamGet": "2.30.4",
    "ncclParamGetParameter": "2.30.4", "ncclParamGetAllParameterKeys": "2.30.4", "ncclParamDumpAll": "2.30.4",
}

# The dual-form functions of docs/compatibility.md#functions-and-minimum-versions: (0.3.1 argument count, 0.2.0
# argument count).
DUAL_FORMS = {
    "get_unique_id": (0, 1), "comm_init_rank_config": (5, 4), "comm_init_rank": (4, 3), "comm_split": (5, 4),
    "comm_shrink": (6, 5), "comm_get_unique_id": (1, 2), "comm_grow": (6, 5), "comm_init_rank_scalable": (6, 5),
    "comm_window_register": (5, 4), "group_simulate_end": (0, 1), "comm_query_properties": (1, 2),
    "dev_comm_create": (2, 3),
}
# dev_comm_create's 0.3.1/0.6.0 form (comm, reqs) returns a DevComm; its 3-argument form fills the
# struct at an address (listed here as its 0.2.0 form).


def version_code(text):
    x, y, z = (int(p) for p in text.split("."))
    return x * 1000 + y * 100 + z if x <= 2 and y <= 8 else x * 10000 + y * 100 + z

# Argument count of every function's 0.3.1 form (docs/compatibility.md#functions-and-minimum-versions,
# docs/compatibility.md#rccl-only-collectives).
ARITY = {
    "mem_alloc": 1, "mem_free": 1, "get_version": 0, "get_unique_id": 0, "comm_init_rank_config": 5,
    "comm_init_rank": 4, "comm_init_all": 2, "comm_finalize": 1, "comm_destroy": 1, "comm_abort": 1,
    "comm_revoke": 2, "comm_split": 5, "comm_shrink": 6, "comm_get_unique_id": 1, "comm_grow": 6,
    "comm_init_rank_scalable": 6, "get_error_string": 1, "get_last_error": 1, "comm_get_async_error": 1,
    "comm_count": 1, "comm_cu_device": 1, "comm_user_rank": 1, "comm_register": 3, "comm_deregister": 2,
    "comm_suspend": 2, "comm_resume": 1, "comm_mem_stats": 2, "comm_window_register": 5,
    "comm_window_deregister": 2, "win_get_user_ptr": 2, "red_op_create_pre_mul_sum": 4, "red_op_destroy": 2,
    "reduce": 8, "bcast": 6, "broadcast": 7, "all_reduce": 7, "reduce_scatter": 7, "all_gather": 6,
    "allto_all": 6, "gather": 7, "scatter": 7, "send": 6, "recv": 6, "put_signal": 11, "signal": 6,
    "wait_signal": 4, "group_start": 0, "group_end": 0, "group_simulate_end": 0, "comm_query_properties": 1,
    "dev_comm_create": 2, "dev_comm_destroy": 2, "get_lsa_multimem_device_pointer": 2,
    "get_lsa_device_pointer": 3, "get_peer_device_pointer": 3,
    "all_reduce_config": 8, "broadcast_config": 8, "reduce_config": 9, "all_gather_config": 7,
    "reduce_scatter_config": 8, "allto_all_config": 7, "gather_config": 8, "scatter_config": 8, "team_world": 1,
    "team_lsa": 1, "team_rail": 1, "team_cft": 2, "team_cft_multimem": 1, "team_rank_to_world": 3,
    "team_rank_to_lsa": 3, "lsa_barrier_create_requirement": 4, "gin_barrier_create_requirement": 5,
    "ll_a2a_create_requirement": 4, "ll_a2a_calc_slots": 2, "get_multimem_device_pointer": 3,
    "get_multimem_device_le_info": 2, "get_cft_device_le_info": 4, "get_peer_device_le_info": 3,
    "param_get_parameter": 1, "param_get_all_keys": 0, "param_dump_all": 0, "set_encryption": 1,
    "rocm_extensions.all_reduce_with_bias": 8, "rocm_extensions.all_to_all_v": 9,
}

# NCCL 2.30's ncclGetErrorString texts (docs/compatibility.md#binding-enums-and-constants), used when no library
# is loaded.
BUILTIN_ERROR_TEXT = {
    0: "no error",
    1: "unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
    2: "unhandled system error (run with NCCL_DEBUG=INFO for details)",
    3: "internal error - please report this issue to the NCCL developers",
    4: "invalid argument (run with NCCL_DEBUG=WARN for details)",
    5: "invalid usage (run with NCCL_DEBUG=WARN for details)",
    6: "remote process exited or there was a network error",
    7: "NCCL operation in progress",
    8: "timeout",
}
UNKNOWN_ERROR_TEXT = "unknown result code"

# Result names (docs/compatibility.md#binding-enums-and-constants) and the NCCLError subclass of each code
# (docs/architecture.md#errors).
RESULT_NAMES = {0: "Success", 1: "UnhandledCudaError", 2: "SystemError", 3: "InternalError",
                4: "InvalidArgument", 5: "InvalidUsage", 6: "RemoteError", 7: "InProgress", 8: "Timeout",
                9: "NumResults"}
ERROR_CLASSES = {1: "NCCLUnhandledCudaError", 2: "NCCLSystemError", 3: "NCCLInternalError",
                 4: "NCCLInvalidArgument", 5: "NCCLInvalidUsage", 6: "NCCLRemoteError", 8: "NCCLTimeout"}
