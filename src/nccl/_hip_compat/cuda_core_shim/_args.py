"""The integer arguments of the shim's classes, converted once with cuda.core's messages."""

import operator


def index_arg(value, what, expected="an int"):
    """``operator.index(value)`` for an int-like value; bool and non-integers raise
    ``TypeError("<what> must be an int, got <type>")``."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{what} must be {expected}, got {type(value).__name__}")
    return operator.index(value)


def non_negative_arg(value, what):
    """index_arg, and ``ValueError("<what> must be non-negative, got <value>")`` below 0 (an
    address or a stream handle: 0 is the null pointer or the default stream)."""
    value = index_arg(value, what)
    if value < 0:
        raise ValueError(f"{what} must be non-negative, got {value}")
    return value
