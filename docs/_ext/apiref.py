"""The API reference's layout directive and its completeness check.

``.. apiref:: MODULE`` documents public names of MODULE with autodoc, choosing the directive by
what each object is; the names come from one of

- ``:names:`` a space-separated list (the page decides the order and grouping),
- ``:match:`` a regular expression over the module's public names,
- ``:rest:`` every public name of MODULE that no earlier ``apiref`` on the same page took.

The module's own public list (``__all__``, or the names without a leading underscore) is the one
source of what must be documented: when every page has been read, a public name of a checked
module that no ``apiref`` took is reported, and so is a documented callable without a docstring.
Both are warnings, which ``-W`` turns into a failed build (docs/developing.md#documentation).
"""

import enum
import importlib
import inspect
import re
import types

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

# The modules whose every public name the reference must show.
CHECKED_MODULES = (
    "nccl",
    "nccl.core",
    "nccl.bindings.nccl",
    "nccl.bindings.rocm_extensions",
    "nccl._hip_compat.cuda_core_shim",
)


def public_names(modname):
    mod = importlib.import_module(modname)
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in vars(mod) if not n.startswith("_")]
    return list(names)


def _directive_for(modname, name, obj):
    """The autodoc lines for one object."""
    target = f"{modname}.{name}"
    if isinstance(obj, types.ModuleType):
        return [f".. automodule:: {obj.__name__}", "   :members:", "   :no-index:", ""]
    if isinstance(obj, type):
        if issubclass(obj, BaseException):
            return [f".. autoexception:: {target}", "   :members:", ""]
        if issubclass(obj, enum.Enum):
            return [f".. autoclass:: {target}", "   :members:", "   :undoc-members:", ""]
        return [f".. autoclass:: {target}", "   :members:", "   :undoc-members:", ""]
    if callable(obj) and (inspect.isroutine(obj) or hasattr(obj, "__text_signature__")):
        return [f".. autofunction:: {target}", ""]
    # A value is shown where it is a plain constant; an object's repr may do work (nccl.core.params
    # reads the library's parameters, loading it) or say nothing a reader needs.
    if isinstance(obj, (int, float, str, bytes, bool, type(None))):
        return [f".. autodata:: {target}", ""]
    return [f".. autodata:: {target}", "   :no-value:", ""]


def _home(obj):
    """The name autodoc files a class or function under, or None for data and modules."""
    if isinstance(obj, types.ModuleType) or not hasattr(obj, "__qualname__"):
        return None
    return f"{getattr(obj, '__module__', None)}.{obj.__qualname__}"


class ApiRef(SphinxDirective):
    required_arguments = 1
    has_content = False
    option_spec = {
        "names": directives.unchanged,
        "match": directives.unchanged,
        "rest": directives.flag,
    }

    def run(self):
        modname = self.arguments[0]
        mod = importlib.import_module(modname)
        public = public_names(modname)
        taken_here = self.env.temp_data.setdefault("apiref_taken", {}).setdefault(modname, set())
        if "names" in self.options:
            names = self.options["names"].split()
            unknown = [n for n in names if n not in public]
            if unknown:
                logger.warning("apiref: %s has no public name(s) %s", modname, ", ".join(unknown),
                               location=self.get_location())
                names = [n for n in names if n in public]
        elif "match" in self.options:
            pattern = re.compile(self.options["match"])
            names = sorted(n for n in public if pattern.search(n) and n not in taken_here)
        elif "rest" in self.options:
            names = sorted(n for n in public if n not in taken_here)
        else:
            logger.warning("apiref: give :names:, :match: or :rest:", location=self.get_location())
            return []
        taken_here.update(names)
        data = self.env.domaindata.setdefault("apiref", {})
        documented = data.setdefault("documented", {})
        described = data.setdefault("described", {})
        lines = []
        for name in names:
            documented.setdefault((modname, name), self.env.docname)
            obj = getattr(mod, name)
            block = _directive_for(modname, name, obj)
            # One object exported under two names (nccl.LibraryInfo is nccl.core.LibraryInfo) is
            # described in full once; the other entry shows it without a second index target.
            home = _home(obj)
            if home is not None and described.setdefault(home, (modname, name)) != (modname, name):
                block.insert(1, "   :no-index:")
            lines += block
        node = nodes.container()
        self.state.nested_parse(StringList(lines, source=self.env.docname), self.content_offset, node)
        return node.children


def _forget_doc(app, env, docname):
    documented = env.domaindata.get("apiref", {}).get("documented", {})
    for key in [k for k, d in documented.items() if d == docname]:
        del documented[key]
    described = env.domaindata.get("apiref", {}).get("described", {})
    for key in [k for k, entry in described.items() if entry not in documented]:
        del described[key]


def _merge(app, env, docnames, other):
    for table in ("documented", "described"):
        env.domaindata.setdefault("apiref", {}).setdefault(table, {}).update(
            other.domaindata.get("apiref", {}).get(table, {})
        )


def _check_complete(app, env):
    documented = env.domaindata.get("apiref", {}).get("documented", {})
    for modname in CHECKED_MODULES:
        missing = [n for n in public_names(modname) if (modname, n) not in documented]
        for name in missing:
            logger.warning("apiref: public name %s.%s is in no page of the reference", modname, name)


_CHECKED_KINDS = {"function", "method", "class", "exception", "property", "classmethod", "staticmethod"}


def _require_docstring(app, what, name, obj, options, lines):
    if what in _CHECKED_KINDS and not any(line.strip() for line in lines):
        logger.warning("apiref: %s %s has no docstring", what, name)
    # A constant's "docstring" is its type's (a numpy dtype's is numpy.dtype's page): not about it.
    if what == "data" and not isinstance(obj, type) and getattr(obj, "__doc__", None) == type(obj).__doc__:
        lines[:] = []


def setup(app):
    app.add_directive("apiref", ApiRef)
    app.connect("env-purge-doc", _forget_doc)
    app.connect("env-merge-info", _merge)
    app.connect("env-check-consistency", _check_complete)
    app.connect("autodoc-process-docstring", _require_docstring)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
