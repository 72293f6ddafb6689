"""Writes the shipped .pyi stubs from the runtime (the installed package), where editors and type checkers read them.

The C types and functions carry their names, parameters (text signatures) and docstrings in the
C tables, and the struct wrappers' fields come from the layout tables (``_ext._struct_layouts()``);
a stub beside them would otherwise repeat all of it by hand. This tool writes it from the runtime
and, for the bindings' parameter and return types, from the description of the NCCL surface
(tools/nccl_surface.py), which the bindings themselves are generated from:

* nccl.bindings.nccl and nccl.bindings.rocm_extensions: everything below the ``GENERATED`` marker
  line of their stub (every binding function's ``def``, the creation functions' ``@overload``
  pairs, the struct wrapper classes with their fields, the numpy dtypes, the re-exported enums
  and errors, the 0.3.1 aliases). Above the marker is the stub's hand-written head: the handle
  classes, the type aliases and the struct wrappers' common base. Each parameter's type follows its
  converter kind in the description, each return type its result kind, and the @overload pairs
  its second argument-count form.
* every stub of ``STUBS``: each module-level class and function, and every method and property
  of its classes, gets the docstring of the runtime object of that name; dunder methods and names
  the runtime lacks keep none.

``python tools/gen_stubs.py`` rewrites the stubs of the source tree (src/nccl) from the
installed package; ``--check`` only reports the stubs that differ from what it would write
(tests/core/test_typing.py runs it against the installed package).
"""

import argparse
import ast
import importlib
import inspect
import pathlib
import sys

# module -> its stub, relative to the package root (src/nccl or the installed nccl)
STUBS = {
    "nccl.core.communicator": "core/communicator.pyi",
    "nccl.core.resources": "core/resources.pyi",
    "nccl.core.buffer": "core/buffer.pyi",
    "nccl.core.cuda": "core/cuda.pyi",
    "nccl.bindings.nccl": "bindings/nccl.pyi",
    "nccl.bindings.rocm_extensions": "bindings/rocm_extensions.pyi",
}

# The line that ends a generated stub's hand-written head; the rest is written by this tool.
GENERATED = "# ---- Generated below by tools/gen_stubs.py from the runtime: do not edit below this line. ----"

COMMAND = "python tools/gen_stubs.py"

# The bindings' parameter and return types come from the description of the NCCL surface
# (tools/nccl_surface.py: a converter kind per parameter, a result kind per function).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import nccl_surface  # noqa: E402
import surface_headers  # noqa: E402

WIDTH = 120  # the repository's line length


class StubError(Exception):
    """A fact the generator needs is missing from its tables (the message says which)."""


# ---- Generating the bindings' stubs ----

def _wrap(head, items, tail):
    """``head + ", ".join(items) + tail``, broken after commas to stay within WIDTH, continuation
    lines aligned under the first item."""
    pad = " " * len(head)
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + (", " if i < len(items) - 1 else tail)
        if len((line + piece).rstrip()) > WIDTH and line not in (head, pad):
            lines.append(line.rstrip())
            line = pad
        line += piece
    if not items:
        line += tail
    lines.append(line)
    return "\n".join(lines)


def _union(name, members):
    """``name = (A | B | ...)``, the members on indented lines within WIDTH."""
    lines, line = [], "   "
    for i, member in enumerate(members):
        piece = f" {member}" + (" |" if i < len(members) - 1 else "")
        if len(line + piece) > WIDTH and line.strip():
            lines.append(line)
            line = "   "
        line += piece
    lines.append(line)
    return f"{name} = (\n" + "\n".join(lines) + "\n)"


def _def(func, params, returns):
    """The ``def`` line(s) of ``func`` with ``params`` ((name, type) pairs) and a ``...`` body."""
    return _wrap(f"def {func}(", [f"{name}: {kind}" for name, kind in params], f") -> {returns}: ...")


def _typing(name, rows):
    """(params, return type, overload or None) of a function of nccl.bindings from the description:
    params are (name, type) pairs of its text-signature form; the overload is (params, return type)
    of its other argument-count form."""
    if name in nccl_surface.MODULE_FUNCTIONS:
        params, returns = nccl_surface.MODULE_FUNCTIONS[name]
        return list(params), returns, None
    b = next((b for b in nccl_surface.BINDINGS if b.name == name), None)
    if b is None:
        raise StubError(f"{name}: not in tools/nccl_surface.py's BINDINGS or MODULE_FUNCTIONS")
    row = rows[b.entry]
    params = [(p.snake, k.pytype) for p, k in zip(row.params, b.params) if k.python]
    returns = b.result.pytype or nccl_surface.TYPES_OF_VALUES[row.returns]
    if b.form == "short":
        return params, returns, ([pt for pt in params if pt[0] != b.form_param], b.form_returns)
    if b.form == "02":
        return params, returns, (params + [(b.form_param, "_Address")], b.form_returns)
    return params, returns, None


def _function(module, name):
    """The stub of one binding function: its def, or its @overload pair (the short form first)."""
    params, returns, other = _typing(name, surface_headers.read_abi())
    if other is None:
        return _def(name, params, returns)
    forms = sorted([(params, returns), other], key=lambda f: len(f[0]))
    return "\n".join(x for f in forms for x in ("@overload", _def(name, *f)))


def _reexports(module, source, names):
    """``from source import (name as name, ...)`` for the names of ``module`` that are source's."""
    src = importlib.import_module(source)
    mine = sorted(n for n in names if n in vars(src) and getattr(src, n) is getattr(module, n))
    lines = [f"from {source} import ("] + [f"    {n} as {n}," for n in mine] + [")"]
    return "\n".join(lines), set(mine)


def _struct_class(module, name):
    """A struct wrapper class: its fields (from the layout table) typed as a fresh instance's values."""
    cls = getattr(module, name)
    sample = cls()
    lines = [] if cls.__flags__ & (1 << 10) else ["@final"]  # Py_TPFLAGS_BASETYPE
    lines.append(f"class {name}(_StructWrapper):")
    for field, *_ in module._ext._struct_layouts()[name][2]:
        kind = type(getattr(sample, field))
        lines.append(f"    {field}: {kind.__name__}")
    return "\n".join(lines)


def _declared(source):
    """The names a stub's top level declares."""
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname for a in node.names if a.asname)
    return names


def _nccl_body(module, head):
    layouts = module._ext._struct_layouts()
    structs = sorted(layouts)
    public = set(module.__all__)
    enums, enum_names = _reexports(module, "nccl._enums", public)
    errors, error_names = _reexports(module, "nccl._errors", public - enum_names)
    covered = _declared(head) | enum_names | error_names | set(structs) | set(module._FUNCTIONS)
    # The 0.3.1 aliases: public names bound to an object that is declared under its own __name__.
    aliases = sorted(n for n in public - covered
                     if getattr(getattr(module, n), "__name__", n) in covered and
                     getattr(module, getattr(module, n).__name__) is getattr(module, n))
    parts = [
        "# Enums and constants: the runtime module itself (nccl._enums, plain typed Python), so that\n"
        "# their members and values have one source.\n" + enums,
        "# Errors (nccl._errors)\n" + errors,
        "# The numpy structured dtype of each struct wrapper\n" +
        "\n".join(f"{layouts[s][0]}: numpy.dtype[numpy.void]" for s in sorted(layouts, key=lambda s: layouts[s][0])),
        "# Struct wrappers: attribute access to one C struct, in memory of their own or at an address\n"
        "# (fields from the layout tables, src/ext/structs/struct_layouts.c).",
        *(_struct_class(module, s) for s in structs),
        "# Any struct wrapper, passed where an address is expected (it converts with __index__).\n" +
        _union("_Struct", structs),
        "# 0.3.1's spellings of renamed names (the enums' come with the enums above).\n" +
        "\n".join(f"{a} = {getattr(module, a).__name__}" for a in aliases),
        "# Functions (types from tools/nccl_surface.py; @overload pairs: the two argument-count forms)\n" +
        "\n".join(_function(module, f) for f in sorted(module._FUNCTIONS)),
    ]
    missing = sorted(public - covered - set(aliases) - {layouts[s][0] for s in structs})
    if missing:
        raise StubError(f"nccl.bindings.nccl: {', '.join(missing)} declared nowhere; declare them in the "
                        f"stub's hand-written head or teach tools/gen_stubs.py to generate them")
    return "\n\n".join(parts)


def _rocm_body(module, head):
    names = list(module._ext._RCCL_BINDINGS)
    listed = ", ".join(f'"{n}"' for n in names)
    return "\n".join(_function(module, f) for f in names) + f"\n\n__all__ = [{listed}]"


BODIES = {"nccl.bindings.nccl": _nccl_body, "nccl.bindings.rocm_extensions": _rocm_body}


# The Communicator stub's collective methods, written from the description between these lines.
METHODS_BEGIN = "    # ---- Generated by tools/gen_stubs.py from tools/nccl_surface.py's METHODS: do not edit down to the end. ----"
METHODS_END = "    # ---- End of the generated collective methods. ----"


def _method_def(m):
    """The stub def of a Communicator collective method: its parameters typed by what the
    collective's descriptor says of them."""
    c = next(c for c in nccl_surface.COLLECTIVES if c.kind == m.collective)
    types = {"sendbuf": "NcclBufferSpec" + (" | None" if c.rooted == "send" else ""),
             "recvbuf": "NcclBufferSpec" + (" | None" if c.rooted == "recv" else ""),
             "op": "_Op", "root": "int | None" if c.unrooted else "int", "stream": "NcclStreamSpec | None",
             "config": "NCCLCollConfig | None"}
    items = ["self"]
    for p in m.params:
        name, _, default = p.partition("=")
        items.append(p if p == "*" else f"{name}: {types[name]}" + (f" = {default}" if default else ""))
    return _wrap(f"    def {m.name}(", items, ") -> None: ...")


def _communicator_methods(source):
    """The Communicator stub with its collective methods rewritten from the description."""
    if METHODS_BEGIN not in source or METHODS_END not in source:
        raise StubError(f"nccl.core.communicator's stub lacks the lines {METHODS_BEGIN!r} and {METHODS_END!r}")
    head, rest = source.split(METHODS_BEGIN + "\n", 1)
    _, tail = rest.split(METHODS_END, 1)
    defs = "\n".join(_method_def(m) for m in nccl_surface.METHODS if m.collective)
    return f"{head}{METHODS_BEGIN}\n{defs}\n{METHODS_END}{tail}"


def generate(source, module_name):
    """The stub ``source`` of ``module_name`` with its generated part rewritten from the runtime."""
    if module_name == "nccl.core.communicator":
        return _communicator_methods(source)
    if module_name not in BODIES:
        return source
    if GENERATED not in source:
        raise StubError(f"{module_name}'s stub lacks the line {GENERATED!r}")
    head = source[: source.index(GENERATED)] + GENERATED + "\n"
    return head + "\n" + BODIES[module_name](importlib.import_module(module_name), head) + "\n"


# ---- Docstrings ----

def _runtime_doc(owner, name):
    """The docstring of ``owner.name`` as its own (not inherited from object/type), or None."""
    if name.startswith("__") and name.endswith("__"):
        return None
    if inspect.isclass(owner):
        for klass in inspect.getmro(owner):
            if name in vars(klass):
                obj = vars(klass)[name]
                break
        else:
            return None
    else:
        obj = getattr(owner, name, None)
        if obj is None:
            return None
    if isinstance(obj, (classmethod, staticmethod)):
        obj = obj.__func__
    doc = getattr(obj, "__doc__", None)
    if not isinstance(doc, str) or not doc.strip():
        return None
    if inspect.isclass(obj) and doc == (getattr(obj.__mro__[1], "__doc__", None) if len(obj.__mro__) > 1 else None):
        return None
    return inspect.cleandoc(doc)


def _literal(doc, indent):
    """``doc`` as a triple-quoted string literal indented by ``indent``."""
    text = doc.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    lines = text.splitlines()
    if text.endswith('"'):
        lines[-1] += " "
    body = ("\n" + indent).join(lines) if len(lines) == 1 else \
        ("\n".join([lines[0]] + [(indent + line) if line else "" for line in lines[1:]]) + "\n" + indent)
    return f'{indent}"""{body}"""'


def _strip(source):
    """The stub without docstrings: a def whose body was only its docstring gets ``...`` back."""
    tree = ast.parse(source)
    lines = source.splitlines()
    drop, ellipsis_after = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.body and \
                isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) and \
                isinstance(node.body[0].value.value, str):
            doc = node.body[0]
            drop.update(range(doc.lineno - 1, doc.end_lineno))
            if len(node.body) == 1:
                ellipsis_after.add(doc.lineno - 2)
    out = []
    for i, line in enumerate(lines):
        if i in drop:
            continue
        out.append(line + " ..." if i in ellipsis_after else line)
    return "\n".join(out) + "\n"


def render(source, module):
    """The stub ``source`` of ``module`` with the runtime docstrings written in."""
    source = _strip(source)
    tree = ast.parse(source)
    lines = source.splitlines()
    inserts = {}  # line index -> (replace the trailing "...", literal)

    def visit(body, owner, indent):
        for node in body:
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                continue
            doc = _runtime_doc(owner, node.name) if owner is not None else None
            if isinstance(node, ast.ClassDef):
                if doc is not None:
                    inserts[_header_last(lines, node)] = (False, _literal(doc, indent + "    "))
                visit(node.body, getattr(owner, node.name, None) if owner is not None else None, indent + "    ")
            elif doc is not None and len(node.body) == 1 and isinstance(node.body[0], ast.Expr) and \
                    node.body[0].value.value is Ellipsis:  # "def f(...) -> T: ..."
                inserts[node.body[0].lineno - 1] = (True, _literal(doc, indent + "    "))

    visit(tree.body, importlib.import_module(module), "")
    out = []
    for i, line in enumerate(lines):
        if i in inserts:
            replace, literal = inserts[i]
            if replace:
                line = line[: line.rstrip().rfind("...")].rstrip()
            out.append(line)
            out.append(literal)
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def _header_last(lines, node):
    """Index of the line that ends a class header (its ``:``)."""
    i = node.lineno - 1
    while not lines[i].split("#", 1)[0].rstrip().endswith(":"):
        i += 1
    return i


def stub(source, module):
    """What this tool writes for the stub ``source`` of ``module``."""
    return render(generate(source, module), module)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stubs that differ; write nothing")
    parser.add_argument("--root", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parents[1] / "src" / "nccl",
                        help="the package directory whose stubs are read (default: src/nccl)")
    args = parser.parse_args(argv)
    stale = []
    for module, rel in STUBS.items():
        path = args.root / rel
        text = path.read_text()
        try:
            new = stub(text, module)
        except StubError as e:
            print(f"{path}: {e}", file=sys.stderr)
            return 2
        if new != text:
            stale.append(str(path))
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print(f"stubs that differ from what the runtime gives (regenerate with `{COMMAND}`, the package installed):",
              *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
