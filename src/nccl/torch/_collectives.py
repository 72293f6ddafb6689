"""The collectives of ProcessGroupNccl4py (docs/api/torch.md#what-works), as a mixin.

Each method follows torch's c10d signature. The calls torch.distributed makes most (all_reduce,
broadcast, all_gather_into_tensor, reduce_scatter_tensor, all_to_all_single) first try the fast
path: the tensors go straight to the channel's C method, which takes them only if they are
contiguous and of an NCCL datatype (NcclInvalid otherwise, raised before the library is called).
Every other case builds a ``call`` over staged buffers (``_convert``) that returns its finishing
step (copies back), and hands it to ``_submit``, which runs it at once or queues it.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.distributed as dist

from nccl._errors import FunctionNotFoundError, NcclInvalid
from nccl.torch._convert import (
    BITWISE, NATIVE, NCCL_OP, PREMUL_SUM, SUM, fold_bitwise, movable, op_code, premul_factor, reducible,
)

__all__ = ["CollectivesMixin"]

Call = Callable[[], Any]


def _one(tensors: list[torch.Tensor], what: str) -> torch.Tensor:
    if len(tensors) != 1:
        raise ValueError(f"nccl4py: {what} takes one tensor per call, got {len(tensors)}")
    return tensors[0]


def _finish_all(finishes: list[Any]) -> Any:
    steps = [f for f in finishes if f is not None]
    if not steps:
        return None
    if len(steps) == 1:
        return steps[0]

    def run() -> None:
        for f in steps:
            f()

    return run


def _grouped(ch: Any, calls: list[Call]) -> Call:
    """One call running ``calls`` inside a group of ch's library; its finish runs theirs."""

    def call() -> Any:
        finishes = []
        ch.group_start()
        try:
            for c in calls:
                finishes.append(c())
        finally:
            ch.group_end()
        return _finish_all(finishes)

    return call


def _flat_bytes(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1).view(torch.uint8)


def _same_layout(tensors: list[torch.Tensor], like: torch.Tensor) -> bool:
    return all(o.numel() == like.numel() and o.dtype == like.dtype for o in tensors)


class CollectivesMixin:
    """torch c10d's collectives over the channels of ProcessGroupNccl4py (see _group.py)."""

    # ProcessGroupNccl4py provides _cpu, _coalescing, _pending, _channel, _submit and _flush;
    # torch's ProcessGroup provides rank() and size().
    _cpu: Any
    _coalescing: bool
    _pending: list[Any]
    _channel: Callable[[torch.Tensor], Any]
    _submit: Callable[..., Any]
    _flush: Callable[[], None]
    rank: Callable[[], int]
    size: Callable[[], int]

    # ---- reductions ----

    def allreduce(self, tensors: list[torch.Tensor], opts: Any = None) -> Any:
        if opts is None:
            opts = dist.AllreduceOptions()
        if len(tensors) != 1:
            raise ValueError(f"nccl4py: all_reduce takes one tensor per call, got {len(tensors)}")
        t = tensors[0]
        ch = self._cpu if t.is_cpu else self._channel(t)
        code = hash(opts.reduceOp)  # op_code(), inlined on the hot path
        op = NCCL_OP.get(code)
        if op is not None and not self._coalescing and t.dtype in NATIVE:
            if self._pending:
                self._flush()
            try:
                ch.allreduce(t, t, op)
            except NcclInvalid:
                pass  # not contiguous: staged below
            else:
                return ch.work(tensors) if opts.asyncOp else None
        return self._submit(ch, self._allreduce_call(ch, t, code, opts.reduceOp, "all_reduce"), tensors,
                            opts.asyncOp)

    def _allreduce_call(self, ch: Any, t: torch.Tensor, code: int, op: Any, what: str) -> Call:
        if code in BITWISE:
            return self._bitwise_call(ch, t, code, what, lambda folded: t.copy_(folded.view_as(t)))
        if code == PREMUL_SUM:
            factor = premul_factor(op)
            code = SUM
        else:
            factor = None
        buf, nccl_op, back = reducible(t, code, what, written=True)

        def call() -> Any:
            if factor is not None:
                buf.mul_(factor)
            ch.allreduce(buf, buf, nccl_op)
            return back

        return call

    def _bitwise_call(self, ch: Any, t: torch.Tensor, code: int, what: str, use: Callable[[torch.Tensor], Any]) -> Call:
        """BAND/BOR/BXOR: every rank's ``t`` gathered, folded locally, the result handed to ``use``."""
        c = t.contiguous()
        gathered = torch.empty((self.size(),) + tuple(c.shape), dtype=c.dtype, device=c.device)
        fold_bitwise(gathered[:1], code, what)  # refuses floating-point dtypes before any call

        def call() -> Any:
            ch.allgather(_flat_bytes(c), _flat_bytes(gathered))
            return lambda: use(fold_bitwise(gathered, code, what))

        return call

    def allreduce_coalesced(self, tensors: list[torch.Tensor], opts: Any = None) -> Any:
        if opts is None:
            opts = dist.AllreduceCoalescedOptions()
        if not tensors:
            return self._submit(self._cpu, lambda: None, tensors, opts.asyncOp)
        code = op_code(opts.reduceOp)
        ch = self._channel(tensors[0])
        calls = [self._allreduce_call(ch, t, code, opts.reduceOp, "all_reduce_coalesced") for t in tensors]
        return self._submit(ch, _grouped(ch, calls), tensors, opts.asyncOp)

    def reduce(self, tensors: list[torch.Tensor], opts: Any = None) -> Any:
        if opts is None:
            opts = dist.ReduceOptions()
        t = _one(tensors, "reduce")
        ch = self._channel(t)
        root, code = opts.rootRank, op_code(opts.reduceOp)
        on_root = self.rank() == root
        if code in BITWISE:
            call = self._bitwise_call(ch, t, code, "reduce",
                                      lambda folded: t.copy_(folded.view_as(t)) if on_root else None)
            return self._submit(ch, call, tensors, opts.asyncOp)
        if code == PREMUL_SUM:
            # scaled in a copy: off the root the caller's tensor keeps its value
            src, code = t * premul_factor(opts.reduceOp), SUM
            buf, nccl_op, _ = reducible(src, code, "reduce", written=False)
            back = (lambda: t.copy_(src)) if on_root else None
        else:
            buf, nccl_op, back = reducible(t, code, "reduce", written=True)

        def call() -> Any:
            ch.reduce(buf, buf, nccl_op, root)
            return back

        return self._submit(ch, call, tensors, opts.asyncOp)

    def reduce_scatter_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> Any:
        if opts is None:
            opts = dist.ReduceScatterOptions()
        ch = self._cpu if output.is_cpu else self._channel(output)
        code = hash(opts.reduceOp)  # op_code(), inlined on the hot path
        op = NCCL_OP.get(code)
        if op is not None and not self._coalescing and output.dtype in NATIVE:
            if self._pending:
                self._flush()
            try:
                ch.reduce_scatter(input, output, op)
            except NcclInvalid:
                pass  # staged below
            else:
                return ch.work([output]) if opts.asyncOp else None
        return self._submit(ch, self._reduce_scatter_call(ch, output, input, code, opts.reduceOp, "reduce_scatter_tensor"),
                            [output], opts.asyncOp)

    _reduce_scatter_base = reduce_scatter_single

    def _reduce_scatter_call(self, ch: Any, output: torch.Tensor, input: torch.Tensor, code: int, op: Any,
                             what: str) -> Call:
        if code in BITWISE:
            rank, n = self.rank(), self.size()
            return self._bitwise_call(ch, input, code, what,
                                      lambda folded: output.copy_(folded.reshape(n, -1)[rank].view_as(output)))
        if code == PREMUL_SUM:
            input, code = input * premul_factor(op), SUM
        send, nccl_op, _ = reducible(input, code, what, written=False)
        recv, _, back = reducible(output, code, what, written=True)

        def call() -> Any:
            ch.reduce_scatter(send, recv, nccl_op)
            return back

        return call

    def reduce_scatter(self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]], opts: Any = None) -> Any:
        if opts is None:
            opts = dist.ReduceScatterOptions()
        out = _one(outputs, "reduce_scatter")
        inputs = _one(input_lists, "reduce_scatter")
        ch = self._channel(out)
        code = op_code(opts.reduceOp)
        if _same_layout(inputs, out):
            flat = torch.cat([x.reshape(-1) for x in inputs])
            call = self._reduce_scatter_call(ch, out, flat, code, opts.reduceOp, "reduce_scatter")
        elif code in BITWISE or code == PREMUL_SUM:
            raise ValueError(f"nccl4py: reduce_scatter of tensors of different sizes supports SUM, AVG, PRODUCT, "
                             f"MIN and MAX only")
        else:
            rank = self.rank()
            calls = []
            finishes = []
            for j, x in enumerate(inputs):
                send, nccl_op, _ = reducible(x, code, "reduce_scatter", written=False)
                if j == rank:
                    recv, _, back = reducible(out, code, "reduce_scatter", written=True)
                    finishes.append(back)
                else:
                    recv = None
                calls.append(lambda s=send, r=recv, j=j, o=nccl_op: ch.reduce(s, r, o, j))
            grouped = _grouped(ch, calls)

            def call() -> Any:
                grouped()
                return _finish_all(finishes)

        return self._submit(ch, call, outputs, opts.asyncOp)

    def reduce_scatter_single_coalesced(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
                                        opts: Any = None) -> Any:
        if opts is None:
            opts = dist.ReduceScatterOptions()
        if not outputs:
            return self._submit(self._cpu, lambda: None, outputs, opts.asyncOp)
        ch = self._channel(outputs[0])
        code = op_code(opts.reduceOp)
        calls = [self._reduce_scatter_call(ch, o, i, code, opts.reduceOp, "reduce_scatter_tensor_coalesced")
                 for o, i in zip(outputs, inputs, strict=True)]
        return self._submit(ch, _grouped(ch, calls), outputs, opts.asyncOp)

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    # ---- data movement ----

    def broadcast(self, tensors: list[torch.Tensor], opts: Any = None) -> Any:
        if opts is None:
            opts = dist.BroadcastOptions()
        if len(tensors) != 1:
            raise ValueError(f"nccl4py: broadcast takes one tensor per call, got {len(tensors)}")
        t = tensors[0]
        ch = self._cpu if t.is_cpu else self._channel(t)
        root = opts.rootRank
        if not self._coalescing and t.dtype in NATIVE:
            if self._pending:
                self._flush()
            try:
                ch.broadcast(t, t, root)
            except NcclInvalid:
                pass  # staged below
            else:
                return ch.work(tensors) if opts.asyncOp else None
        buf, back = movable(t, written=True)

        def call() -> Any:
            ch.broadcast(buf, buf, root)
            return back

        return self._submit(ch, call, tensors, opts.asyncOp)

    def all_gather_single(self, output: torch.Tensor, input: torch.Tensor, opts: Any = None) -> Any:
        if opts is None:
            opts = dist.AllgatherOptions()
        ch = self._cpu if input.is_cpu else self._channel(input)
        if not self._coalescing and input.dtype in NATIVE:
            if self._pending:
                self._flush()
            try:
                ch.allgather(input, output)
            except NcclInvalid:
                pass  # staged below
            else:
                return ch.work([output]) if opts.asyncOp else None
        return self._submit(ch, self._allgather_call(ch, output, input), [output], opts.asyncOp)

    _allgather_base = all_gather_single

    @staticmethod
    def _allgather_call(ch: Any, output: torch.Tensor, input: torch.Tensor) -> Call:
        send, _ = movable(input, written=False)
        recv, back = movable(output, written=True)
        if send.dtype != recv.dtype:  # one side moves bytes
            send, recv = _flat_bytes(send), _flat_bytes(recv)

        def call() -> Any:
            ch.allgather(send, recv)
            return back

        return call

    def all_gather_single_coalesced(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor],
                                    opts: Any = None) -> Any:
        if opts is None:
            opts = dist.AllgatherOptions()
        if not outputs:
            return self._submit(self._cpu, lambda: None, outputs, opts.asyncOp)
        ch = self._channel(inputs[0])
        calls = [self._allgather_call(ch, o, i) for o, i in zip(outputs, inputs, strict=True)]
        return self._submit(ch, _grouped(ch, calls), outputs, opts.asyncOp)

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def allgather(self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any = None) -> Any:
        if opts is None:
            opts = dist.AllgatherOptions()
        t = _one(inputs, "all_gather")
        outs = _one(output_lists, "all_gather")
        ch = self._channel(t)
        n = self.size()
        if len(outs) != n:
            raise ValueError(f"nccl4py: all_gather needs {n} output tensors, one per rank, got {len(outs)}")
        if _same_layout(outs, t):
            send, _ = movable(t, written=False)
            flat = torch.empty(n * send.numel(), dtype=send.dtype, device=t.device)
            k = t.numel()

            def unpack() -> None:
                whole = flat.view(t.dtype) if flat.dtype != t.dtype else flat
                for j, o in enumerate(outs):
                    o.copy_(whole[j * k:(j + 1) * k].view_as(o))

            def call() -> Any:
                ch.allgather(send, flat)
                return unpack
        else:
            call = self._broadcast_each(ch, t, outs)
        return self._submit(ch, call, output_lists, opts.asyncOp)

    def _broadcast_each(self, ch: Any, t: torch.Tensor, outs: list[torch.Tensor]) -> Call:
        """all_gather of tensors of different sizes: a group of broadcasts, rank j's into outs[j]."""
        rank = self.rank()
        staged = [movable(o, written=True) for o in outs]
        mine, _ = staged[rank]
        src, _ = movable(t, written=False)
        calls = [lambda b=b, j=j: ch.broadcast(b, b, j) for j, (b, _) in enumerate(staged)]
        grouped = _grouped(ch, calls)

        def call() -> Any:
            mine.copy_(src.view_as(mine) if src.dtype == mine.dtype else src.view(mine.dtype).view_as(mine))
            grouped()
            return _finish_all([back for _, back in staged])

        return call

    def allgather_coalesced(self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor],
                            opts: Any = None) -> Any:
        if opts is None:
            opts = dist.AllgatherOptions()
        if not inputs:
            return self._submit(self._cpu, lambda: None, output_lists, opts.asyncOp)
        ch = self._channel(inputs[0])
        n = self.size()
        if len(output_lists) != n:
            raise ValueError(f"nccl4py: all_gather_coalesced needs {n} output lists, one per rank, "
                             f"got {len(output_lists)}")
        parts = [_flat_bytes(x.contiguous()) for x in inputs]
        sizes = [p.numel() for p in parts]
        packed = torch.cat(parts) if parts else torch.empty(0, dtype=torch.uint8)
        gathered = torch.empty(n * packed.numel(), dtype=torch.uint8, device=packed.device)

        def unpack() -> None:
            rows = gathered.view(n, -1)
            for r, outs in enumerate(output_lists):
                at = 0
                for o, size in zip(outs, sizes, strict=True):
                    o.copy_(rows[r, at:at + size].view(o.dtype).view_as(o))
                    at += size

        def call() -> Any:
            ch.allgather(packed, gathered)
            return unpack

        return self._submit(ch, call, [o for outs in output_lists for o in outs], opts.asyncOp)

    def gather(self, output_lists: list[list[torch.Tensor]], inputs: list[torch.Tensor], opts: Any = None) -> Any:
        if opts is None:
            opts = dist.GatherOptions()
        t = _one(inputs, "gather")
        ch = self._channel(t)
        root, rank, n = opts.rootRank, self.rank(), self.size()
        outs = output_lists[0] if rank == root else []
        if rank == root and len(outs) != n:
            raise ValueError(f"nccl4py: gather needs {n} output tensors on the root, got {len(outs)}")
        send, _ = movable(t, written=False)
        if rank != root or _same_layout(outs, t):
            flat = torch.empty(n * send.numel(), dtype=send.dtype, device=t.device) if rank == root else None
            k = t.numel()

            def unpack() -> None:
                whole = flat.view(t.dtype) if flat.dtype != t.dtype else flat
                for j, o in enumerate(outs):
                    o.copy_(whole[j * k:(j + 1) * k].view_as(o))

            def native() -> Any:
                ch.gather(send, flat, root)
                return unpack if rank == root else None

            call = self._with_p2p_fallback(native, lambda: self._gather_p2p(ch, send, outs, root))
        else:
            call = self._gather_p2p(ch, send, outs, root)
        return self._submit(ch, call, outs or [t], opts.asyncOp)

    def _gather_p2p(self, ch: Any, send: torch.Tensor, outs: list[torch.Tensor], root: int) -> Call:
        rank = self.rank()
        if rank != root:
            return _grouped(ch, [lambda: ch.send(send, root)])
        staged = [movable(o, written=True) for o in outs]
        calls = [lambda b=b, j=j: ch.recv(b, j) for j, (b, _) in enumerate(staged) if j != rank]
        grouped = _grouped(ch, calls)

        def call() -> Any:
            mine, _ = staged[rank]
            mine.copy_(send.view(mine.dtype).view_as(mine) if send.dtype != mine.dtype else send.view_as(mine))
            grouped()
            return _finish_all([back for _, back in staged])

        return call

    def scatter(self, outputs: list[torch.Tensor], input_lists: list[list[torch.Tensor]], opts: Any = None) -> Any:
        if opts is None:
            opts = dist.ScatterOptions()
        out = _one(outputs, "scatter")
        ch = self._channel(out)
        root, rank, n = opts.rootRank, self.rank(), self.size()
        ins = input_lists[0] if rank == root else []
        if rank == root and len(ins) != n:
            raise ValueError(f"nccl4py: scatter needs {n} input tensors on the root, got {len(ins)}")
        recv, back = movable(out, written=True)
        if rank != root or _same_layout(ins, out):
            flat = torch.cat([movable(x, written=False)[0].reshape(-1) for x in ins]) if rank == root else None

            def native() -> Any:
                ch.scatter(flat, recv, root)
                return back

            call = self._with_p2p_fallback(native, lambda: self._scatter_p2p(ch, ins, recv, back, root))
        else:
            call = self._scatter_p2p(ch, ins, recv, back, root)
        return self._submit(ch, call, outputs, opts.asyncOp)

    def _scatter_p2p(self, ch: Any, ins: list[torch.Tensor], recv: torch.Tensor, back: Any, root: int) -> Call:
        rank = self.rank()
        if rank != root:
            grouped = _grouped(ch, [lambda: ch.recv(recv, root)])
            return lambda: (grouped(), back)[1]
        sends = [movable(x, written=False)[0] for x in ins]
        grouped = _grouped(ch, [lambda b=b, j=j: ch.send(b, j) for j, b in enumerate(sends) if j != rank])

        def call() -> Any:
            mine = sends[rank]
            recv.copy_(mine.view(recv.dtype).view_as(recv) if mine.dtype != recv.dtype else mine.view_as(recv))
            grouped()
            return back

        return call

    @staticmethod
    def _with_p2p_fallback(native: Call, p2p: Callable[[], Call]) -> Call:
        """``native`` (a collective the library may lack: ncclGather/ncclScatter came in NCCL 2.28),
        else the same over grouped sends and receives."""

        def call() -> Any:
            try:
                return native()
            except FunctionNotFoundError:
                return p2p()()

        return call

    def all_to_all_single(self, output: torch.Tensor, input: torch.Tensor, output_split_sizes: list[int],
                          input_split_sizes: list[int], opts: Any = None) -> Any:
        if opts is None:
            opts = dist.AllToAllOptions()
        ch = self._cpu if input.is_cpu else self._channel(input)
        if not output_split_sizes and not input_split_sizes:
            if not self._coalescing and input.dtype in NATIVE:
                if self._pending:
                    self._flush()
                try:
                    ch.alltoall(input, output)
                except NcclInvalid:
                    pass  # staged below
                else:
                    return ch.work([output]) if opts.asyncOp else None
            call = self._alltoall_even(ch, output, input)
        else:
            call = self._alltoall_splits(ch, output, input, output_split_sizes, input_split_sizes)
        return self._submit(ch, call, [output], opts.asyncOp)

    alltoall_base = all_to_all_single

    def _alltoall_even(self, ch: Any, output: torch.Tensor, input: torch.Tensor) -> Call:
        send, _ = movable(input, written=False)
        recv, back = movable(output, written=True)
        if send.dtype != recv.dtype:
            send, recv = _flat_bytes(send), _flat_bytes(recv)
        n = self.size()
        sends = list(send.reshape(-1).chunk(n))
        recvs = list(recv.reshape(-1).chunk(n))
        native_call = lambda: (ch.alltoall(send, recv), back)[1]  # noqa: E731
        return self._with_p2p_fallback(native_call, lambda: self._exchange(ch, sends, recvs, back))

    def _alltoall_splits(self, ch: Any, output: torch.Tensor, input: torch.Tensor, out_splits: list[int],
                         in_splits: list[int]) -> Call:
        """all_to_all_single with split sizes (rows of dimension 0): grouped sends and receives."""
        n = self.size()
        send, _ = movable(input, written=False)
        recv, back = movable(output, written=True)
        if send.dtype != recv.dtype:
            send, recv = _flat_bytes(send), _flat_bytes(recv)
        sends = _split_rows(send, input, in_splits, n, "input")
        recvs = _split_rows(recv, output, out_splits, n, "output")
        return self._exchange(ch, sends, recvs, back)

    def _exchange(self, ch: Any, sends: list[torch.Tensor], recvs: list[torch.Tensor], back: Any) -> Call:
        """sends[j] to rank j, recvs[j] from rank j; this rank's own part is a local copy."""
        rank = self.rank()
        calls: list[Call] = []
        for j in range(self.size()):
            if j == rank:
                continue
            if sends[j].numel():
                calls.append(lambda b=sends[j], j=j: ch.send(b, j))
            if recvs[j].numel():
                calls.append(lambda b=recvs[j], j=j: ch.recv(b, j))
        grouped = _grouped(ch, calls)

        def call() -> Any:
            if recvs[rank].numel() != sends[rank].numel():
                raise ValueError(f"nccl4py: all_to_all: this rank sends itself {sends[rank].numel()} elements but "
                                 f"expects {recvs[rank].numel()}")
            recvs[rank].copy_(sends[rank])
            grouped()
            return back

        return call

    def alltoall(self, outputs: list[torch.Tensor], inputs: list[torch.Tensor], opts: Any = None) -> Any:
        if opts is None:
            opts = dist.AllToAllOptions()
        n = self.size()
        if len(outputs) != n or len(inputs) != n:
            raise ValueError(f"nccl4py: all_to_all needs {n} input and {n} output tensors, got {len(inputs)} "
                             f"and {len(outputs)}")
        ch = self._channel(inputs[0])
        sends = [movable(x, written=False)[0] for x in inputs]
        staged = [movable(o, written=True) for o in outputs]
        recvs = [b for b, _ in staged]
        sends = [s if s.dtype == r.dtype else _flat_bytes(s) for s, r in zip(sends, recvs, strict=True)]
        recvs = [r if r.dtype == s.dtype else _flat_bytes(r) for s, r in zip(sends, recvs, strict=True)]
        sends = [s.reshape(-1) for s in sends]
        recvs = [r.reshape(-1) for r in recvs]
        call = self._exchange(ch, sends, recvs, _finish_all([back for _, back in staged]))
        return self._submit(ch, call, outputs, opts.asyncOp)

    # ---- synchronisation ----

    def barrier(self, opts: Any = None) -> Any:
        """An allreduce of one byte on the CPU communicator; with a GPU communicator, on the GPU
        too, and the CPU waits for it (as ProcessGroupNCCL's barrier does)."""
        if opts is None:
            opts = dist.BarrierOptions()
        if self._pending:
            self._flush()
        token = torch.zeros(1, dtype=torch.uint8)
        self._cpu.allreduce(token, token, NCCL_OP[SUM])
        device = getattr(self, "_device", None)
        if device is not None:
            on_gpu = torch.zeros(1, dtype=torch.uint8, device=device.device)
            device.allreduce(on_gpu, on_gpu, NCCL_OP[SUM])
            torch.cuda.current_stream(device.device).synchronize()
        return self._cpu.work([]) if opts.asyncOp else None


def _split_rows(buf: torch.Tensor, like: torch.Tensor, splits: list[int], n: int, what: str) -> list[torch.Tensor]:
    """Views of the flat ``buf`` holding ``like``'s rows (dimension 0) in parts of ``splits``
    rows each (equal parts when splits is empty)."""
    flat = buf.reshape(-1)
    rows = like.size(0) if like.dim() > 0 else 1
    if not splits:
        if rows % n:
            raise ValueError(f"nccl4py: all_to_all_single: the {what}'s {rows} rows do not split evenly over {n} ranks")
        splits = [rows // n] * n
    if len(splits) != n or sum(splits) != rows:
        raise ValueError(f"nccl4py: all_to_all_single: {what} split sizes {list(splits)} must be {n} row counts adding "
                         f"up to the {what}'s {rows} rows")
    per_row = flat.numel() // rows if rows else 0
    parts, at = [], 0
    for s in splits:
        parts.append(flat[at:at + s * per_row])
        at += s * per_row
    return parts
