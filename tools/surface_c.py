"""The C that tools/gen_surface.py writes from the description (tools/nccl_surface.py): the binding
wrappers and their method tables, the collective kinds of nccl._ext and the shared tables of
src/include. Each function returns a file's text; gen_surface.py adds the generated-file header
and writes or checks it."""

import nccl_surface as S

# ---- helpers ----


def c_string(text):
    """A C string literal of `text`, split after each newline (one source line per text line; a
    text signature's "--" and blank line stay on its line)."""
    pieces = []
    lines = text.splitlines(keepends=True)
    if len(lines) >= 3 and lines[1] == "--\n" and lines[2] == "\n":
        lines = ["".join(lines[:3])] + lines[3:]
    for line in lines:
        lit = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        pieces.append(f'"{lit}"')
    return "\n".join(pieces) if pieces else '""'


def wrap_call(head, items, tail, indent, width=120):
    """`head(item, item, ...)tail`, continued under the first item within `width`."""
    line, lines = indent + head, []
    pad = " " * len(line)
    for i, item in enumerate(items):
        piece = item + (", " if i < len(items) - 1 else tail)
        if len((line + piece).rstrip()) > width and line.strip() not in (head.strip(), ""):
            lines.append(line.rstrip())
            line = pad
        line += piece
    if not items:
        line += tail
    lines.append(line)
    return "\n".join(lines)


def or_chain(conditions, indent, width=120):
    """`if (a < 0 || b < 0 ...)` split over lines."""
    out, line = [], indent + "if ("
    for i, cond in enumerate(conditions):
        piece = cond + (" ||" if i < len(conditions) - 1 else ")")
        if len(line + piece) > width and line.strip() != "if (":
            out.append(line.rstrip())
            line = indent + "    "
        line += piece + " "
    out.append(line.rstrip())
    return "\n".join(out)


# ---- the bindings ----

OUT_INIT = {"void **": ("void *", "NULL"), "int *": ("int", "0"), "ncclResult_t *": ("ncclResult_t", "ncclSuccess"),
            "uint64_t *": ("uint64_t", "0"), "ncclRedOp_t *": ("ncclRedOp_t", "ncclSum"),
            "ncclCftLeId_t *": ("ncclCftLeId_t", "0"), "size_t *": ("size_t", "0")}
# How one out-parameter's value becomes a Python object.
OUT_TO_PY = {"void *": "PyLong_FromVoidPtr({v})", "int": "PyLong_FromLong({v})",
             "ncclResult_t": "PyLong_FromLong((long){v})", "uint64_t": "PyLong_FromUnsignedLongLong({v})",
             "ncclRedOp_t": "PyLong_FromLong((long){v})", "ncclCftLeId_t": "PyLong_FromUnsignedLong((unsigned long){v})",
             "size_t": "PyLong_FromSize_t({v})"}
# Where the flight recorder finds a call's fields: abi.h's argument names.
TRACE_ROLES = {"sendbuff": ("send",), "localbuff": ("send",), "recvbuff": ("recv",), "buff": ("send", "recv"),
               "count": ("count",), "sendcount": ("count",), "recvcount": ("count",), "datatype": ("dtype",),
               "op": ("redop",), "root": ("root",), "peer": ("peer",), "stream": ("stream",)}
SIMPLE = {"size": ("size_t", "nx_arg_size"), "int": ("int", "nx_arg_int"), "uint": ("unsigned int", "nx_arg_uint"),
          "dtype": ("ncclDataType_t", "nx_arg_dtype"), "redop": ("ncclRedOp_t", "nx_arg_redop"),
          "stream": ("cudaStream_t", "nx_arg_stream"), "comm": ("ncclComm_t", "nx_arg_comm"),
          "comm_or_null": ("ncclComm_t", "nx_arg_nullable_comm"), "window": ("ncclWindow_t", "nx_arg_window")}


def fn_name(b):
    return f"nx_binding_{b.name}"


def py_params(b, row):
    """The Python parameters of b's text signature: (snake name, Kind) of the non-out C parameters."""
    return [(p.snake, k) for p, k in zip(row.params, b.params) if k.python]


def signature_forms(b, row):
    """[(suffix, [names])]: the text signature's form first, then the other form if any."""
    names = [n for n, _ in py_params(b, row)]
    if b.form == "short":
        return [("", names), ("_short", [n for n in names if n != b.form_param])]
    if b.form == "02":
        return [("", names), ("_02", names + [b.form_param])]
    return [("", names)]


def uses_noargs(b, row):
    return not py_params(b, row) and not b.form


def binding_sig_and_doc(b, row, static):
    """The nx_sig object(s) (none for a function without parameters) and the docstring of binding b."""
    out = []
    storage = "static const" if static else "const"
    for suffix, names in ([] if uses_noargs(b, row) else signature_forms(b, row)):
        if names:
            out.append(wrap_call(f"{storage} nx_sig {fn_name(b)}_sig{suffix} = NX_SIGNATURE(",
                                 [f'"{b.name}"'] + [f'"{n}"' for n in names], ");", ""))
        else:
            out.append(f"{storage} nx_sig {fn_name(b)}_sig{suffix} = {{\"{b.name}\", (const char *const[]){{NULL}}, 0}};")
    text = f"{b.name}({', '.join(signature_forms(b, row)[0][1])})\n--\n\n{b.doc}"
    out.append(f"PyDoc_STRVAR({fn_name(b)}__doc__,\n{c_string(text)});")
    return "\n".join(out)


def trace_statement(op_id, roles, indent, var="tc"):
    """`nx_trace_call tc = ...;`: the recorder's entry of call `op_id` whose fields are in the C
    expressions of `roles` (send, recv, count, dtype, redop, root, peer, stream)."""
    op = f"NX_T_{op_id}"
    if "count" in roles and "dtype" in roles and "stream" in roles:
        flags = " | ".join(f for f, r in (("NX_TF_REDOP", "redop"), ("NX_TF_ROOT", "root"), ("NX_TF_PEER", "peer"))
                           if r in roles) or "0"
        args = [op, flags, roles.get("send", "NULL"), roles.get("recv", "NULL"), roles["count"], roles["dtype"],
                roles.get("redop", "0"), roles.get("root", roles.get("peer", "-1")), roles["stream"]]
        return wrap_call(f"nx_trace_call {var} = nx_trace_coll(", args, ");", indent)
    fields, flags = [f".op = {op}"], []
    if "peer" in roles:
        flags.append("NX_TF_PEER")
        fields.append(f".rank = {roles['peer']}")
    if "stream" in roles:
        flags.append("NX_TF_STREAM")
        fields.append(f".stream = (uintptr_t){roles['stream']}")
    if flags:
        fields.insert(1, f".flags = {' | '.join(flags)}")
    return wrap_call(f"nx_trace_call {var} = {{", fields, "};", indent)


def binding_trace_roles(row):
    """The recorder's fields of a binding's call: its C arguments by their abi.h names."""
    roles = {}
    for p in row.params:
        for role in TRACE_ROLES.get(p.name, ()):
            roles[role] = p.name
    return roles


def binding_wrapper(b, row, enums):
    """The generated wrapper of a regular binding: intake (arity, keywords, the library and the
    entry point), each argument in parameter order, the one call with the GIL released (and its
    flight-recorder entry), then the result."""
    name, entry = fn_name(b), row.name
    decls, convs, out_decls, call_args, outs = [], [], [], [], []
    comm, i = "NULL", 0
    for p, k in zip(row.params, b.params):
        v = p.name
        if k.name == "out":
            ctype, init = OUT_INIT[p.base]
            out_decls.append(f"{ctype} {v} = {init};")
            outs.append((v, ctype))
            call_args.append(f"&{v}")
            continue
        if k.name in SIMPLE:
            ctype, conv = SIMPLE[k.name]
            decls.append(f"{ctype} {v};")
            convs.append(f"{conv}(sig, a, {i}, &{v}) < 0")
            call_args.append(v if p.base in (ctype, "hipStream_t") else f"({p.ctype}){v}")
            if k.name == "comm" and comm == "NULL":
                comm = v
        elif k.name == "addr":
            decls.append(f"void *{v};")
            convs.append(f"nx_arg_addr(sig, a, {i}, &{v}) < 0")
            call_args.append(v if p.base == "void *" else f"({p.ctype}){v}")
        elif k.name == "enum":
            members = sorted(enums[k.ctypes[0]], key=lambda m: m[1])
            decls.append(f"int {v};")
            convs.append(f"nx_enum(a[{i}], sig->fname, sig->names[{i}], {members[0][0]}, {members[-1][0]}, "
                         f"\"{k.arg}\", &{v}) < 0")
            call_args.append(f"({p.ctype}){v}")
        elif k.name == "struct":
            decls.append(f"void *{v};")
            convs.append(f"nx_arg_struct_ptr(st, sig, a, {i}, NX_STRUCT_{k.arg}, &{v}) < 0")
            call_args.append(f"({p.ctype}){v}")
        elif k.name == "struct_value":
            decls.append(f"{p.base} {v};")
            convs.append(f"nx_arg_struct_value(st, sig, a, {i}, NX_STRUCT_{k.arg}, &{v}, sizeof {v}) < 0")
            call_args.append(v)
        else:
            raise ValueError(f"{b.name}: no converter for kind {k.name!r}")
        i += 1
    lines = [f"/* {entry} */"]
    if uses_noargs(b, row):
        lines += [f"static PyObject *{name}(PyObject *m, PyObject *unused)", "{", "    (void)unused;",
                  "    nx_state *st = nx_get_state(m);",
                  f"    if (nx_require(st, &nx_api.{entry}) < 0)", "        return NULL;"]
    else:
        lines += [wrap_call(f"static PyObject *{name}(", ["PyObject *m", "PyObject *const *args", "Py_ssize_t nargs",
                                                          "PyObject *kwnames"], ")", ""),
                  "{", f"    const nx_sig *sig = &{name}_sig;", "    nx_state *st;",
                  "    PyObject *buf[NX_MAX_PARAMS];",
                  wrap_call("PyObject *const *a = nx_intake(", ["m", "args", "nargs", "kwnames", "sig",
                                                                 f"&nx_api.{entry}", "buf", "&st"], ");", "    "),
                  "    if (a == NULL)", "        return NULL;"]
    lines += ["    " + d for d in decls]
    if convs:
        if any(k.name == "comm_or_null" for k in b.params):
            lines.append("    /* NULL has a meaning here (NCCL's API): the call made without a communicator. */")
        lines += [or_chain(convs, "    "), "        return NULL;"]
    lines += ["    " + d for d in out_decls]
    result = b.result.name
    if result == "void":
        return "\n".join(lines + ["    Py_BEGIN_ALLOW_THREADS", wrap_call(f"nx_api.{entry}(", call_args, ");", "    "),
                                  "    Py_END_ALLOW_THREADS", "    Py_RETURN_NONE;", "}"])
    if result == "value":
        vtype = row.returns
        conv = {"int": "PyLong_FromLong(v)", "const char *": 'PyUnicode_FromString(v != NULL ? v : "")',
                "ncclTeam_t": "nx_struct_value_result(st, NX_STRUCT_TEAM, &v, sizeof v)"}[vtype]
        return "\n".join(lines + [f"    {vtype}{'' if vtype.endswith('*') else ' '}v;", run_call("v", entry, call_args),
                                  f"    return {conv};", "}"])
    lines.append("    ncclResult_t rc;")
    if b.trace:
        op = next(o for o in S.TRACE_OPS if o.id == b.trace)
        lines.append(f"    nx_trace_ring *tr = nx_trace_find({comm});")
        lines.append(trace_statement(b.trace, binding_trace_roles(row), "    "))
        lines.append("    nx_trace_mark tm = nx_trace_enter(tr, &tc);")
    lines.append(run_call("rc", entry, call_args))
    if b.trace:
        lines.append("    nx_trace_leave(tm, rc);")
        if op.closes:
            lines.append("    nx_trace_ring_closed(tr); /* the communicator is gone: its ring ages out */")
    if result == "none":
        lines.append(f"    return nx_none_or_error(st, rc, {comm});")
    elif result == "out":
        (v, ctype), = outs
        lines += [f"    if (nx_check(st, rc, {comm}) < 0)", "        return NULL;",
                  f"    return {OUT_TO_PY[ctype].format(v=v)};"]
    elif result == "out_pair":
        (v1, t1), (v2, t2) = outs
        lines += [f"    if (nx_check(st, rc, {comm}) < 0)", "        return NULL;",
                  f"    return nx_pair_result({OUT_TO_PY[t1].format(v=v1)}, {OUT_TO_PY[t2].format(v=v2)});"]
    else:
        raise ValueError(f"{b.name}: result {result!r} is not generated")
    return "\n".join(lines + ["}"])


def run_call(var, entry, args, indent="    "):
    """NX_RUN(var, nx_api.entry(args...)): the call with the GIL released, its value in var."""
    return wrap_call(f"NX_RUN({var}, nx_api.{entry}(", args, "));", indent)


def _method_def(b, row):
    return f"    NX_BINDING_{'NOARGS' if uses_noargs(b, row) else 'FASTCALL'}_DEF({b.name}),"


def bindings_section_c(stem, title, bindings, rows, enums):
    """bindings/<stem>.gen.c: one section's signatures and docstrings (its hand-written wrappers'
    too), its generated wrappers and its method table, in the description's order."""
    out = ['#include "bindings/bindings.gen.h"', "", '#include "bindings/bindings_intake.h"', '#include "trace/trace.h"', "",
           "/* ---- signatures and docstrings (the hand-written wrappers' too) ---- */", ""]
    for b in bindings:
        out += [binding_sig_and_doc(b, rows[b.entry], static=not b.hand), ""]
    if any(not b.hand for b in bindings):
        out += ["/* ---- the generated wrappers ---- */", ""]
    for b in bindings:
        if not b.hand:
            out += [binding_wrapper(b, rows[b.entry], enums), ""]
    out += [f"/* {title} */", f"PyMethodDef nx_binding_methods_{stem}[] = {{"]
    out += [_method_def(b, rows[b.entry]) for b in bindings]
    out += ["    {NULL, NULL, 0, NULL},", "};", ""]
    return "\n".join(_wrap_comments(out)).rstrip() + "\n"


def bindings_h(sections, bindings, rows):
    """bindings/bindings.gen.h: the method tables of the sections (<stem>.gen.c) and which module
    each goes to, what the hand-written wrappers define (nx_binding_<name>) and the signatures
    they check their arguments by. sections: (section, its module, its bindings) per section."""
    out = ["#ifndef NCCL4PY_BINDINGS_GEN_H", "#define NCCL4PY_BINDINGS_GEN_H", "", '#include "module/convert.h"', "",
           "/* The method tables, one per section (<stem>.gen.c), added by nx_bindings_setup in this order. */"]
    out += [f"extern PyMethodDef nx_binding_methods_{s.stem}[];" for s, _, _ in sections]
    for module, macro in (("nccl", "NX_NCCL_BINDING_TABLES"), ("rccl", "NX_RCCL_BINDING_TABLES")):
        tables = [f"nx_binding_methods_{s.stem}" for s, of, _ in sections if of == module]
        out.append(f"#define {macro} {{" + "".join(f" \\\n    {t}," for t in tables) + " \\\n}")
    out.append("")
    for hand in sorted({b.hand for b in bindings if b.hand}):
        out.append(f"/* {hand}: {S.IRREGULAR[hand]} */".replace("\n", " "))
        for b in (b for b in bindings if b.hand == hand):
            row = rows[b.entry]
            sigs = ", ".join(f"{fn_name(b)}_sig{suffix}" for suffix, _ in signature_forms(b, row))
            if not uses_noargs(b, row):
                out.append(f"extern const nx_sig {sigs};")
            if uses_noargs(b, row):
                out.append(f"PyObject *{fn_name(b)}(PyObject *m, PyObject *unused);")
            else:
                out.append(f"PyObject *{fn_name(b)}(PyObject *m, PyObject *const *args, Py_ssize_t nargs, "
                           "PyObject *kwnames);")
        out.append("")
    out.append("#endif")
    return "\n".join(_wrap_comments(out)) + "\n"


def _wrap_comments(lines, width=110):
    """Single-line /* ... */ comments longer than `width`, broken into a block."""
    out = []
    for line in lines:
        if line.startswith("/* ") and line.endswith(" */") and len(line) > width:
            words, cur = line[3:-3].split(), "/*"
            for w in words:
                if len(cur) + 1 + len(w) > width:
                    out.append(cur)
                    cur = " *"
                cur += " " + w
            out.append(cur + " */")
        else:
            out.append(line)
    return out


# ---- the tables nccl._ext and the host backend share (src/include/nccl_surface.gen.h) ----

def shared_h(ops, colls, dtypes, aliases):
    """X-macro tables: the recorder's ops, the host backend's kinds (the ops it runs, with their
    class), and the datatypes."""
    def table(macro, doc, rows):
        body = " \\\n".join(f"    X({r})" for r in rows)
        return "\n".join(_wrap_comments([f"/* {doc} */"], 110)) + f"\n#define {macro}(X) \\\n{body}\n"
    host_class = {"coll": "COLL", "p2p": "P2P", "rma": "RMA", "win": "WIN"}
    out = ["#ifndef NCCL4PY_NCCL_SURFACE_GEN_H", "#define NCCL4PY_NCCL_SURFACE_GEN_H", ""]
    out.append(table("NCCL_SURFACE_TRACE_OPS",
                     "The calls the flight recorder names (docs/api/trace.md): X(id, \"file format name\", every rank "
                     "makes the call, \"the verdict's word before a peer\")",
                     [f'{o.id}, "{o.name}", {int(o.every_rank)}, "{o.peer}"' for o in ops]))
    rooted = {c.kind for c in colls if c.rooted}
    out.append(table("NCCL_SURFACE_HOST_KINDS",
                     "The operations the host backend runs (src/host): X(id, \"entry point named in its messages\", "
                     "class: COLL, P2P, RMA or WIN, reduces (takes an op), rooted)",
                     [f'{o.id}, "{o.entry}", {host_class[o.host]}, {int(o.reduction)}, {int(o.id in rooted)}'
                      for o in ops if o.host]))
    in_place = {"same": "SAME", "recv_in_send": "RECV_IN_SEND", "send_in_recv": "SEND_IN_RECV"}
    out.append(table("NCCL_SURFACE_BUFFER_RULES",
                     "What the collectives read and write, in NCCL's terms (count: the call's count argument; the "
                     "host backend checks it): X(id, sendbuff holds nranks * count elements (else count), recvbuff "
                     "likewise, the buffer only root uses (NONE, SEND, RECV), the in-place form (SAME: recvbuff is "
                     "sendbuff; RECV_IN_SEND: recvbuff is block i of sendbuff; SEND_IN_RECV: the reverse; i is root "
                     "for a rooted call, else the rank))",
                     [f'{c.kind}, {int(c.blocks)}, {int(c.recv_rule[1] == "all" or (c.blocks and c.recv_rule[1] == "send"))}, '
                      f'{dict(send="SEND", recv="RECV").get(c.rooted, "NONE")}, {in_place[c.in_place]}' for c in colls]))
    def dtype_rows(rows):
        return [f'{d.c}, {d.core}, "{d.short}", {d.size}, "{d.numpy}", {repr(d.kind) if d.kind else "0"}, {d.dlpack}'
                for d in rows]
    out.append(table("NCCL_SURFACE_DTYPES",
                     "The datatypes, in value order: X(ncclDataType_t, NcclDataType member, short name, size, numpy "
                     "dtype name, numpy kind (0: an ml_dtypes name, told apart by name), DLPack type code)",
                     dtype_rows(dtypes)))
    out.append(table("NCCL_SURFACE_DTYPE_ALIASES",
                     "Element types carried as one of the datatypes, with a meaning of their own (bool: UINT8 whose "
                     "reductions are logical): X(...) as NCCL_SURFACE_DTYPES",
                     dtype_rows(aliases)))
    out += ["#endif"]
    return "\n".join(_wrap_comments(out, 110)) + "\n"


# ---- the collectives of nccl.core (src/ext/core/coll_kinds.gen.h, collectives.gen.h) ----

def _coll_args(c, rows, config):
    """The C arguments of kind c's entry point, from an nx_coll_call `a` (and cfg)."""
    row = rows[c.config_entry if config else c.entry]
    field = {"sendbuff": "a->send", "recvbuff": "a->recv", "count": "a->count", "sendcount": "a->count",
             "recvcount": "a->count", "datatype": "a->dtype", "op": "a->op", "root": "a->root", "comm": "a->comm",
             "stream": "a->stream", "config": "cfg"}
    return [field[p.name] for p in row.params]


def reduces(kind):
    """Whether the recorder's op `kind` (TRACE_OPS) reduces."""
    return next(o for o in S.TRACE_OPS if o.id == kind).reduction


def coll_kinds_h(colls, rows):
    """nx_coll_kind and what each kind calls, as switches over every kind (no default: -Wswitch
    names a kind left out)."""
    def switch(fn_head, doc, case_body, after, before=()):
        lines = _wrap_comments([f"/* {doc} */"], 110) + [f"static inline {fn_head}", "{", *before, "    switch (a_kind) {"]
        for c in colls:
            lines.append(f"    case NX_COLL_{c.kind}:")
            lines += ["        " + l for l in case_body(c)]
        lines += ["    }", f"    {after}", "}", ""]
        return lines
    out = ["#ifndef NCCL4PY_COLL_KINDS_GEN_H", "#define NCCL4PY_COLL_KINDS_GEN_H", "",
           '#include "loader/library.h"', '#include "trace/trace.h"', "",
           "/* The collectives with a Communicator method and an ncclXxxConfig twin. */",
           "typedef enum {"] + [f"    NX_COLL_{c.kind}," for c in colls] + ["} nx_coll_kind;", "",
           "/* One checked collective call: what the method resolved, as C values only. */",
           "typedef struct {", "    nx_coll_kind kind;", "    const void *send;", "    void *recv;", "    size_t count;",
           "    ncclDataType_t dtype;", "    ncclRedOp_t op;   /* reductions */", "    int root;         /* rooted calls, else -1 */",
           "    ncclComm_t comm;", "    cudaStream_t stream;", "} nx_coll_call;", ""]
    out += switch("const void *nx_coll_plain_slot(nx_coll_kind a_kind)",
                  "The plain entry point's table slot, for nx_require.",
                  lambda c: [f"return &nx_api.{c.entry};"], "return NULL; /* not a kind */")
    out += switch("const void *nx_coll_config_slot(nx_coll_kind a_kind)",
                  "The ncclXxxConfig entry point's table slot.",
                  lambda c: [f"return &nx_api.{c.config_entry};"], "return NULL; /* not a kind */")
    out += switch("const char *nx_coll_config_name(nx_coll_kind a_kind)",
                  "The ncclXxxConfig entry point's name, for FunctionNotFoundError.",
                  lambda c: [f'return "{c.config_entry}";'], 'return "?"; /* not a kind */')
    out += switch("nx_trace_call nx_coll_trace_call(nx_coll_kind a_kind, const nx_coll_call *a)",
                  "The flight recorder's entry of a call (docs/api/trace.md).",
                  lambda c: [wrap_call("return nx_trace_coll(", [
                      f"NX_T_{c.kind}", " | ".join(f for f, on in (("NX_TF_REDOP", reduces(c.kind)), ("NX_TF_ROOT", c.rooted))
                                                  if on) or "0",
                      "a->send", "a->recv", "a->count", "a->dtype", "a->op" if reduces(c.kind) else "0",
                      "a->root" if c.rooted else "-1", "a->stream"], ");", "")],
                  "return (nx_trace_call){0}; /* not a kind */")
    out += switch("ncclResult_t nx_coll_run(nx_coll_kind a_kind, const nx_coll_call *a, const ncclCollConfig_t *cfg)",
                  "Runs the call with the GIL released: the plain entry point when cfg is NULL, else the ncclXxxConfig "
                  "one. a_kind is a->kind (a constant where the caller inlines this, so one case remains).",
                  lambda c: ["if (cfg == NULL)", run_call("rc", c.entry, _coll_args(c, rows, False), "    "), "else",
                             run_call("rc", c.config_entry, _coll_args(c, rows, True), "    "), "break;"],
                  "return rc;", before=("    ncclResult_t rc = ncclInvalidArgument; /* not a kind */",))
    out += ["#endif"]
    return "\n".join(_wrap_comments(out, 110)) + "\n"


def _msig(m):
    names = [p.split("=")[0] for p in m.params if p != "*"]
    npos = m.params.index("*") if "*" in m.params else len(m.params)
    nreq = sum(1 for p in m.params[:npos] if "=" not in p)
    return names, npos, nreq


def collectives_h(colls, methods):
    """The Communicator methods of core/collectives.c: their signatures and docstrings, the
    descriptors of the collective ones and their bodies, and the method table."""
    by_kind = {c.kind: c for c in colls}
    out = []
    for m in methods:
        names, npos, nreq = _msig(m)
        out.append(wrap_call(f"NX_MSIG({m.name}, {npos}, {nreq}, ", [f'"{n}"' for n in names], ");", ""))
        params = ", ".join(["$self", *m.params])
        out.append(f"PyDoc_STRVAR({m.name}__doc__,\n{c_string(f'{m.name}({params})' + chr(10) + '--' + chr(10) * 2 + m.doc)});")
        if m.collective:
            c = by_kind[m.collective]
            relation, size, why = c.recv_rule
            fields = [f".kind = NX_COLL_{c.kind}", f".unrooted = NX_COLL_{c.unrooted or c.kind}",
                      f".reduction = {int(reduces(c.kind))}",
                      f".rooted = {dict(recv='NX_ROOTED_RECV', send='NX_ROOTED_SEND').get(c.rooted, 'NX_ROOTED_NONE')}",
                      f".count_from_recv = {int(c.count == 'recv')}", f".blocks = {int(c.blocks)}",
                      f".recv_exactly = {int(relation == 'exactly')}", f".recv_size = NX_SIZE_{size.upper()}",
                      f".why = {'NULL' if why is None else chr(34) + why + chr(34)}",
                      f".in_place = NX_IN_PLACE_{c.in_place.upper()}"]
            out.append(wrap_call(f"static const nx_coll_desc {m.name}_desc = {{", fields, "};", ""))
            body = f"return coll_method(k, &M_{m.name}, &{m.name}_desc, args, nargs, kwnames);"
        else:
            body = f"return {m.name}_impl(k, &M_{m.name}, args, nargs, kwnames);"
        out += [f"static PyObject *{m.name}_body(nx_call *k, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)",
                "{", f"    {body}", "}",
                f"static PyObject *Communicator_{m.name}(NX_COMM_METHOD_ARGS)",
                "{", f"    return nx_comm_call({m.name}_body, NX_COMM_METHOD_PASS);", "}", ""]
    out.append("PyMethodDef nx_collective_methods[] = {")
    out += [f'    NX_COMM_METHOD_DEF("{m.name}", Communicator_{m.name}, {m.name}__doc__),' for m in methods]
    out += ["    {NULL, NULL, 0, NULL},", "};"]
    return "\n".join(out) + "\n"
