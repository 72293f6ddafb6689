"""The NCCL surface of nccl4py, described once (docs/developing.md#the-interface-description).

src/include/abi.h says which C entry points exist and their C signatures; src/include/nccl_abi.h
their types and the values of their enums. This module says what nccl4py makes of them:

* BINDINGS: every function of nccl.bindings.nccl and nccl.bindings.rocm_extensions: its Python
  name, the abi.h row it calls, a converter kind for each C parameter (in the row's order; the
  Python parameter names are the row's argument names in snake_case, without the out-parameters),
  its result kind, the flight recorder's op and its docstring. A binding with ``hand=`` is
  written by hand in that file (IRREGULAR says why); all others are generated. BINDINGS lists
  the bindings of BINDING_SECTIONS in order: a section per concern, each generated into a C file
  of its own (src/ext/bindings/<stem>.gen.c).
* COLLECTIVES: the Communicator collectives with a config= twin: their kind, the recorder's op,
  and the descriptor their methods check buffers by (rooted or not, reduction or not, where the
  count comes from, what the other buffer must hold, the in-place layout).
* METHODS: the call forms and docstrings of the Communicator methods of core/collectives.c.
* TRACE_OPS: every call the flight recorder names, with the host backend's kinds among them.
* DTYPES: the NCCL datatypes with their numpy, DLPack and host names.
* ENUMS and CONSTANTS: how nccl_abi.h's enums and constants are named in Python.

`python tools/gen_surface.py` writes every generated file from this module (each says so in its
first lines); `--check` (tests/test_surface.py) fails when one differs from what it would write.
Plain data: no code here runs at build or import time of the package.
"""

from dataclasses import dataclass, field

# ---- converter kinds: one per C parameter of a binding ----


@dataclass(frozen=True)
class Kind:
    """How a binding takes one C parameter. `ctypes`: the C types (abi.h's, `const` dropped) it
    converts to; `pytype`: the parameter's type in the stub; `python`: False for an out-parameter
    the wrapper owns (not a Python parameter; the result reads it). `hand`: only hand-written
    wrappers use it (the generator has no converter for it)."""
    name: str
    ctypes: tuple
    pytype: str = "int"
    python: bool = True
    hand: bool = False
    arg: str = ""  # enum: the Python class named in range errors; struct: the nx_struct_kind suffix


COMM = Kind("comm", ("ncclComm_t",), "_CommArg")            # a Comm or an int; null refused
COMM_OR_NULL = Kind("comm_or_null", ("ncclComm_t",), "_CommArg")  # NCCL gives NULL a meaning
WINDOW = Kind("window", ("ncclWindow_t",), "_WindowArg")    # a Window or an int; null refused
ADDR = Kind("addr", ("void *", "void **", "ncclDevComm_t *", "ncclCollConfig_t *", "ncclConfig_t *",
                     "ncclUniqueId *", "ncclDevCommRequirements_t *", "ncclCommProperties_t *",
                     "ncclSimInfo_t *"), "_Address")        # an int (or __index__) address
SIZE = Kind("size", ("size_t",))
INT = Kind("int", ("int", "ncclResult_t"))                  # an int (cast to an enum type as is)
UINT = Kind("uint", ("unsigned int",))
DTYPE = Kind("dtype", ("ncclDataType_t",))                  # in [0, ncclNumTypes)
REDOP = Kind("redop", ("ncclRedOp_t",))                     # a built-in op or a PreMulSum handle
STREAM = Kind("stream", ("cudaStream_t", "hipStream_t"))
OUT = Kind("out", ("int *", "ncclResult_t *", "uint64_t *", "void **", "ncclRedOp_t *", "ncclCftLeId_t *",
                   "size_t *"), python=False)


def enum(ctype, pyname):
    """An int within the values of nccl_abi.h's enum `ctype` (ValueError naming `pyname`)."""
    return Kind("enum", (ctype,), "int", arg=pyname)


def struct(kind, ctype):
    """A struct the library reads or fills, given as its wrapper (nx_struct_kind NX_STRUCT_<kind>)
    or an int address."""
    return Kind("struct", (ctype,), "_Address", arg=kind)


def struct_value(kind, ctype):
    """A struct the library takes by value, given as its wrapper or an int address (copied)."""
    return Kind("struct_value", (ctype,), "_Address", arg=kind)


TEAM = struct_value("TEAM", "ncclTeam_t")
DEV_RESOURCE_REQUIREMENTS = struct("DEV_RESOURCE_REQUIREMENTS", "ncclDevResourceRequirements_t *")

# Kinds only hand-written wrappers take (IRREGULAR says why each is hand-written).
SLOT = Kind("slot", ("ncclComm_t *", "ncclWindow_t *"), hand=True)  # the handle slot a 0.3.1 creation fills
HANDLES_OUT = Kind("handles_out", ("ncclComm_t *",), python=False, hand=True)  # comm_init_all's array
IDS = Kind("ids", ("ncclUniqueId", "ncclUniqueId *"), "_Ids", hand=True)  # unique ids: an address or bytes
INT_ARRAY = Kind("int_array", ("int *",), "Sequence[int] | int", hand=True)
INT_ARRAY_OR_NONE = Kind("int_array_or_none", ("int *",), "Sequence[int] | int | None", hand=True)
SIZE_ARRAY = Kind("size_array", ("size_t *",), "_SizeArray", hand=True)
DESCS = Kind("descs", ("ncclWaitSignalDesc_t *",), "_Address | Buffer", hand=True)
KEY = Kind("key", ("char *",), "str", hand=True)
TEXT_OUT = Kind("text_out", ("char **", "char ***", "int *"), python=False, hand=True)
STRUCT_OUT = Kind("struct_out", ("ncclUniqueId *", "ncclCommProperties_t *", "ncclDevComm_t *", "ncclSimInfo_t *"),
                  python=False, hand=True)  # filled into a new wrapper (short form) or at an address (0.2.0)

# ---- result kinds ----


@dataclass(frozen=True)
class Result:
    """What a binding returns. NONE: None, or NCCLError for a failed status. OUT: the one
    out-parameter (after the status check). OUT_PAIR: the two out-parameters as a tuple. VALUE: the
    entry point's own return value (no status). VOID: None (the entry point returns nothing).
    HAND: a hand-written wrapper's result, typed `pytype` in the stub."""
    name: str
    pytype: str = ""


NONE = Result("none", "None")
OUT_RESULT = Result("out", "int")
OUT_PAIR = Result("out_pair", "tuple[int, int]")
VALUE = Result("value")  # its stub type follows the C return type (TYPES_OF_VALUES)
VOID = Result("void", "None")


def hand_result(pytype):
    return Result("hand", pytype)


# The stub type of a VALUE result, by the entry point's C return type.
TYPES_OF_VALUES = {"int": "int", "const char *": "str", "ncclTeam_t": "Team"}

# ---- the calls the flight recorder names (docs/api/trace.md) ----


@dataclass(frozen=True)
class Op:
    """One call the recorder names: its C id (NX_T_<id>, and HOST_K_<id> when the host backend runs
    it as an operation), the file format's "op" name, whether every rank of the communicator makes
    the call (its entries are counted by the "coll" ordinal the verdict lines ranks up by), whether
    it reduces (takes an op), the word the verdict puts before the peer of a point-to-point call,
    whether the call ends the communicator's recording (destroy, abort), the entry point the host
    backend names in its messages, and the host backend's class of operation (coll, p2p, rma, win;
    "" when the call is not a host operation)."""
    id: str
    name: str
    every_rank: bool
    reduction: bool = False
    peer: str = ""
    closes: bool = False
    entry: str = ""
    host: str = ""


TRACE_OPS = [
    Op("ALLREDUCE", "AllReduce", True, reduction=True, entry="ncclAllReduce", host="coll"),
    Op("BROADCAST", "Broadcast", True, entry="ncclBroadcast", host="coll"),
    Op("REDUCE", "Reduce", True, reduction=True, entry="ncclReduce", host="coll"),
    Op("ALLGATHER", "AllGather", True, entry="ncclAllGather", host="coll"),
    Op("REDUCESCATTER", "ReduceScatter", True, reduction=True, entry="ncclReduceScatter", host="coll"),
    Op("ALLTOALL", "AlltoAll", True, entry="ncclAlltoAll", host="coll"),
    Op("GATHER", "Gather", True, entry="ncclGather", host="coll"),
    Op("SCATTER", "Scatter", True, entry="ncclScatter", host="coll"),
    Op("ALLREDUCE_BIAS", "AllReduceWithBias", True, reduction=True, entry="ncclAllReduceWithBias", host="coll"),
    Op("ALLTOALLV", "AlltoAllv", True, entry="ncclAlltoAllv", host="coll"),
    Op("SEND", "Send", False, peer="to", entry="ncclSend", host="p2p"),
    Op("RECV", "Recv", False, peer="from", entry="ncclRecv", host="p2p"),
    Op("GROUP_START", "GroupStart", False),
    Op("GROUP_END", "GroupEnd", False),
    Op("WIN_REGISTER", "WindowRegister", True, entry="ncclCommWindowRegister", host="win"),
    Op("WIN_DEREGISTER", "WindowDeregister", True, entry="ncclCommWindowDeregister", host="win"),
    Op("PUT_SIGNAL", "PutSignal", False, peer="to", entry="ncclPutSignal", host="rma"),
    Op("SIGNAL", "Signal", False, peer="to", entry="ncclSignal", host="rma"),
    Op("WAIT_SIGNAL", "WaitSignal", False, entry="ncclWaitSignal", host="rma"),
    Op("INIT", "Init", True),
    Op("SPLIT", "Split", True),
    Op("SHRINK", "Shrink", False),  # not every rank: the ranks it excludes do not call it
    Op("GROW", "Grow", True),
    Op("FINALIZE", "Finalize", False),
    Op("ABORT", "Abort", False, closes=True),
    Op("DESTROY", "Destroy", False, closes=True),
]

# ---- the collectives of nccl.core (and their config= twins) ----


@dataclass(frozen=True)
class Collective:
    """A collective with a Communicator method and an ncclXxxConfig twin.

    kind: NX_COLL_<kind> (and the recorder's op, TRACE_OPS' id, which says whether it reduces);
    method: the Communicator method; entry, config_entry: the abi.h rows of the plain and the
    configured call. rooted: "" (every rank passes both buffers), "recv" (recvbuf is used
    only on root: reduce, gather) or "send" (sendbuf only on root: broadcast, scatter).
    unrooted: the kind a root of None runs instead ("" when root is required).
    count: the buffer every rank passes and whose element count is the call's count ("send" or
    "recv"); blocks: sendbuf splits into nranks whole blocks of at least one element, and the call's
    count is one block (the other rules then speak of blocks).
    recv_rule: (relation, size, why): recvbuf must hold "at least" or "exactly" `size` elements,
    where size is "send" (sendbuf's count), "block" (one block) or "all" (nranks * sendbuf's count);
    `why` says it in the message (None: nothing to add).
    in_place: "same" (recvbuf is sendbuf), "recv_in_send" (recvbuf is block i of sendbuf) or
    "send_in_recv" (sendbuf is block i of recvbuf), i being root for a rooted call, else this rank.
    """
    kind: str
    method: str
    entry: str
    config_entry: str
    rooted: str
    unrooted: str
    count: str
    blocks: bool
    recv_rule: tuple
    in_place: str


COLLECTIVES = [
    Collective("ALLREDUCE", "allreduce", "ncclAllReduce", "ncclAllReduceConfig", rooted="",
               unrooted="", count="send", blocks=False, recv_rule=("at least", "send", None), in_place="same"),
    Collective("REDUCE", "reduce", "ncclReduce", "ncclReduceConfig", rooted="recv",
               unrooted="ALLREDUCE", count="send", blocks=False, recv_rule=("at least", "send", None),
               in_place="same"),
    Collective("BROADCAST", "broadcast", "ncclBroadcast", "ncclBroadcastConfig", rooted="send",
               unrooted="", count="recv", blocks=False, recv_rule=("exactly", "send", None), in_place="same"),
    Collective("ALLGATHER", "allgather", "ncclAllGather", "ncclAllGatherConfig", rooted="",
               unrooted="", count="send", blocks=False, recv_rule=("at least", "all", "nranks * sendcount"),
               in_place="send_in_recv"),
    Collective("GATHER", "gather", "ncclGather", "ncclGatherConfig", rooted="recv",
               unrooted="ALLGATHER", count="send", blocks=False, recv_rule=("at least", "all", "nranks * sendcount"),
               in_place="send_in_recv"),
    Collective("REDUCESCATTER", "reduce_scatter", "ncclReduceScatter", "ncclReduceScatterConfig",
               rooted="", unrooted="", count="send", blocks=True,
               recv_rule=("at least", "block", "sendcount / nranks"), in_place="recv_in_send"),
    Collective("ALLTOALL", "alltoall", "ncclAlltoAll", "ncclAlltoAllConfig", rooted="",
               unrooted="", count="send", blocks=True, recv_rule=("at least", "send", "nranks * count"),
               in_place="same"),
    Collective("SCATTER", "scatter", "ncclScatter", "ncclScatterConfig", rooted="send",
               unrooted="", count="recv", blocks=True, recv_rule=("exactly", "block", "sendcount / nranks"),
               in_place="recv_in_send"),
]

# ---- the Communicator methods of core/collectives.c ----


@dataclass(frozen=True)
class Method:
    """A Communicator method: its parameters (a name, or "name=default" for an optional one; after
    "*" keyword-only), its docstring, and the collective it runs (COLLECTIVES' kind: the method is
    generated) or "" (its body is hand-written in core/collectives.c)."""
    name: str
    params: tuple
    doc: str
    collective: str = ""


_STREAM_CONFIG = ("*", "stream=None", "config=None")

METHODS = [
    Method("allreduce", ("sendbuf", "recvbuf", "op", *_STREAM_CONFIG), collective="ALLREDUCE", doc=(
        "Reduce sendbuf over all ranks with op into recvbuf on every rank (ncclAllReduce). Collective;\n"
        "enqueued on stream. count = sendbuf's element count; recvbuf must have at least that many\n"
        "elements of the same dtype and be writable. In place when recvbuf is sendbuf (same address).\n"
        "op: an NcclRedOp, an int, or a CustomRedOp of this communicator with the buffers' dtype.\n"
        "config: an NCCLCollConfig, passed to ncclAllReduceConfig (every collective takes one).\n"
        "Raises NcclInvalid for bad buffers, NCCLError when the library fails.")),
    Method("reduce", ("sendbuf", "recvbuf", "op", "root=None", *_STREAM_CONFIG), collective="REDUCE", doc=(
        "Reduce sendbuf over all ranks with op into recvbuf on root (ncclReduce); root=None is allreduce.\n"
        "Collective; enqueued on stream. count = sendbuf's element count. recvbuf is used (and resolved)\n"
        "only on root, where it needs at least count elements of sendbuf's dtype; elsewhere it may be\n"
        "anything (None). In place when recvbuf is sendbuf.")),
    Method("broadcast", ("sendbuf", "recvbuf", "root", *_STREAM_CONFIG), collective="BROADCAST", doc=(
        "Copy root's sendbuf into recvbuf on every rank (ncclBroadcast). Collective; enqueued on stream.\n"
        "count = recvbuf's element count. sendbuf is used (and resolved) only on root, where it must have\n"
        "exactly count elements of recvbuf's dtype; elsewhere it may be anything (None). In place when\n"
        "recvbuf is sendbuf.")),
    Method("allgather", ("sendbuf", "recvbuf", *_STREAM_CONFIG), collective="ALLGATHER", doc=(
        "Concatenate every rank's sendbuf, in rank order, into recvbuf on every rank (ncclAllGather).\n"
        "Collective; enqueued on stream. count = sendbuf's element count; recvbuf needs at least\n"
        "nranks * count elements of the same dtype. In place when sendbuf is at recvbuf + rank * count.")),
    Method("gather", ("sendbuf", "recvbuf", "root=None", *_STREAM_CONFIG), collective="GATHER", doc=(
        "Concatenate every rank's sendbuf, in rank order, into recvbuf on root (ncclGather); root=None is\n"
        "allgather. Collective; enqueued on stream. count = sendbuf's element count. recvbuf is used (and\n"
        "resolved) only on root, where it needs at least nranks * count elements. In place when sendbuf\n"
        "is at recvbuf + root * count.")),
    Method("reduce_scatter", ("sendbuf", "recvbuf", "op", *_STREAM_CONFIG), collective="REDUCESCATTER", doc=(
        "Reduce sendbuf over all ranks with op; rank i receives block i (ncclReduceScatter). Collective;\n"
        "enqueued on stream. count = sendbuf's element count / nranks (a whole multiple, at least 1);\n"
        "recvbuf needs at least count elements. In place when recvbuf is at sendbuf + rank * count.")),
    Method("alltoall", ("sendbuf", "recvbuf", *_STREAM_CONFIG), collective="ALLTOALL", doc=(
        "Block j of sendbuf goes to rank j, landing as block i (this rank) of its recvbuf\n"
        "(ncclAlltoAll; RCCL's ncclAllToAll where only that exists). Collective; enqueued on stream.\n"
        "count = sendbuf's element count / nranks per peer (a whole multiple, at least 1); recvbuf needs\n"
        "at least nranks * count elements. Identical pointers are passed through unchanged.")),
    Method("scatter", ("sendbuf", "recvbuf", "root", *_STREAM_CONFIG), collective="SCATTER", doc=(
        "Send block i of root's sendbuf to rank i's recvbuf (ncclScatter). Collective; enqueued on\n"
        "stream. count = recvbuf's element count. sendbuf is used (and resolved) only on root, where its\n"
        "element count must be a whole multiple of nranks with recvbuf holding exactly one block.\n"
        "In place when recvbuf is at sendbuf + root * count.")),
    Method("send", ("sendbuf", "peer", "*", "stream=None"), doc=(
        "Send all of sendbuf (count and dtype from the buffer) to peer (ncclSend). Pair it with peer's\n"
        "recv, inside a group when ranks exchange both ways. Enqueued on stream.")),
    Method("recv", ("recvbuf", "peer", "*", "stream=None"), doc=(
        "Receive from peer into all of recvbuf (ncclRecv); recvbuf must be writable. Enqueued on stream.")),
    Method("signal", ("peer", "signal_index=0", "context=0", "flags=0", "*", "stream=None"), doc=(
        "Raise signal signal_index on peer (ncclSignal). NCCL requires index, context and flags to be 0\n"
        "for now and checks it. Enqueued on stream.")),
    Method("wait_signal", ("descs", "*", "stream=None"), doc=(
        "Wait for the signals described by descs, a WaitSignalDesc or a list/tuple of them, packed into\n"
        "one contiguous ncclWaitSignalDesc_t array (ncclWaitSignal). Enqueued on stream.")),
    Method("put_signal", ("local_buffer", "peer", "peer_window", "peer_window_offset=0", "signal_index=0",
                          "context=0", "flags=0", "*", "stream=None"), doc=(
        "Write local_buffer into peer's registered window at peer_window_offset (in elements of\n"
        "local_buffer's dtype, converted to bytes) and raise a signal there (ncclPutSignal).\n"
        "peer_window is a RegisteredWindowHandle; its handle is passed as peerWin. Enqueued on stream.")),
    Method("allreduce_with_bias", ("sendbuf", "recvbuf", "bias", "op", "*", "stream=None"), doc=(
        "RCCL only: allreduce of sendbuf with op into recvbuf, with bias (count elements of the same\n"
        "dtype) added into the result (ncclAllReduceWithBias). Collective; enqueued on stream. count =\n"
        "sendbuf's element count; recvbuf and bias need at least count elements. In place when recvbuf\n"
        "is sendbuf. FunctionNotFoundError on libraries without it.")),
    Method("alltoallv", ("sendbuf", "recvbuf", "sendcounts", "sdispls", "recvcounts", "rdispls", "*", "stream=None"),
           doc=(
        "RCCL only: rank j receives sendcounts[j] elements from sendbuf + sdispls[j]; rank i's data lands\n"
        "at recvbuf + rdispls[i], recvcounts[i] elements (ncclAlltoAllv, or the older ncclAllToAllv).\n"
        "The four arguments are sequences of nranks ints, in elements (not bytes). Collective; enqueued\n"
        "on stream. Both buffers must cover every range they address; they must not overlap.")),
]

# ---- the bindings ----


@dataclass(frozen=True)
class Binding:
    """One function of nccl.bindings.nccl (module "nccl") or nccl.bindings.rocm_extensions ("rccl").

    entry: its abi.h row; params: a Kind per C parameter, in the row's order; result; trace: the
    recorder's op (TRACE_OPS' id) or ""; doc: the docstring after the text signature.
    hand: the file under src/ext/bindings/ whose nx_binding_<name> is written by hand ("": the
    wrapper is generated). forms: a hand-written wrapper's other argument-count form, "short"
    (a creation call without the slot parameter, returning the new handle: short_returns) or "02"
    (0.2.0's form with the address of the struct to fill as an extra last parameter, `extra`)."""
    name: str
    entry: str
    params: tuple
    result: Result
    doc: str
    trace: str = ""
    hand: str = ""
    form: str = ""
    form_param: str = ""
    form_returns: str = ""
    module: str = "nccl"
    returns: str = ""  # docs/compatibility.md's words for the result, where the result kind's are too plain


def B(name, entry, params, result, doc, **kw):
    return Binding(name, entry, tuple(params), result, doc, **kw)


_CREATION = "bindings_creation.c"
_STRUCTS = "bindings_struct_results.c"
_GROUPS = "bindings_groups.c"
_ARRAYS = "bindings_arrays.c"
_PARAMS = "bindings_params.c"

@dataclass(frozen=True)
class Section:
    """A group of bindings by concern: tools/gen_surface.py writes each into a file of its own,
    src/ext/bindings/<stem>.gen.c (wrappers, signatures, docstrings, method table)."""
    stem: str
    title: str
    bindings: list


BINDING_SECTIONS = [
    Section("memory", "memory, version, unique ids, error strings", [
        B("mem_alloc", "ncclMemAlloc", [OUT, SIZE], OUT_RESULT, "ncclMemAlloc: allocate size bytes; returns the pointer."),
        B("mem_free", "ncclMemFree", [ADDR], NONE, "ncclMemFree: free memory from mem_alloc."),
        B("get_version", "ncclGetVersion", [OUT], OUT_RESULT, "ncclGetVersion: the library's version code.",
          returns="version code"),
        B("get_unique_id", "ncclGetUniqueId", [STRUCT_OUT], hand_result("UniqueId"), hand=_STRUCTS, form="02",
          form_param="unique_id", form_returns="None",
          doc="ncclGetUniqueId: a new UniqueId. The 0.2.0 form get_unique_id(unique_id) writes to that address."),
        B("get_error_string", "ncclGetErrorString", [INT], VALUE, "ncclGetErrorString: the text of a result code."),
        B("get_last_error", "ncclGetLastError", [COMM_OR_NULL], VALUE,
          "ncclGetLastError: the last error text ('' if none). comm may be 0: the error of a call made\n"
          "without a communicator."),
    ]),
    Section("communicators", "communicator creation, split/shrink/grow, teardown, revoke/suspend/resume", [
        B("comm_init_rank_config", "ncclCommInitRankConfig", [SLOT, INT, IDS, INT, ADDR], hand_result("int"),
          hand=_CREATION, form="short", form_param="comm", form_returns="Comm", returns="status (0 or 7)",
          doc="ncclCommInitRankConfig into the slot at address comm; returns the status (0, or 7 in progress).\n"
              "Short form comm_init_rank_config(nranks, comm_id, rank, config) returns the new Comm."),
        B("comm_init_rank", "ncclCommInitRank", [SLOT, INT, IDS, INT], hand_result("int"), hand=_CREATION,
          form="short", form_param="comm", form_returns="Comm",
          doc="ncclCommInitRank into the slot at address comm; returns the status. Collective, blocking.\n"
              "Short form comm_init_rank(nranks, comm_id, rank) returns the new Comm."),
        B("comm_init_all", "ncclCommInitAll", [HANDLES_OUT, INT, INT_ARRAY_OR_NONE], hand_result("list[Comm]"),
          hand=_CREATION, returns="a list of `Comm`",
          doc="ncclCommInitAll: ndev communicators in this process; returns a list of ndev Comm.\n"
              "devlist: a sequence of ints, an int address, or None (devices 0..ndev-1)."),
        B("comm_init_rank_scalable", "ncclCommInitRankScalable", [SLOT, INT, INT, INT, IDS, ADDR], hand_result("int"),
          hand=_CREATION, form="short", form_param="newcomm", form_returns="Comm",
          doc="ncclCommInitRankScalable into the slot at address newcomm; returns the status. comm_ids: an address\n"
              "or a buffer of n_id * 128 bytes. Short form (without newcomm) returns the new Comm."),
        B("comm_split", "ncclCommSplit", [COMM, INT, INT, SLOT, ADDR], hand_result("int"), hand=_CREATION,
          form="short", form_param="newcomm", form_returns="Comm",
          doc="ncclCommSplit into the slot at address newcomm; returns the status. Collective over comm.\n"
              "Short form comm_split(comm, color, key, config) returns the new Comm (empty for NCCL_SPLIT_NOCOLOR)."),
        B("comm_shrink", "ncclCommShrink", [COMM, INT_ARRAY, INT, SLOT, ADDR, INT], hand_result("int"), hand=_CREATION,
          form="short", form_param="newcomm", form_returns="Comm",
          doc="ncclCommShrink into the slot at address newcomm; returns the status. Called by the survivors.\n"
              "exclude_ranks_list: a sequence of ints (copied) or an int address. Short form (without newcomm)\n"
              "returns the new Comm."),
        B("comm_grow", "ncclCommGrow", [COMM_OR_NULL, INT, ADDR, INT, SLOT, ADDR], hand_result("int"), hand=_CREATION,
          form="short", form_param="newcomm", form_returns="Comm",
          doc="ncclCommGrow into the slot at address newcomm; returns the status. unique_id is an address or 0.\n"
              "comm is 0 (or an empty Comm) on a rank that joins. Short form (without newcomm) returns the new Comm."),
        B("comm_get_unique_id", "ncclCommGetUniqueId", [COMM, STRUCT_OUT], hand_result("UniqueId"), hand=_STRUCTS,
          form="02", form_param="unique_id", form_returns="None",
          doc="ncclCommGetUniqueId: a UniqueId for growing comm. 0.2.0 form (comm, unique_id) writes to that address."),
        B("comm_finalize", "ncclCommFinalize", [COMM], NONE, trace="FINALIZE",
          doc="ncclCommFinalize: flush this rank's work. Collective. A null comm (0) is refused (ValueError)."),
        B("comm_destroy", "ncclCommDestroy", [COMM], NONE, trace="DESTROY",
          doc="ncclCommDestroy: free the communicator. A null comm (0) is refused (ValueError)."),
        B("comm_abort", "ncclCommAbort", [COMM], NONE, trace="ABORT",
          doc="ncclCommAbort: abort in-flight operations and free the communicator. A null comm (0) is refused\n"
              "(ValueError)."),
        B("comm_revoke", "ncclCommRevoke", [COMM, INT], NONE, "ncclCommRevoke: stop in-flight work, keep resources."),
        B("comm_suspend", "ncclCommSuspend", [COMM, INT], NONE, "ncclCommSuspend: release resources (NCCL_SUSPEND_MEM)."),
        B("comm_resume", "ncclCommResume", [COMM], NONE, "ncclCommResume: resume a suspended communicator."),
    ]),
    Section("queries", "communicator queries", [
        B("comm_get_async_error", "ncclCommGetAsyncError", [COMM, OUT], OUT_RESULT,
          "ncclCommGetAsyncError: the communicator's asynchronous state (returned, not raised).", returns="state code"),
        B("comm_count", "ncclCommCount", [COMM, OUT], OUT_RESULT, "ncclCommCount: the number of ranks."),
        B("comm_cu_device", "ncclCommCuDevice", [COMM, OUT], OUT_RESULT, "ncclCommCuDevice: the device ordinal."),
        B("comm_user_rank", "ncclCommUserRank", [COMM, OUT], OUT_RESULT, "ncclCommUserRank: this rank."),
        B("comm_mem_stats", "ncclCommMemStats", [COMM, enum("ncclCommMemStat_t", "CommMemStat"), OUT], OUT_RESULT,
          "ncclCommMemStats: the value of a CommMemStat."),
        B("comm_query_properties", "ncclCommQueryProperties", [COMM, STRUCT_OUT], hand_result("CommProperties"),
          hand=_STRUCTS, form="02", form_param="props", form_returns="None",
          doc="ncclCommQueryProperties: a CommProperties. 0.2.0 form (comm, props) fills the struct at that address."),
    ]),
    Section("collectives", "collectives, point-to-point, custom reduction operators, groups", [
        B("all_reduce", "ncclAllReduce", [ADDR, ADDR, SIZE, DTYPE, REDOP, COMM, STREAM], NONE, trace="ALLREDUCE",
          doc="ncclAllReduce: reduce over all ranks into every recvbuff. Collective; enqueued on stream."),
        B("reduce_scatter", "ncclReduceScatter", [ADDR, ADDR, SIZE, DTYPE, REDOP, COMM, STREAM], NONE,
          trace="REDUCESCATTER",
          doc="ncclReduceScatter: reduce, then scatter recvcount elements per rank. Collective."),
        B("reduce", "ncclReduce", [ADDR, ADDR, SIZE, DTYPE, REDOP, INT, COMM, STREAM], NONE, trace="REDUCE",
          doc="ncclReduce: reduce onto root. Collective; enqueued on stream."),
        B("broadcast", "ncclBroadcast", [ADDR, ADDR, SIZE, DTYPE, INT, COMM, STREAM], NONE, trace="BROADCAST",
          doc="ncclBroadcast: copy root's sendbuff to every recvbuff. Collective; enqueued on stream."),
        B("gather", "ncclGather", [ADDR, ADDR, SIZE, DTYPE, INT, COMM, STREAM], NONE, trace="GATHER",
          doc="ncclGather: gather count elements from every rank onto root. Collective."),
        B("scatter", "ncclScatter", [ADDR, ADDR, SIZE, DTYPE, INT, COMM, STREAM], NONE, trace="SCATTER",
          doc="ncclScatter: scatter count elements per rank from root. Collective."),
        B("bcast", "ncclBcast", [ADDR, SIZE, DTYPE, INT, COMM, STREAM], NONE, trace="BROADCAST",
          doc="ncclBcast (deprecated, in place): broadcast from root. Collective; enqueued on stream."),
        B("all_gather", "ncclAllGather", [ADDR, ADDR, SIZE, DTYPE, COMM, STREAM], NONE, trace="ALLGATHER",
          doc="ncclAllGather: gather sendcount elements from every rank everywhere. Collective."),
        B("allto_all", "ncclAlltoAll", [ADDR, ADDR, SIZE, DTYPE, COMM, STREAM], NONE, trace="ALLTOALL",
          doc="ncclAlltoAll (RCCL's older ncclAllToAll when that is all the library has): count elements to and\n"
              "from every rank. Collective; enqueued on stream."),
        B("send", "ncclSend", [ADDR, SIZE, DTYPE, INT, COMM, STREAM], NONE, trace="SEND",
          doc="ncclSend: send count elements to peer. Enqueued on stream; pair with recv."),
        B("recv", "ncclRecv", [ADDR, SIZE, DTYPE, INT, COMM, STREAM], NONE, trace="RECV",
          doc="ncclRecv: receive count elements from peer. Enqueued on stream."),
        B("red_op_create_pre_mul_sum", "ncclRedOpCreatePreMulSum",
          [OUT, ADDR, DTYPE, enum("ncclScalarResidence_t", "ScalarResidence"), COMM], OUT_RESULT,
          "ncclRedOpCreatePreMulSum: a new reduction op (returned as an int). scalar is an address.", returns="op value"),
        B("red_op_destroy", "ncclRedOpDestroy", [REDOP, COMM], NONE, "ncclRedOpDestroy."),
        B("group_start", "ncclGroupStart", [], hand_result("None"), hand=_GROUPS,
          doc="ncclGroupStart: defer calls until the matching group_end()."),
        B("group_end", "ncclGroupEnd", [], hand_result("None"), hand=_GROUPS,
          doc="ncclGroupEnd: the outermost one executes the group."),
        B("group_simulate_end", "ncclGroupSimulateEnd", [STRUCT_OUT], hand_result("SimInfo"), hand=_GROUPS, form="02",
          form_param="sim_info", form_returns="None",
          doc="ncclGroupSimulateEnd: end the group without communicating; returns a SimInfo with the estimate.\n"
              "0.2.0 form group_simulate_end(sim_info) fills the struct at that address."),
    ]),
    Section("windows", "buffer and window registration, one-sided signals, window device pointers, device comms", [
        B("comm_register", "ncclCommRegister", [COMM, ADDR, SIZE, OUT], OUT_RESULT, "ncclCommRegister: returns the handle.",
          returns="handle"),
        B("comm_deregister", "ncclCommDeregister", [COMM, ADDR], NONE, "ncclCommDeregister."),
        B("comm_window_register", "ncclCommWindowRegister", [COMM, ADDR, SIZE, SLOT, INT], hand_result("int"),
          hand=_CREATION, form="short", form_param="win", form_returns="Window", trace="WIN_REGISTER",
          doc="ncclCommWindowRegister into the slot at address win; returns the status. Collective.\n"
              "Short form comm_window_register(comm, buff, size, win_flags) returns the new Window (inside a group\n"
              "the library fills it when the group ends)."),
        B("comm_window_deregister", "ncclCommWindowDeregister", [COMM, WINDOW], NONE, "ncclCommWindowDeregister.",
          trace="WIN_DEREGISTER"),
        B("win_get_user_ptr", "ncclWinGetUserPtr", [COMM, WINDOW, OUT], OUT_RESULT,
          "ncclWinGetUserPtr: the window's user pointer."),
        B("put_signal", "ncclPutSignal", [ADDR, SIZE, DTYPE, INT, WINDOW, SIZE, INT, INT, UINT, COMM, STREAM], NONE,
          trace="PUT_SIGNAL",
          doc="ncclPutSignal: one-sided write into peer's window (offset in bytes), then signal."),
        B("signal", "ncclSignal", [INT, INT, INT, UINT, COMM, STREAM], NONE, "ncclSignal: signal peer without data.",
          trace="SIGNAL"),
        B("wait_signal", "ncclWaitSignal", [INT, DESCS, COMM, STREAM], hand_result("None"), hand=_ARRAYS,
          trace="WAIT_SIGNAL",
          doc="ncclWaitSignal: wait for the signals described by n_desc WaitSignalDesc entries (an address or a "
              "buffer)."),
        B("get_lsa_multimem_device_pointer", "ncclGetLsaMultimemDevicePointer", [WINDOW, SIZE, OUT], OUT_RESULT,
          "ncclGetLsaMultimemDevicePointer: the multimem pointer at offset."),
        B("get_lsa_device_pointer", "ncclGetLsaDevicePointer", [WINDOW, SIZE, INT, OUT], OUT_RESULT,
          "ncclGetLsaDevicePointer: the pointer of lsa_rank's window at offset."),
        B("get_peer_device_pointer", "ncclGetPeerDevicePointer", [WINDOW, SIZE, INT, OUT], OUT_RESULT,
          "ncclGetPeerDevicePointer: the pointer of peer's window at offset."),
        B("dev_comm_create", "ncclDevCommCreate", [COMM, ADDR, STRUCT_OUT], hand_result("DevComm"), hand=_STRUCTS,
          form="02", form_param="out_dev_comm", form_returns="None",
          doc="ncclDevCommCreate: a new DevComm built from the requirements reqs (a DevCommRequirements or its\n"
              "address). The 3-argument form dev_comm_create(comm, reqs, out_dev_comm) fills the struct at\n"
              "address out_dev_comm instead and returns None."),
        B("dev_comm_destroy", "ncclDevCommDestroy", [COMM, ADDR], NONE, "ncclDevCommDestroy."),
    ]),
    Section("config_collectives", "the nccl*Config collectives (NCCL 2.31): a CollConfig (or its address, 0: none) per call", [
        B("all_reduce_config", "ncclAllReduceConfig", [ADDR, ADDR, SIZE, DTYPE, REDOP, COMM, STREAM, ADDR], NONE,
          trace="ALLREDUCE",
          doc="ncclAllReduceConfig: reduce over all ranks into every recvbuff. Collective; enqueued on stream."),
        B("reduce_config", "ncclReduceConfig", [ADDR, ADDR, SIZE, DTYPE, REDOP, INT, COMM, STREAM, ADDR], NONE,
          trace="REDUCE", doc="ncclReduceConfig: reduce onto root. Collective; enqueued on stream."),
        B("reduce_scatter_config", "ncclReduceScatterConfig", [ADDR, ADDR, SIZE, DTYPE, REDOP, COMM, STREAM, ADDR], NONE,
          trace="REDUCESCATTER",
          doc="ncclReduceScatterConfig: reduce, then scatter recvcount elements per rank. Collective; enqueued on "
              "stream."),
        B("all_gather_config", "ncclAllGatherConfig", [ADDR, ADDR, SIZE, DTYPE, COMM, STREAM, ADDR], NONE,
          trace="ALLGATHER",
          doc="ncclAllGatherConfig: gather sendcount elements from every rank everywhere. Collective; enqueued on "
              "stream."),
        B("allto_all_config", "ncclAlltoAllConfig", [ADDR, ADDR, SIZE, DTYPE, COMM, STREAM, ADDR], NONE,
          trace="ALLTOALL",
          doc="ncclAlltoAllConfig: count elements to and from every rank. Collective; enqueued on stream."),
        B("broadcast_config", "ncclBroadcastConfig", [ADDR, ADDR, SIZE, DTYPE, INT, COMM, STREAM, ADDR], NONE,
          trace="BROADCAST",
          doc="ncclBroadcastConfig: copy root's sendbuff to every recvbuff. Collective; enqueued on stream."),
        B("gather_config", "ncclGatherConfig", [ADDR, ADDR, SIZE, DTYPE, INT, COMM, STREAM, ADDR], NONE,
          trace="GATHER",
          doc="ncclGatherConfig: gather count elements from every rank onto root. Collective; enqueued on stream."),
        B("scatter_config", "ncclScatterConfig", [ADDR, ADDR, SIZE, DTYPE, INT, COMM, STREAM, ADDR], NONE,
          trace="SCATTER",
          doc="ncclScatterConfig: scatter count elements per rank from root. Collective; enqueued on stream."),
    ]),
    Section("device", "teams, device-resource requirements, multimem and logical-endpoint queries", [
        B("team_world", "ncclTeamWorld", [COMM], VALUE, "ncclTeamWorld: the team of every rank of comm (a Team)."),
        B("team_lsa", "ncclTeamLsa", [COMM], VALUE,
          "ncclTeamLsa: the team of the ranks sharing this rank's load/store-accessible memory (a Team)."),
        B("team_rail", "ncclTeamRail", [COMM], VALUE,
          "ncclTeamRail: the team of the ranks at this rank's position in every LSA team (a Team)."),
        B("team_cft", "ncclTeamCft", [COMM, enum("ncclCftTeamMode_t", "CftTeamMode")], VALUE,
          "ncclTeamCft: the CFT team of comm in the given CftTeamMode (a Team)."),
        B("team_cft_multimem", "ncclTeamCftMultimem", [COMM], VALUE,
          "ncclTeamCftMultimem: the CFT multimem team of comm (a Team)."),
        B("team_rank_to_world", "ncclTeamRankToWorld", [COMM, TEAM, INT], VALUE,
          "ncclTeamRankToWorld: the world rank of team's rank `rank`."),
        B("team_rank_to_lsa", "ncclTeamRankToLsa", [COMM, TEAM, INT], VALUE,
          "ncclTeamRankToLsa: the LSA rank of team's rank `rank`."),
        B("lsa_barrier_create_requirement", "ncclLsaBarrierCreateRequirement",
          [TEAM, INT, struct("LSA_BARRIER_HANDLE", "ncclLsaBarrierHandle_t *"), DEV_RESOURCE_REQUIREMENTS], NONE,
          "ncclLsaBarrierCreateRequirement: fill out_handle (an LsaBarrierHandle) and out_req (a\n"
          "DevResourceRequirements) for n_barriers LSA barriers over team; either may be an int address.",
          returns="None (fills both)"),
        B("gin_barrier_create_requirement", "ncclGinBarrierCreateRequirement",
          [COMM, TEAM, INT, struct("GIN_BARRIER_HANDLE", "ncclGinBarrierHandle_t *"), DEV_RESOURCE_REQUIREMENTS], NONE,
          "ncclGinBarrierCreateRequirement: fill out_handle (a GinBarrierHandle) and out_req (a\n"
          "DevResourceRequirements) for n_barriers GIN barriers over team; either may be an int address.",
          returns="None (fills both)"),
        B("ll_a2a_create_requirement", "ncclLLA2ACreateRequirement",
          [INT, INT, struct("LL_A2A_HANDLE", "ncclLLA2AHandle_t *"), DEV_RESOURCE_REQUIREMENTS], NONE,
          "ncclLLA2ACreateRequirement: fill out_handle (an LLA2AHandle) and out_req (a\n"
          "DevResourceRequirements) for a low-latency all-to-all; either may be an int address.",
          returns="None (fills both)"),
        B("ll_a2a_calc_slots", "ncclLLA2ACalcSlots", [INT, INT], VALUE,
          "ncclLLA2ACalcSlots: the slot count a low-latency all-to-all of max_elts elements of\n"
          "max_elt_size bytes needs (0.3.1's spelling lla2a_calc_slots is an alias)."),
        B("get_multimem_device_pointer", "ncclGetMultimemDevicePointer",
          [WINDOW, SIZE, struct_value("MULTIMEM_HANDLE", "ncclMultimemHandle_t"), OUT], OUT_RESULT,
          "ncclGetMultimemDevicePointer: the multimem pointer at offset through multimem (a MultimemHandle)."),
        B("get_multimem_device_le_info", "ncclGetMultimemDeviceLeInfo", [WINDOW, SIZE, OUT, OUT], OUT_PAIR,
          "ncclGetMultimemDeviceLeInfo: (le_id, le_offset) of the multimem logical endpoint at offset."),
        B("get_cft_device_le_info", "ncclGetCftDeviceLeInfo", [WINDOW, SIZE, INT, TEAM, OUT, OUT], OUT_PAIR,
          "ncclGetCftDeviceLeInfo: (le_id, le_offset) of CFT rank peer_cft of cft_team (a Team) at offset."),
        B("get_peer_device_le_info", "ncclGetPeerDeviceLeInfo", [WINDOW, SIZE, INT, OUT, OUT], OUT_PAIR,
          "ncclGetPeerDeviceLeInfo: (le_id, le_offset) of world rank peer_world's window at offset."),
    ]),
    Section("params", "library parameters by key (NCCL 2.30), socket encryption (NCCL 2.32)", [
        B("param_get_parameter", "ncclParamGetParameter", [KEY, TEXT_OUT, TEXT_OUT], hand_result("str"), hand=_PARAMS,
          doc="ncclParamGetParameter: the value of the library parameter `key` (an ``NCCL_*`` name), as text."),
        B("param_get_all_keys", "ncclParamGetAllParameterKeys", [TEXT_OUT, TEXT_OUT], hand_result("list[str]"),
          hand=_PARAMS,
          doc="ncclParamGetAllParameterKeys: the keys of every library parameter (a list of str; NULL entries of\n"
              "the library's table are left out)."),
        B("param_dump_all", "ncclParamDumpAll", [], VOID,
          "ncclParamDumpAll: the library prints every parameter and its value (on its own stdout).",
          returns="None (the library prints)"),
        B("set_encryption", "ncclSetEncryption", [struct("ENCRYPTION_CONFIG", "ncclEncryptionConfig_t *")], NONE,
          "ncclSetEncryption: how the library encrypts its connections from now on; config is an\n"
          "EncryptionConfig or the int address of an ncclEncryptionConfig_t."),
    ]),
    Section("rccl", "nccl.bindings.rocm_extensions: the RCCL-only collectives", [
        B("all_reduce_with_bias", "ncclAllReduceWithBias", [ADDR, ADDR, SIZE, DTYPE, REDOP, COMM, STREAM, ADDR], NONE,
          trace="ALLREDUCE_BIAS", module="rccl",
          doc="ncclAllReduceWithBias (RCCL): an all-reduce that also adds acc, count elements of datatype, into\n"
              "the result. Collective; enqueued on stream. FunctionNotFoundError when the library lacks it."),
        B("all_to_all_v", "ncclAlltoAllv", [ADDR, SIZE_ARRAY, SIZE_ARRAY, ADDR, SIZE_ARRAY, SIZE_ARRAY, DTYPE, COMM, STREAM],
          hand_result("None"), hand=_ARRAYS, module="rccl", trace="ALLTOALLV",
          doc="ncclAlltoAllv (RCCL; falls back to the deprecated ncclAllToAllv): rank j receives sendcounts[j]\n"
              "elements from sendbuff + sdispls[j]; data from rank i lands at recvbuff + rdispls[i]. Counts and\n"
              "displacements are in elements of datatype, not bytes. The four arrays are host size_t[nranks]\n"
              "addresses, sequences of ints, or 1-D uint64 buffers (copied after checking their length)."),
    ]),
]

BINDINGS = [b for section in BINDING_SECTIONS for b in section.bindings]

# Why each hand-written wrapper is not generated (docs/developing.md lists them).
IRREGULAR = {
    _CREATION: "creation calls: two argument-count forms (0.3.1's slot address, or a new Comm/Window made "
               "before the call), unique ids given as an address or as bytes, the 1-rank launch check, and "
               "a flight-recorder ring made before the call and bound to the handle after it; comm_init_all "
               "fills a list of Comms from a handle array kept alive across a group",
    _STRUCTS: "a struct result with 0.2.0's second form: a new wrapper filled by the library, or the address "
              "of one given by the caller (comm_query_properties also lowers the struct's version to the "
              "library's)",
    _GROUPS: "the group calls keep this thread's group depth and the objects a group keeps alive, and the "
             "outermost end records GroupEnd on every communicator of the group",
    _ARRAYS: "arrays given as an address (used in place) or as data (checked against a length the call "
             "computes, then copied): wait_signal's descriptors, all_to_all_v's four size_t[nranks] arrays "
             "(nranks asked of the library first)",
    _PARAMS: "text both ways: a str key without NUL characters in, the library's text (NUL-terminated or "
             "counted, not always UTF-8) or table of keys out",
}

# nccl.bindings.nccl's functions that are not entry points (loader/library.c): their parameters and
# results, for the stub.
MODULE_FUNCTIONS = {
    "get_library_path": ((), "str"),
    "get_library_flavour": ((), "str"),
    "get_load_attempts": ((), "list[tuple[str, str | None]]"),
    "check_status": ((("status", "int"),), "None"),
}

# ---- the NCCL datatypes ----


@dataclass(frozen=True)
class Dtype:
    """An ncclDataType_t (nccl_abi.h) as nccl4py names it: the NcclDataType member (`core`), the
    short name the host backend and nccl.bench print, its size, its numpy dtype (numpy kind, or ""
    for a dtype of the ml_dtypes package, told apart by name) and its DLPack type code."""
    c: str
    core: str
    short: str
    size: int
    numpy: str
    kind: str
    dlpack: str


DTYPES = [
    Dtype("ncclInt8", "INT8", "int8", 1, "int8", "i", "kDLInt"),
    Dtype("ncclUint8", "UINT8", "uint8", 1, "uint8", "u", "kDLUInt"),
    Dtype("ncclInt32", "INT32", "int32", 4, "int32", "i", "kDLInt"),
    Dtype("ncclUint32", "UINT32", "uint32", 4, "uint32", "u", "kDLUInt"),
    Dtype("ncclInt64", "INT64", "int64", 8, "int64", "i", "kDLInt"),
    Dtype("ncclUint64", "UINT64", "uint64", 8, "uint64", "u", "kDLUInt"),
    Dtype("ncclFloat16", "FLOAT16", "float16", 2, "float16", "f", "kDLFloat"),
    Dtype("ncclFloat32", "FLOAT32", "float32", 4, "float32", "f", "kDLFloat"),
    Dtype("ncclFloat64", "FLOAT64", "float64", 8, "float64", "f", "kDLFloat"),
    Dtype("ncclBfloat16", "BFLOAT16", "bfloat16", 2, "bfloat16", "", "kDLBfloat"),
    Dtype("ncclFloat8e4m3", "FLOAT8E4M3", "float8e4m3", 1, "float8_e4m3fn", "", "kDLFloat8_e4m3fn"),
    Dtype("ncclFloat8e5m2", "FLOAT8E5M2", "float8e5m2", 1, "float8_e5m2", "", "kDLFloat8_e5m2"),
]

# Element types carried as a datatype of DTYPES with a meaning of their own: numpy bool is UINT8
# whose reductions are logical (docs/api/collectives.md#bool-buffers).
DTYPE_ALIASES = [
    Dtype("ncclUint8", "UINT8", "bool", 1, "bool", "b", "kDLBool"),
]

# ---- nccl_abi.h's enums and constants in Python (src/nccl/_enums.py) ----


@dataclass(frozen=True)
class Enum:
    """A C enum of nccl_abi.h as a Python IntEnum: its class name and docstring; each member's
    name is the C name without `prefix`, in `style` "Camel" (as is) or "UPPER" (CamelCase to
    UPPER_SNAKE), except the names in `names` (C name -> Python name)."""
    c: str
    py: str
    doc: str
    prefix: str
    style: str = "Camel"
    names: dict = field(default_factory=dict)
    only: dict = field(default_factory=dict)  # when set: only these members (C name -> Python name)


ENUMS = [
    Enum("ncclResult_t", "Result", "ncclResult_t: the status every NCCL call returns.", "nccl"),
    Enum("ncclDataType_t", "DataType", "ncclDataType_t: the element type of a buffer.", "nccl"),
    Enum("ncclRedOp_t", "RedOp", "ncclRedOp_t: the reduction operators; a PreMulSum operator made by "
         "red_op_create_pre_mul_sum has a value of its own.", "nccl"),
    Enum("ncclRedOp_t", "RedOpDummy", "ncclRedOp_dummy_t: the count of the built-in operators (NCCL's "
         "header keeps it for ABI stability).", "nccl", only={"ncclNumOps": "NumOps_dummy"}),
    Enum("ncclScalarResidence_t", "ScalarResidence", "ncclScalarResidence_t: where the scalar of "
         "red_op_create_pre_mul_sum lives.", "ncclScalar"),
    Enum("ncclCommMemStat_t", "CommMemStat", "ncclCommMemStat_t: the memory statistic comm_mem_stats reports.",
         "ncclStat"),
    Enum("ncclGinType_t", "GinType", "ncclGinType_t: the GPU-initiated networking implementation of a "
         "communicator.", "ncclGinType", "UPPER", {"ncclGinMaxTypes": "GIN_MAX_TYPES"}),
    Enum("ncclGinConnectionType_t", "GinConnectionType", "ncclGinConnectionType_t: which peers a device "
         "communicator connects over GIN.", "ncclGinConnection", "UPPER"),
    Enum("ncclGinSignalOp_t", "GinSignalOp", "ncclGinSignalOp_t: how a GIN signal is updated.", "ncclGinSignal"),
    Enum("ncclCftTeamMode_t", "CftTeamMode", "ncclCftTeamMode_t: the layout of team_cft.", "ncclCftTeam", "UPPER"),
    Enum("ncclCftCap_t", "CftCap", "ncclCftCap_t: capability bits of the CFT device API.", "ncclCft", "UPPER",
         {"ncclCft": "CFT"}),
    Enum("ncclHostCftMode_t", "HostCftMode", "ncclHostCftMode_t: Config.host_cft_mode.", "ncclHostCft"),
    Enum("ncclNvlsHostMode_t", "NvlsHostMode", "ncclNvlsHostMode_t: Config.nvls_host_mode.", "ncclNvlsHostMode"),
    Enum("ncclEncryptionMode_t", "EncryptionMode", "ncclEncryptionMode_t: EncryptionConfig.mode.",
         "ncclEncryptionMode", "UPPER"),
]

# Other names of the same classes in nccl._enums (nccl4py 0.3.1's spellings).
ENUM_ALIASES = {"RedOp_dummy": "RedOpDummy"}

# nccl_abi.h's constants in nccl._enums, in this order (nccl.bindings.nccl re-exports the public ones;
# a leading underscore marks one no nccl4py release names, which nccl.core uses).
CONSTANTS = [
    "NCCL_WIN_DEFAULT", "NCCL_WIN_COLL_SYMMETRIC", "NCCL_WIN_STRICT_ORDERING", "_NCCL_WIN_GIN_ONLY",
    "_NCCL_WIN_CFT_COUNTED", "NCCL_WIN_REQUIRED_ALIGNMENT", "NCCL_CTA_POLICY_DEFAULT", "NCCL_CTA_POLICY_EFFICIENCY",
    "NCCL_CTA_POLICY_ZERO", "NCCL_SHRINK_DEFAULT", "NCCL_SHRINK_ABORT", "NCCL_REVOKE_DEFAULT", "NCCL_SUSPEND_MEM",
    "NCCL_SPLIT_NOCOLOR", "NCCL_CONFIG_UNDEF_INT", "NCCL_API_MAGIC", "NCCL_UNIQUE_ID_BYTES",
]
