"""Reading src/include/abi.h and src/include/nccl_abi.h for tools/gen_surface.py: the rows of the
entry-point table (name, C return type, parameters, version) and the values of the C enums and
constants, parsed from the text (no compiler needed). Small on purpose: both headers are written
in a regular form, and anything this reader does not understand stops the generator."""

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = ROOT / "src" / "include"


class HeaderError(Exception):
    """A header line the reader cannot parse, or a fact the description needs that it lacks."""


@dataclass(frozen=True)
class CParam:
    ctype: str  # as written, with const ("const void *")
    name: str   # the argument name ("sendbuff")

    @property
    def base(self):
        """The type without const qualifiers, pointers written "T *" ("void *")."""
        t = re.sub(r"\bconst\b", "", self.ctype)
        t = re.sub(r"\s+", " ", t).strip()
        t = re.sub(r"\s*\*", " *", t).replace("* *", "**").replace("* *", "**")
        return t

    @property
    def snake(self):
        """The Python parameter name: the argument name in snake_case (peerWinOffset -> peer_win_offset)."""
        return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", self.name).lower()


@dataclass(frozen=True)
class Row:
    name: str
    returns: str
    params: tuple  # CParam
    since: tuple   # (major, minor, patch), or None for an RCCL-only row
    rccl: bool
    not_wrapped: bool


def _balanced(text, start):
    """The text inside the parenthesis opening at text[start] and the index after its close."""
    assert text[start] == "("
    depth, i = 0, start
    while True:
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        i += 1
        if depth == 0:
            return text[start + 1:i - 1], i


def _split_top(text):
    """`text` split at the commas outside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += {"(": 1, ")": -1}.get(ch, 0)
        cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _param(text):
    m = re.fullmatch(r"(.*?)(\w+)\s*(\[\])?", text.strip())
    if not m:
        raise HeaderError(f"abi.h: cannot read the parameter {text!r}")
    ctype = m.group(1).strip() + (" *" if m.group(3) else "")
    return CParam(re.sub(r"\s+", " ", ctype).replace(" *", " *"), m.group(2))


def _rows_of(text, macro):
    """The X(...) rows of `#define macro(X) ...` (continuation lines joined)."""
    m = re.search(r"#define %s\(X\)((?:[^\n]*\\\n)*[^\n]*)" % re.escape(macro), text)
    if not m:
        raise HeaderError(f"abi.h: no {macro}")
    body = m.group(1).replace("\\\n", " ")
    rows = []
    for x in re.finditer(r"\bX\(", body):
        inner, _ = _balanced(body, x.end() - 1)
        rows.append(_split_top(inner))
    return rows, re.findall(r"\b(NCCL_ABI_\w+)\(X\)", body)


def read_abi(path=INCLUDE / "abi.h"):
    """abi.h's rows by name: NCCL_ABI_NCCL (with NCCL_ABI_NOT_WRAPPED) then NCCL_ABI_RCCL."""
    text = path.read_text()
    rows = {}
    not_wrapped = {r[0] for r in _rows_of(text, "NCCL_ABI_NOT_WRAPPED")[0]}
    for macro, rccl in (("NCCL_ABI_NOT_WRAPPED", False), ("NCCL_ABI_NCCL", False), ("NCCL_ABI_RCCL", True)):
        for fields in _rows_of(text, macro)[0]:
            name, ret, params, _args, since = fields
            params = params.strip()[1:-1].strip()
            cparams = () if params in ("", "void") else tuple(_param(p) for p in _split_top(params))
            v = re.fullmatch(r"NCCL_ABI_V\((\d+),\s*(\d+),\s*(\d+)\)", since)
            version = tuple(int(x) for x in v.groups()) if v else ((2, 3, 0) if since == "NCCL_ABI_ALWAYS" else None)
            rows[name] = Row(name, ret.strip(), cparams, version, rccl, name in not_wrapped)
    return rows


def _value(expr, known):
    """The integer value of an enumerator or #define expression of nccl_abi.h."""
    e = expr.strip()
    if e in known:
        return known[e]
    e = {"INT_MIN": str(-(1 << 31)), "INT_MAX": str((1 << 31) - 1)}.get(e, e)
    m = re.fullmatch(r"(-?)(0[xX][0-9a-fA-F]+|\d+)[uUlL]*", e)
    if not m:
        raise HeaderError(f"nccl_abi.h: cannot evaluate {expr!r}")
    return int(m.group(1) + m.group(2), 0)


def read_enums(path=INCLUDE / "nccl_abi.h"):
    """{C enum type: [(member, value), ...]} in declaration order, and {#define name: (value, text)}."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(), flags=re.S)
    enums, known = {}, {}
    for m in re.finditer(r"typedef enum\s*\{(.*?)\}\s*(\w+)\s*;", text, re.S):
        members, nxt = [], 0
        for item in [i.strip() for i in m.group(1).split(",") if i.strip()]:
            name, _, expr = item.partition("=")
            name = name.strip()
            value = _value(expr, known) if expr.strip() else nxt
            members.append((name, value))
            known[name] = value
            nxt = value + 1
        enums[m.group(2)] = members
    defines = {}
    for m in re.finditer(r"^#define (NCCL_\w+) (\S+)\s*$", text, re.M):
        try:
            defines[m.group(1)] = (_value(m.group(2), known), m.group(2))
        except HeaderError:
            continue  # not an integer constant (NULL, a float, a macro)
    return enums, defines
