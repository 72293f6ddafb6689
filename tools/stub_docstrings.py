"""Writes the runtime docstrings into the shipped .pyi stubs, where editors read them.

The C types and functions carry their docstrings in the C method tables (and nccl.core.cuda in
its .py file); a stub beside them would otherwise show none. This copies each one in, so the C
text stays the one source: ``python tools/stub_docstrings.py`` rewrites the stubs of the
installed package's source tree, ``--check`` only reports the stubs whose docstrings differ
(tests/core/test_typing.py runs it against the installed package).

Every module-level class and function of a stub, and every method and property of its classes,
gets the docstring of the runtime object of that name; dunder methods and names the runtime
lacks keep none.
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="report stubs that differ; write nothing")
    parser.add_argument("--root", type=pathlib.Path, default=pathlib.Path(__file__).resolve().parents[1] / "src" / "nccl",
                        help="the package directory whose stubs are read (default: src/nccl)")
    args = parser.parse_args(argv)
    stale = []
    for module, rel in STUBS.items():
        path = args.root / rel
        text = path.read_text()
        new = render(text, module)
        if new != text:
            stale.append(str(path))
            if not args.check:
                path.write_text(new)
    if args.check and stale:
        print("stubs whose docstrings differ from the runtime's (python tools/stub_docstrings.py):",
              *stale, sep="\n  ")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
