"""Communicator-owned resources (API.md section 5.10). The classes are implemented in C and are
created by Communicator methods only; ``close()`` releases them, as do the communicator's
``destroy()``, ``abort()`` and ``close_all_resources()``."""

from nccl._ext import CommResource, RegisteredBufferHandle, RegisteredWindowHandle, CustomRedOp  # implemented in C


__all__ = ["CommResource", "RegisteredBufferHandle", "RegisteredWindowHandle", "CustomRedOp",
           "DevCommResource"]

_DEV_COMM_MESSAGE = ("device communicators (ncclDevCommCreate) are not supported: the device-side API "
                     "is out of scope for nccl4py (API.md section 1.1), so there is no DevComm wrapper")


class DevCommResource:
    """A device communicator (ncclDevComm_t) owned by a Communicator.

    Not available in this package: the device-side API, and with it the ``DevComm`` wrapper this
    resource would hold, is out of scope. The class exists so that code naming it (type checks,
    ``except``-free imports) keeps working; it cannot be instantiated, and
    ``Communicator.create_dev_comm`` raises NotImplementedError.
    """

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        raise NotImplementedError(_DEV_COMM_MESSAGE)
