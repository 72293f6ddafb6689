"""Loader introspection (upstream's feature-detection idiom):
``_inspect_function_pointer("__ncclCommShrink") != 0``. Every function here loads the library."""

from nccl import _ext

__all__ = ["_inspect_function_pointers", "_inspect_function_pointer", "_inspect_loaded_library_path"]


def _inspect_function_pointers():
    """{"__ncclXxx": address or 0} for every NCCL entry point of the ABI table."""
    return _ext._inspect_function_pointers()


def _inspect_function_pointer(name):
    """The address of one entry point; KeyError for a name that is not in the ABI table."""
    return _ext._inspect_function_pointers()[name]


def _inspect_loaded_library_path():
    """The path every symbol was resolved from, or None."""
    return _ext.get_library_path()
