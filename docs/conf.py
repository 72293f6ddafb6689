"""Sphinx configuration of the nccl4py reference (build: python -m sphinx -W -b html docs docs/_build/html).

The reference is built from the *installed* package: autodoc imports nccl, so what it shows is
what users get (signatures from the C text signatures, docstrings from the C tables and the Python
sources). docs/_ext/apiref.py lays out the API pages and fails the build (a warning, made an error
by -W) when a public name is left out or has no docstring.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "_ext"))
# autodoc tests the truth of module attributes, and nccl.core.params' truth is its parameter count,
# which loads the library: the host backend, chosen silently, on any machine.
os.environ["NCCL_LIBRARY"] = "host"

project = "nccl4py"
author = "nccl4py developers"
copyright = "nccl4py developers"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "apiref",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build"]
myst_heading_anchors = 4

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_default_options = {"show-inheritance": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "alabaster"
html_title = "nccl4py"
html_static_path = []
