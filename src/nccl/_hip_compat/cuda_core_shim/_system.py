"""``cuda.core.system``: only the device count."""

from . import _runtime

__all__ = ["get_num_devices"]


def get_num_devices():
    """The number of HIP devices (0 when the runtime finds no GPU). Loads the runtime."""
    return _runtime.device_count()
