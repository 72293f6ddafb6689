"""Loader exceptions, at the import path upstream and the RCCL fork use."""

from nccl._errors import FunctionNotFoundError, HostBackendWarning, NotSupportedError

__all__ = ["FunctionNotFoundError", "NotSupportedError", "HostBackendWarning"]
