"""NCCLError's text is worded for the loaded library: RCCL reports HIP failures with NCCL's
"cuda" wording, which the message turns into HIP; NVIDIA's library keeps it. get_error_string
itself returns the library's text unchanged."""

import pytest

SNIPPET = """
import json
import nccl.bindings.nccl as n
n.get_version()
print(json.dumps({"message": str(n.NCCLError(1, "from the library")), "raw": n.get_error_string(1),
                  "flavour": n.get_library_flavour()}))
"""


@pytest.mark.parametrize("variant, flavour, worded", [
    ("rccl", "rccl", "mini: unhandled HIP error"),
    ("nccl", "nccl", "mini: unhandled cuda error"),
])
def test_error_text_follows_the_flavour(mini_libs, run_py, variant, flavour, worded):
    out = run_py(SNIPPET, {"NCCL_LIBRARY": mini_libs[variant]})
    assert out == {"flavour": flavour, "raw": "mini: unhandled cuda error",
                   "message": f"UnhandledCudaError (1): {worded}\n  library's last error: from the library"}
