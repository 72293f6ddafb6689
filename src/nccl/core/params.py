"""NCCL's parameters (nccl4py 0.4.1's ``nccl.core.params`` and ``dump_params``): a read-only
mapping from key (``"NCCL_DEBUG"``...) to the library's current text value, through
ncclParamGetParameter / ncclParamGetAllParameterKeys (NCCL 2.30.4; FunctionNotFoundError on older
libraries). The library is loaded on first use, not at import.

The reads are nccl.bindings.nccl's ``param_get_parameter``, ``param_get_all_keys`` and
``param_dump_all`` (src/ext/bindings/bindings_params.c), the package's one reader of the registry; this
module only gives them a mapping's shape."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

__all__ = ["params", "dump_params"]


class _NcclParams(Mapping[str, str]):
    """``params[key]`` is the value as text (KeyError for a key the library does not know);
    ``params.get(key)``, ``key in params``, ``list(params)`` and ``len(params)`` as for any
    mapping. The keys are asked of the library each time (they do not change while it is loaded)."""

    def __getitem__(self, key: str) -> str:
        from nccl import _ext
        from nccl._errors import NCCLInvalidArgument

        if not isinstance(key, str):
            raise TypeError(f"params key must be str, got {type(key).__name__}")
        try:
            return _ext.param_get_parameter(key)
        except NCCLInvalidArgument:  # ncclParamGetParameter's answer for a key it does not know
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[str]:
        from nccl import _ext

        return iter(_ext.param_get_all_keys())

    def __len__(self) -> int:
        from nccl import _ext

        return len(_ext.param_get_all_keys())

    def __repr__(self) -> str:
        return "<nccl.core.params: NCCL parameters of the loaded library>"


params: Mapping[str, str] = _NcclParams()


def dump_params() -> None:
    """The library prints every parameter and its value to its standard output (ncclParamDumpAll)."""
    from nccl import _ext

    _ext.param_dump_all()
