"""Bad input to the bindings (issue 2, "Bad input"; docs/compatibility.md#argument-conventions,
docs/compatibility.md#missing-symbols): wrong types,
negative sizes, values that overflow size_t / int / unsigned int / intptr_t, unknown enum values,
bad unique ids, arrays of the wrong length. Each raises the documented exception with a message
naming the argument, and the library is never called; nothing crashes.

Then the order of checks: arity before any load, the load before the symbol, the symbol before
any argument conversion.
"""

import os
import re
import textwrap

import pytest

ID = bytes(128)
BAD_ID = r"argument '{arg}': buf must be either a Python int representing the pointer address to a valid buffer, or a 1D contiguous buffer, of size bytes"
NOT_INT = r"{fn}\(\) argument '{arg}' must be an int, not {type}"
NEGATIVE = r"{fn}\(\) argument '{arg}' must be non-negative, got -\d+"
RANGE64 = r"{fn}\(\) argument '{arg}' is out of range for a 64-bit value"
NOT_C_INT = r"{fn}\(\) argument '{arg}' does not fit in a C int"
NOT_C_UINT = r"{fn}\(\) argument '{arg}' does not fit in a C unsigned int"
ENUM = r"{fn}\(\) argument '{arg}' must be a {what} value in \[{lo}, {hi}\], got {got}"

AR = "b.all_reduce"
OK7 = ["1", "2", "3", "7", "0", "4", "5"]  # valid all_reduce arguments, as source text


def ar(i, value):
    """all_reduce's arguments with argument i replaced (source text)."""
    args = list(OK7)
    args[i] = value
    return f"{AR}({', '.join(args)})"


# (id, call as source text, exception, message pattern (re.search))
CASES = [
    # wrong types
    ("sendbuff str", ar(0, "'a'"), "TypeError", NOT_INT.format(fn="all_reduce", arg="sendbuff", type="str")),
    ("count float", ar(2, "3.0"), "TypeError", NOT_INT.format(fn="all_reduce", arg="count", type="float")),
    ("datatype None", ar(3, "None"), "TypeError", NOT_INT.format(fn="all_reduce", arg="datatype", type="NoneType")),
    ("op str", ar(4, "'sum'"), "TypeError", NOT_INT.format(fn="all_reduce", arg="op", type="str")),
    # bool is an int subclass, but True is not PROD (1) and False is not SUM (0)
    ("op True", ar(4, "True"), "TypeError", r"all_reduce\(\) argument 'op' must be a RedOp, not bool"),
    ("op False", ar(4, "False"), "TypeError", r"all_reduce\(\) argument 'op' must be a RedOp, not bool"),
    ("reduce op True", "b.reduce(1, 2, 3, 7, True, 0, 4, 5)", "TypeError",
     r"reduce\(\) argument 'op' must be a RedOp, not bool"),
    ("comm list", ar(5, "[4]"), "TypeError", NOT_INT.format(fn="all_reduce", arg="comm", type="list")),
    ("stream object", ar(6, "object()"), "TypeError", NOT_INT.format(fn="all_reduce", arg="stream", type="object")),
    ("stream keyword float", "b.all_reduce(1, 2, 3, 7, 0, 4, stream=5.5)", "TypeError",
     NOT_INT.format(fn="all_reduce", arg="stream", type="float")),
    ("peer float", "b.send(1, 2, 3, 1.5, 4, 5)", "TypeError", NOT_INT.format(fn="send", arg="peer", type="float")),
    ("flags str", "b.put_signal(1, 2, 3, 4, 5, 6, 7, 8, 'x', 10, 11)", "TypeError",
     NOT_INT.format(fn="put_signal", arg="flags", type="str")),
    ("nranks str", "b.comm_init_rank(b.PointerBox().address, '4', ID, 0)", "TypeError",
     NOT_INT.format(fn="comm_init_rank", arg="nranks", type="str")),
    ("config float", "b.comm_init_rank_config(b.PointerBox().address, 2, ID, 0, 1.0)", "TypeError",
     NOT_INT.format(fn="comm_init_rank_config", arg="config", type="float")),
    ("mem_free bytes", "b.mem_free(b'x')", "TypeError", NOT_INT.format(fn="mem_free", arg="ptr", type="bytes")),
    ("get_error_string str", "b.get_error_string('4')", "TypeError",
     NOT_INT.format(fn="get_error_string", arg="result", type="str")),
    # negative sizes
    ("count -1", ar(2, "-1"), "OverflowError", NEGATIVE.format(fn="all_reduce", arg="count")),
    ("mem_alloc -5", "b.mem_alloc(-5)", "OverflowError", NEGATIVE.format(fn="mem_alloc", arg="size")),
    ("register size -1", "b.comm_register(1, 2, -1)", "OverflowError", NEGATIVE.format(fn="comm_register", arg="size")),
    ("peer_win_offset -1", "b.put_signal(1, 2, 3, 4, 5, -1, 7, 8, 9, 10, 11)", "OverflowError",
     NEGATIVE.format(fn="put_signal", arg="peer_win_offset")),
    ("offset -8", "b.get_lsa_device_pointer(1, -8, 0)", "OverflowError",
     NEGATIVE.format(fn="get_lsa_device_pointer", arg="offset")),
    ("window size -4096", "b.comm_window_register(1, 2, -4096, 0)", "OverflowError",
     NEGATIVE.format(fn="comm_window_register", arg="size")),
    # size_t overflow
    ("count 2**64", ar(2, "2**64"), "OverflowError", RANGE64.format(fn="all_reduce", arg="count")),
    ("mem_alloc 2**70", "b.mem_alloc(2**70)", "OverflowError", RANGE64.format(fn="mem_alloc", arg="size")),
    # int overflow
    ("peer 2**31", "b.send(1, 2, 3, 2**31, 4, 5)", "OverflowError", NOT_C_INT.format(fn="send", arg="peer")),
    ("root -2**31-1", "b.reduce(1, 2, 3, 7, 0, -2**31 - 1, 4, 5)", "OverflowError",
     NOT_C_INT.format(fn="reduce", arg="root")),
    ("nranks 2**31", "b.comm_init_rank(b.PointerBox().address, 2**31, ID, 0)", "OverflowError",
     NOT_C_INT.format(fn="comm_init_rank", arg="nranks")),
    ("revoke_flags 2**40", "b.comm_revoke(1, 2**40)", "OverflowError", NOT_C_INT.format(fn="comm_revoke", arg="revoke_flags")),
    ("color 2**63", "b.comm_split(1, 2**63, 0, 0)", "OverflowError", NOT_C_INT.format(fn="comm_split", arg="color")),
    ("rank 2**33", "b.comm_init_rank(2, ID, 2**33)", "OverflowError", NOT_C_INT.format(fn="comm_init_rank", arg="rank")),
    ("rank 2**64", "b.comm_init_rank(2, ID, 2**64)", "OverflowError", RANGE64.format(fn="comm_init_rank", arg="rank")),
    # unsigned int overflow
    ("flags -1", "b.signal(1, 2, 3, -1, 4, 5)", "OverflowError", NOT_C_UINT.format(fn="signal", arg="flags")),
    ("flags 2**32", "b.signal(1, 2, 3, 2**32, 4, 5)", "OverflowError", NOT_C_UINT.format(fn="signal", arg="flags")),
    # intptr_t overflow
    ("sendbuff 2**64", ar(0, "2**64"), "OverflowError", RANGE64.format(fn="all_reduce", arg="sendbuff")),
    ("sendbuff -2**63-1", ar(0, "-2**63 - 1"), "OverflowError", RANGE64.format(fn="all_reduce", arg="sendbuff")),
    ("comm 2**70", "b.comm_destroy(2**70)", "OverflowError", RANGE64.format(fn="comm_destroy", arg="comm")),
    ("newcomm 2**64", "b.comm_split(1, 0, 0, 2**64, 0)", "OverflowError", RANGE64.format(fn="comm_split", arg="newcomm")),
    # unknown enum values, negative ops
    ("datatype 12", ar(3, "12"), "ValueError",
     ENUM.format(fn="all_reduce", arg="datatype", what="DataType", lo=0, hi=11, got=12)),
    ("datatype -1", ar(3, "-1"), "ValueError",
     ENUM.format(fn="all_reduce", arg="datatype", what="DataType", lo=0, hi=11, got=-1)),
    ("datatype 2**31", ar(3, "2**31"), "OverflowError", NOT_C_INT.format(fn="all_reduce", arg="datatype")),
    ("send datatype 99", "b.send(1, 2, 99, 0, 4, 5)", "ValueError",
     ENUM.format(fn="send", arg="datatype", what="DataType", lo=0, hi=11, got=99)),
    ("op -1", ar(4, "-1"), "ValueError",
     ENUM.format(fn="all_reduce", arg="op", what="RedOp", lo=0, hi=2147483647, got=-1)),
    ("red_op_destroy -3", "b.red_op_destroy(-3, 1)", "ValueError",
     ENUM.format(fn="red_op_destroy", arg="op", what="RedOp", lo=0, hi=2147483647, got=-3)),
    ("reduce op -2", "b.reduce(1, 2, 3, 7, -2, 0, 4, 5)", "ValueError",
     ENUM.format(fn="reduce", arg="op", what="RedOp", lo=0, hi=2147483647, got=-2)),
    ("residence 2", "b.red_op_create_pre_mul_sum(1, 7, 2, 4)", "ValueError",
     ENUM.format(fn="red_op_create_pre_mul_sum", arg="residence", what="ScalarResidence", lo=0, hi=1, got=2)),
    ("residence -1", "b.red_op_create_pre_mul_sum(1, 7, -1, 4)", "ValueError",
     ENUM.format(fn="red_op_create_pre_mul_sum", arg="residence", what="ScalarResidence", lo=0, hi=1, got=-1)),
    ("pre_mul_sum datatype 12", "b.red_op_create_pre_mul_sum(1, 12, 0, 4)", "ValueError",
     ENUM.format(fn="red_op_create_pre_mul_sum", arg="datatype", what="DataType", lo=0, hi=11, got=12)),
    ("mem stat 4", "b.comm_mem_stats(1, 4)", "ValueError",
     ENUM.format(fn="comm_mem_stats", arg="stat", what="CommMemStat", lo=0, hi=3, got=4)),
    ("mem stat -1", "b.comm_mem_stats(1, -1)", "ValueError",
     ENUM.format(fn="comm_mem_stats", arg="stat", what="CommMemStat", lo=0, hi=3, got=-1)),
    # unique ids
    ("id 127 bytes", "b.comm_init_rank(b.PointerBox().address, 2, bytes(127), 0)", "ValueError",
     "comm_init_rank\\(\\) " + BAD_ID.format(arg="comm_id")),
    ("id 129 bytes", "b.comm_init_rank(b.PointerBox().address, 2, bytearray(129), 0)", "ValueError",
     BAD_ID.format(arg="comm_id")),
    ("id empty", "b.comm_init_rank(2, b'', 0)", "ValueError", BAD_ID.format(arg="comm_id")),
    ("id str", "b.comm_init_rank(2, 'x' * 128, 0)", "ValueError", BAD_ID.format(arg="comm_id")),
    ("id float", "b.comm_init_rank(2, 1.5, 0)", "ValueError", BAD_ID.format(arg="comm_id")),
    ("id None", "b.comm_init_rank(2, None, 0)", "ValueError", BAD_ID.format(arg="comm_id")),
    ("id list", "b.comm_init_rank(2, [0] * 128, 0)", "ValueError", BAD_ID.format(arg="comm_id")),
    ("id 2-D", "b.comm_init_rank(2, np.zeros((2, 64), dtype=np.int8), 0)", "ValueError", BAD_ID.format(arg="comm_id")),
    ("id strided", "b.comm_init_rank(2, np.zeros(256, dtype=np.int8)[::2], 0)", "ValueError",
     BAD_ID.format(arg="comm_id")),
    ("id wrong struct", "b.comm_init_rank(2, b.Config(), 0)", "ValueError", BAD_ID.format(arg="comm_id")),
    ("id null", "b.comm_init_rank(2, 0, 0)", "ValueError", r"comm_init_rank\(\) argument 'comm_id' must not be a null pointer"),
    ("id 2**64", "b.comm_init_rank(2, 2**64, 0)", "OverflowError", RANGE64.format(fn="comm_init_rank", arg="comm_id")),
    ("config id short", "b.comm_init_rank_config(b.PointerBox().address, 2, bytes(64), 0, 0)", "ValueError",
     "comm_init_rank_config\\(\\) " + BAD_ID.format(arg="comm_id")),
    ("config id 0.2.0 short", "b.comm_init_rank_config(2, bytes(64), 0, 0)", "ValueError", BAD_ID.format(arg="comm_id")),
    # comm_ids
    ("comm_ids one of two", "b.comm_init_rank_scalable(b.PointerBox().address, 2, 0, 2, ID, 0)", "ValueError",
     "comm_init_rank_scalable\\(\\) " + BAD_ID.format(arg="comm_ids")),
    ("comm_ids three of two", "b.comm_init_rank_scalable(2, 0, 2, ID * 3, 0)", "ValueError",
     BAD_ID.format(arg="comm_ids")),
    ("comm_ids huge n_id", "b.comm_init_rank_scalable(2, 0, 2**30, ID, 0)", "ValueError", BAD_ID.format(arg="comm_ids")),
    ("comm_ids n_id 0", "b.comm_init_rank_scalable(2, 0, 0, ID, 0)", "ValueError",
     r"comm_init_rank_scalable\(\) argument 'n_id' must be at least 1, got 0"),
    ("comm_ids n_id -1", "b.comm_init_rank_scalable(b.PointerBox().address, 2, 0, -1, ID, 0)", "ValueError",
     r"argument 'n_id' must be at least 1, got -1"),
    ("comm_ids str", "b.comm_init_rank_scalable(2, 0, 1, 'x', 0)", "ValueError", BAD_ID.format(arg="comm_ids")),
    # exclusion lists and device lists
    ("exclude too short", "b.comm_shrink(1, [1], 2, b.PointerBox().address, 0, 0)", "ValueError",
     r"comm_shrink\(\) argument 'exclude_ranks_list' has 1 entries, fewer than the count 2"),
    ("exclude empty", "b.comm_shrink(1, [], 1, 0, 0)", "ValueError",
     r"argument 'exclude_ranks_list' has 0 entries, fewer than the count 1"),
    ("exclude float", "b.comm_shrink(1, 1.5, 1, 0, 0)", "TypeError",
     r"comm_shrink\(\) argument 'exclude_ranks_list' must be a sequence of ints or an int address, not float"),
    ("exclude None", "b.comm_shrink(1, None, 0, 0, 0)", "TypeError",
     r"argument 'exclude_ranks_list' must be a sequence of ints or an int address, not NoneType"),
    ("exclude str item", "b.comm_shrink(1, [1, 'x'], 2, 0, 0)", "TypeError",
     NOT_INT.format(fn="comm_shrink", arg="exclude_ranks_list", type="str")),
    ("exclude big item", "b.comm_shrink(1, [2**31], 1, 0, 0)", "OverflowError",
     NOT_C_INT.format(fn="comm_shrink", arg="exclude_ranks_list")),
    ("devlist too short", "b.comm_init_all(3, [0, 1])", "ValueError",
     r"comm_init_all\(\) argument 'devlist' has 2 entries, fewer than the count 3"),
    ("devlist float", "b.comm_init_all(1, 0.5)", "TypeError", r"argument 'devlist' must be a sequence of ints"),
    ("devlist bad item", "b.comm_init_all(2, [0, None])", "TypeError",
     NOT_INT.format(fn="comm_init_all", arg="devlist", type="NoneType")),
    ("ndev -1", "b.comm_init_all(-1, None)", "ValueError", r"comm_init_all\(\) argument 'ndev' must be non-negative, got -1"),
    # signal descriptors
    ("n_desc -1", "b.wait_signal(-1, 0, 1, 2)", "ValueError", r"wait_signal\(\) argument 'n_desc' must be non-negative, got -1"),
    ("descs short", "b.wait_signal(2, bytes(16), 1, 2)", "ValueError", "wait_signal\\(\\) " + BAD_ID.format(arg="signal_descs")),
    ("descs huge n", "b.wait_signal(2**31 - 1, bytes(16), 1, 2)", "ValueError", BAD_ID.format(arg="signal_descs")),
    ("descs str", "b.wait_signal(1, 'abcd' * 4, 1, 2)", "ValueError", BAD_ID.format(arg="signal_descs")),
    ("descs one struct for two", "b.wait_signal(2, b.WaitSignalDesc(), 1, 2)", "ValueError",
     BAD_ID.format(arg="signal_descs")),
    # struct-returning 0.2.0 forms and the others
    ("get_unique_id str", "b.get_unique_id('x')", "TypeError", NOT_INT.format(fn="get_unique_id", arg="unique_id", type="str")),
    ("sim_info float", "b.group_simulate_end(1.0)", "TypeError",
     NOT_INT.format(fn="group_simulate_end", arg="sim_info", type="float")),
    ("props str", "b.comm_query_properties(1, 'p')", "TypeError",
     NOT_INT.format(fn="comm_query_properties", arg="props", type="str")),
    ("grow unique_id bytes", "b.comm_grow(1, 2, ID, 0, 0)", "TypeError",
     NOT_INT.format(fn="comm_grow", arg="unique_id", type="bytes")),
]

# all_to_all_v with ncclCommCount = 3 (rccl stub): (id, call, exception, pattern)
ALLTOALLV = [
    ("sendcounts short", "rx.all_to_all_v(1, [1, 2], [0, 1, 2], 2, [1, 1, 1], [0, 1, 2], 7, 4, 5)", "ValueError",
     r"^sendcounts must have nranks=3 entries, got 2$"),
    ("rdispls long", "rx.all_to_all_v(1, [1, 2, 3], [0, 1, 2], 2, [1, 1, 1], [0, 1, 2, 3], 7, 4, 5)", "ValueError",
     r"^rdispls must have nranks=3 entries, got 4$"),
    ("recvcounts numpy short", "rx.all_to_all_v(1, [1] * 3, [0] * 3, 2, np.zeros(2, np.uint64), [0] * 3, 7, 4, 5)",
     "ValueError", r"^recvcounts must have nranks=3 entries, got 2$"),
    ("sdispls int32", "rx.all_to_all_v(1, [1] * 3, np.zeros(3, np.int32), 2, [1] * 3, [0] * 3, 7, 4, 5)",
     "ValueError", r"^sdispls must be a 1-D C-contiguous uint64 buffer or a sequence of ints$"),
    ("sendcounts 2-D", "rx.all_to_all_v(1, np.zeros((3, 1), np.uint64), [0] * 3, 2, [1] * 3, [0] * 3, 7, 4, 5)",
     "ValueError", r"^sendcounts must be a 1-D C-contiguous uint64 buffer or a sequence of ints$"),
    ("sdispls negative", "rx.all_to_all_v(1, [1] * 3, [0, -1, 2], 2, [1] * 3, [0] * 3, 7, 4, 5)", "OverflowError",
     NEGATIVE.format(fn="all_to_all_v", arg="sdispls")),
    ("recvcounts float", "rx.all_to_all_v(1, [1] * 3, [0] * 3, 2, 1.5, [0] * 3, 7, 4, 5)", "TypeError",
     r"all_to_all_v\(\) argument 'recvcounts' must be an int address, a sequence of ints or a uint64 buffer, not float"),
    ("rdispls str item", "rx.all_to_all_v(1, [1] * 3, [0] * 3, 2, [1] * 3, [0, 'x', 0], 7, 4, 5)", "TypeError",
     NOT_INT.format(fn="all_to_all_v", arg="rdispls", type="str")),
    ("a2av datatype 12", "rx.all_to_all_v(1, [1] * 3, [0] * 3, 2, [1] * 3, [0] * 3, 12, 4, 5)", "ValueError",
     ENUM.format(fn="all_to_all_v", arg="datatype", what="DataType", lo=0, hi=11, got=12)),
    ("bias op -1", "rx.all_reduce_with_bias(1, 2, 3, 7, -1, 4, 5, 6)", "ValueError",
     ENUM.format(fn="all_reduce_with_bias", arg="op", what="RedOp", lo=0, hi=2147483647, got=-1)),
    ("bias count -1", "rx.all_reduce_with_bias(1, 2, -1, 7, 0, 4, 5, 6)", "OverflowError",
     NEGATIVE.format(fn="all_reduce_with_bias", arg="count")),
    ("bias acc str", "rx.all_reduce_with_bias(1, 2, 3, 7, 0, 4, 5, 'acc')", "TypeError",
     NOT_INT.format(fn="all_reduce_with_bias", arg="acc", type="str")),
]

# The nccl4py 0.4.1-0.6.0 names: config collectives, teams, requirements, LE queries, parameters
# and encryption. Struct parameters take their wrapper class or an int address, nothing else.
STRUCT = r"{fn}\(\) argument '{arg}' must be a {cls} or an int address, not {type}"
NULL_STRUCT = r"{fn}\(\) argument '{arg}' must not be a null address"
CASES += [
    ("config str", "b.all_reduce_config(1, 2, 3, 7, 0, 4, 5, 'cfg')", "TypeError",
     NOT_INT.format(fn="all_reduce_config", arg="config", type="str")),
    ("config op 99", "b.reduce_config(1, 2, 3, 7, -2, 0, 4, 5, 0)", "ValueError",
     ENUM.format(fn="reduce_config", arg="op", what="RedOp", lo=0, hi=2147483647, got=-2)),
    ("config count -1", "b.all_gather_config(1, 2, -1, 7, 4, 5, 0)", "OverflowError",
     NEGATIVE.format(fn="all_gather_config", arg="sendcount")),
    ("config root float", "b.gather_config(1, 2, 3, 7, 0.5, 4, 5, 0)", "TypeError",
     NOT_INT.format(fn="gather_config", arg="root", type="float")),
    ("config datatype 12", "b.allto_all_config(1, 2, 3, 12, 4, 5, 0)", "ValueError",
     ENUM.format(fn="allto_all_config", arg="datatype", what="DataType", lo=0, hi=11, got=12)),
    ("config arity", "b.scatter_config(1, 2, 3, 7, 0, 4, 5)", "TypeError",
     r"scatter_config\(\) takes exactly 8 arguments \(7 given\)"),
    ("team_cft mode 3", "b.team_cft(4, 3)", "ValueError",
     ENUM.format(fn="team_cft", arg="mode", what="CftTeamMode", lo=0, hi=2, got=3)),
    ("team_world comm str", "b.team_world('c')", "TypeError", NOT_INT.format(fn="team_world", arg="comm", type="str")),
    ("team as tuple", "b.team_rank_to_world(4, (2, 0, 1), 0)", "TypeError",
     STRUCT.format(fn="team_rank_to_world", arg="team", cls="Team", type="tuple")),
    ("team of another class", "b.team_rank_to_lsa(4, b.LsaBarrierHandle(), 0)", "TypeError",
     STRUCT.format(fn="team_rank_to_lsa", arg="team", cls="Team", type="nccl.bindings.nccl.LsaBarrierHandle")),
    ("team null", "b.lsa_barrier_create_requirement(0, 1, b.LsaBarrierHandle(), b.DevResourceRequirements())",
     "ValueError", NULL_STRUCT.format(fn="lsa_barrier_create_requirement", arg="team")),
    ("team rank float", "b.team_rank_to_world(4, b.Team(), 1.0)", "TypeError",
     NOT_INT.format(fn="team_rank_to_world", arg="rank", type="float")),
    ("out_handle wrong class", "b.lsa_barrier_create_requirement(b.Team(), 1, b.GinBarrierHandle(), "
     "b.DevResourceRequirements())", "TypeError",
     STRUCT.format(fn="lsa_barrier_create_requirement", arg="out_handle", cls="LsaBarrierHandle",
                   type="nccl.bindings.nccl.GinBarrierHandle")),
    ("out_req null", "b.gin_barrier_create_requirement(4, b.Team(), 1, b.GinBarrierHandle(), 0)", "ValueError",
     NULL_STRUCT.format(fn="gin_barrier_create_requirement", arg="out_req")),
    ("out_req bytes", "b.ll_a2a_create_requirement(1, 2, b.LLA2AHandle(), bytes(64))", "TypeError",
     STRUCT.format(fn="ll_a2a_create_requirement", arg="out_req", cls="DevResourceRequirements", type="bytes")),
    ("n_barriers too big", "b.lsa_barrier_create_requirement(b.Team(), 2**31, b.LsaBarrierHandle(), "
     "b.DevResourceRequirements())", "OverflowError",
     NOT_C_INT.format(fn="lsa_barrier_create_requirement", arg="n_barriers")),
    ("calc slots str", "b.ll_a2a_calc_slots('32', 16)", "TypeError",
     NOT_INT.format(fn="ll_a2a_calc_slots", arg="max_elts", type="str")),
    ("multimem wrong class", "b.get_multimem_device_pointer(4, 0, b.Team())", "TypeError",
     STRUCT.format(fn="get_multimem_device_pointer", arg="multimem", cls="MultimemHandle",
                   type="nccl.bindings.nccl.Team")),
    ("le offset -1", "b.get_peer_device_le_info(4, -1, 0)", "OverflowError",
     NEGATIVE.format(fn="get_peer_device_le_info", arg="offset")),
    ("cft team int 0", "b.get_cft_device_le_info(4, 0, 1, 0)", "ValueError",
     NULL_STRUCT.format(fn="get_cft_device_le_info", arg="cft_team")),
    ("param key bytes", "b.param_get_parameter(b'NCCL_PROTO')", "TypeError",
     r"param_get_parameter\(\) argument 'key' must be str, not bytes"),
    ("param key NUL", "b.param_get_parameter('NCCL\\0PROTO')", "ValueError",
     r"param_get_parameter\(\) argument 'key' must not contain a NUL character"),
    ("param keys arity", "b.param_get_all_keys(1)", "TypeError", r"param_get_all_keys\(\) takes no arguments"),
    ("encryption None", "b.set_encryption(None)", "TypeError",
     STRUCT.format(fn="set_encryption", arg="config", cls="EncryptionConfig", type="NoneType")),
    ("encryption null", "b.set_encryption(0)", "ValueError", NULL_STRUCT.format(fn="set_encryption", arg="config")),
    ("encryption Config", "b.set_encryption(b.Config())", "TypeError",
     STRUCT.format(fn="set_encryption", arg="config", cls="EncryptionConfig", type="nccl.bindings.nccl.Config")),
]

RUN_CASES = """
    import numpy as np
    ID = bytes(128)
    out = {}
    for name, call in CASES:
        stub.reset()
        stub.set_out("ncclCommCount", 3)
        try:
            eval(call)
            out[name] = (None, "no exception", [])
        except Exception as exc:
            out[name] = (type(exc).__name__, str(exc), stub.calls())
    result = out
"""


@pytest.fixture(scope="module")
def outcomes(stub_python):
    names = [c[0] for c in CASES + ALLTOALLV]
    assert len(set(names)) == len(names), "case names must be unique"
    cases = [(name, call) for name, call, _, _ in CASES]
    got = stub_python("nccl").run(f"CASES = {cases!r}\n" + textwrap.dedent(RUN_CASES))
    cases = [(name, call) for name, call, _, _ in ALLTOALLV]
    got.update(stub_python("rccl").run(f"CASES = {cases!r}\n" + textwrap.dedent(RUN_CASES)))
    return got


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input(outcomes, case):
    name, _, exc, pattern = case
    got_exc, message, calls = outcomes[name]
    assert got_exc == exc, message
    assert re.search(pattern, message), message
    assert calls == [], "the library was called"


@pytest.mark.parametrize("case", ALLTOALLV, ids=[c[0] for c in ALLTOALLV])
def test_bad_all_to_all_v_input(outcomes, case):
    name, call, exc, pattern = case
    got_exc, message, calls = outcomes[name]
    assert got_exc == exc, message
    assert re.search(pattern, message), message
    # Only the size query that the lengths are checked against; never the collective.
    names = [n for n, _ in calls]
    if "all_to_all_v" in call and "datatype" not in name:
        assert names == ["ncclCommCount"] and calls[0][1][0] == 4
    else:
        assert names == []


def test_no_leak_or_crash_on_repeated_bad_input(stub_python):
    """Every bad case again, 200 times, then a good call: the interpreter is intact and no
    reference to the arguments is left behind."""
    cases = [(name, call) for name, call, _, _ in CASES]
    r = stub_python("nccl").run(f"""
        import sys
        import numpy as np
        ID = bytes(128)
        arg = bytearray(127)
        before = sys.getrefcount(arg)
        for _ in range(200):
            for name, call in {cases!r}:
                try:
                    eval(call)
                except Exception:
                    pass
            try:
                b.comm_init_rank(2, arg, 0)
            except ValueError:
                pass
        result = (sys.getrefcount(arg) - before, b.all_reduce(1, 2, 3, 7, 0, 4, 5), stub.calls()[-1])
    """)
    assert r == (0, None, ("ncclAllReduce", (1, 2, 3, 7, 0, 4, 5)))


# ---- order of checks ----

def test_arity_is_checked_before_any_load(fresh_python, stub_libs):
    r = fresh_python("""
        import os
        import nccl._ext
        import nccl.bindings.nccl as nb
        import nccl.bindings.rocm_extensions as rx
        out = [catch(nb.all_reduce, 1, 2), catch(nb.comm_grow, 1, 2, 3), catch(nb.get_unique_id, 1, 2),
               catch(nb.comm_init_rank, bytes(128)), catch(rx.all_to_all_v), catch(nb.group_end, 1),
               catch(nb.all_reduce, 1, 2, 3, 4, 5, 6, 7, nope=8)]
        maps = open("/proc/self/maps").read()
        result = (out, os.environ["NCCL_LIBRARY"] in maps, nccl._ext._mapped_libraries())
    """, variant="nccl")
    out, mapped, libraries = r
    assert [o[0] for o in out] == ["TypeError"] * 7
    assert not mapped and libraries == []


def test_load_failure_comes_before_symbol_and_arguments(fresh_python, tmp_path):
    missing = tmp_path / "nowhere" / "libnccl.so.2"
    r = fresh_python("""
        import nccl.bindings.nccl as nb
        import nccl.bindings.rocm_extensions as rx
        result = [catch(nb.all_reduce, "x", None, -1, 99, -5, [], {}),
                  catch(nb.comm_grow, "x", "y", "z", 0, 0),
                  catch(nb.comm_init_rank, 2, b"short", 0),
                  catch(rx.all_to_all_v, *["x"] * 9),
                  catch(nb.get_unique_id)]
    """, env={"NCCL_LIBRARY": missing})
    for exc, message, mro in r:
        assert exc == "NotSupportedError" and "RuntimeError" in mro
        assert f"  {missing}: not found" in message


def test_symbol_is_checked_before_arguments(stub_python):
    """On a library without ncclCommGrow, nonsense arguments of the right count still give
    FunctionNotFoundError: nothing was converted (dummy zeros are safe)."""
    r = stub_python("nccl_2_27").run("""
        result = (catch(b.comm_grow, "x", None, [], {}, 1.5), catch(b.comm_grow, "x", None, [], {}, 1.5, ()),
                  catch(b.wait_signal, -1, "descs", None, None), catch(b.allto_all, *[object()] * 6),
                  catch(b.comm_query_properties, "p"), catch(b.comm_grow, 1, 2), stub.calls())
    """)
    *outs, arity, calls = r
    assert [o[0] for o in outs] == ["FunctionNotFoundError"] * 5
    assert arity[0] == "TypeError"
    assert calls == []


def test_bad_input_does_not_poison_the_next_call(stub_python):
    r = stub_python("nccl").run("""
        first = catch(b.all_reduce, 1, 2, -1, 7, 0, 4, 5)
        second = catch(b.all_reduce, 1, 2, 3, 7, 0, 4, 5)
        result = (first[0], second, stub.calls())
    """)
    assert r == ("OverflowError", ("ok", None), [("ncclAllReduce", (1, 2, 3, 7, 0, 4, 5))])


def test_library_path_is_absolute(stub_python, stub_libs):
    assert stub_python("nccl").run("result = b.get_library_path()") == os.path.realpath(stub_libs["nccl"])


# ---- null communicators and windows ----

# Parameters that hold a communicator or a window handle, by name.
HANDLE_PARAMS = {"comm": "communicator", "window": "window", "win": "window", "peer_win": "window"}
# Where NCCL gives a null communicator a meaning the binding cannot replace, it passes it on:
# get_last_error(NULL) is the error of a call made without a communicator, and a rank joining
# through ncclCommGrow has no communicator yet. Destroy, abort and finalize refuse NULL like every
# other call: NCCL makes them no-ops, but the binding refuses a null handle everywhere.
NULL_ACCEPTED = {("get_last_error", "comm"), ("comm_grow", "comm")}
# Named like handles, but they are the addresses of slots the library fills (PointerBox addresses):
# 0 is refused too, as a null slot address.
OUT_SLOTS = {("comm_init_rank", "comm"), ("comm_init_rank_config", "comm"), ("comm_window_register", "win")}


def _handle_parameters():
    """(module, function, parameter index, parameter, kind) for every handle parameter of the
    bindings, read from their signatures (the 0.3.1 form of dual-form functions)."""
    import inspect

    import nccl.bindings.nccl as nb
    import nccl.bindings.rocm_extensions as rx

    out = []
    for mod, names in (("b", nb._FUNCTIONS), ("rx", [n for n in dir(rx) if callable(getattr(rx, n))])):
        module = nb if mod == "b" else rx
        for name in names:
            fn = getattr(module, name)
            try:
                params = list(inspect.signature(fn).parameters)
            except (TypeError, ValueError):
                continue
            for i, p in enumerate(params):
                if p in HANDLE_PARAMS and (name, p) not in OUT_SLOTS:
                    out.append((mod, name, len(params), i, p, HANDLE_PARAMS[p]))
    return out


def test_the_handle_parameters_are_found():
    found = {(name, p) for _, name, _, _, p, _ in _handle_parameters()}
    # a few the list must contain, whatever else the signatures add
    assert {("all_reduce", "comm"), ("all_to_all_v", "comm"), ("put_signal", "peer_win"), ("put_signal", "comm"),
            ("get_peer_device_pointer", "window"), ("win_get_user_ptr", "win")} <= found
    assert NULL_ACCEPTED <= found
    assert len(found) >= 40


@pytest.mark.parametrize("null", ["0", "empty handle"])
def test_every_binding_refuses_a_null_handle(stub_python, null):
    """A 0 communicator or window, or an empty Comm/Window, is an NCCLNullHandleError (a ValueError
    and an NCCLError(InvalidArgument)) naming the function and the argument, raised before the library is called (RCCL 2.27 crashes inside ncclAllReduce and
    ncclAllToAll on NULL). The other arguments are 1: valid for every converter."""
    cases = [c for c in _handle_parameters() if (c[1], c[4]) not in NULL_ACCEPTED]
    r = stub_python("rccl").run(f"""
        out = {{}}
        for mod, name, n, i, param, kind in {cases!r}:
            args = [1] * n
            args[i] = 0 if {null == "0"} else (b.Comm() if kind == "communicator" else b.Window())
            res = catch(getattr(b if mod == "b" else rx, name), *args)
            out[(name, param)] = (res[0], res[1] if len(res) > 1 else None, kind)
        result = (out, stub.calls())
    """)
    out, calls = r
    assert calls == []
    for (name, param), (exc, message, kind) in out.items():
        assert (exc, message) == ("NCCLNullHandleError", f"{name}() argument '{param}' must not be a null {kind}"), name


def test_null_where_nccl_gives_it_a_meaning(stub_python):
    cases = [c for c in _handle_parameters() if (c[1], c[4]) in NULL_ACCEPTED]
    r = stub_python("nccl").run(f"""
        out = {{}}
        for mod, name, n, i, param, kind in {cases!r}:
            args = [0] * n  # null addresses: the stub reads what non-null ones point to
            if name == "comm_grow":
                args[4] = b.PointerBox().address  # the newcomm slot
            out[name] = catch(getattr(b, name), *args)[0]
        result = (out, [(name, args[0]) for name, args in stub.calls()])
    """)
    out, calls = r
    assert out == {name: "ok" for _, name, *_ in cases}
    # each reached the library with the null communicator
    assert sorted(calls) == sorted({"get_last_error": ("ncclGetLastError", 0),
                                    "comm_grow": ("ncclCommGrow", 0)}.values())


def test_a_null_slot_address_is_refused(stub_python):
    """The 0.3.1 creation forms take the address of the slot the library fills: 0 is a ValueError
    before the call (the library would write through it)."""
    r = stub_python("nccl").run("""
        uid = b.UniqueId()
        result = ([catch(b.comm_init_rank, 0, 1, uid, 0), catch(b.comm_init_rank_config, 0, 1, uid, 0, 0),
                   catch(b.comm_window_register, 1, 1, 8, 0, 0)], stub.calls())
    """)
    outcomes, calls = r
    assert calls == []
    assert [o[:2] for o in outcomes] == [
        ("ValueError", "comm_init_rank() argument 'comm' must not be a null handle slot address"),
        ("ValueError", "comm_init_rank_config() argument 'comm' must not be a null handle slot address"),
        ("ValueError", "comm_window_register() argument 'win' must not be a null handle slot address")]
