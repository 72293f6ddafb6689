/* nccl.bindings.nccl and nccl.bindings.rocm_extensions: one C function per NCCL/RCCL host entry
 * point (docs/compatibility.md#low-level-bindings), upstream 0.3.1's names and argument conventions, plus the
 * 0.2.0 forms chosen by argument count. The functions live by concern:
 *
 *   bindings.c              argument helpers shared by every binding, and the setup
 *   bindings_memory.c       memory, version, unique ids, error strings
 *   bindings_lifecycle.c    communicator creation, split/shrink/grow, finalize/destroy/abort,
 *                           revoke/suspend/resume
 *   bindings_query.c        communicator queries (count, rank, device, async error, memory
 *                           statistics, properties)
 *   bindings_collectives.c  collectives, point-to-point, custom reduction operators, groups
 *   bindings_windows.c      buffer and window registration, one-sided signals, device pointers,
 *                           device communicators
 *   bindings_config.c       the nccl*Config collectives (a CollConfig per call)
 *   bindings_teams.c        teams, device-resource requirements, multimem and LE queries
 *   bindings_params.c       library parameters by key, socket encryption
 *   rocm_extensions.c       the RCCL-only collectives
 *
 * How to add a wrapper (ncclFoo -> foo):
 *   1. The entry point is a row of NCCL_ABI in src/include/abi.h (the only place an NCCL symbol
 *      name is written; the loader resolves it into nx_api.ncclFoo).
 *   2. In the file of its concern, write it out like its neighbours:
 *
 *        NX_BINDING(foo, ("comm", "count"), "ncclFoo: what it does.");
 *        static PyObject *foo(PyObject *m, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
 *        {
 *            const nx_sig *sig = &foo_sig;
 *            nx_state *st;
 *            PyObject *buf[NX_MAX_PARAMS];
 *            PyObject *const *a = nx_intake(m, args, nargs, kwnames, sig, &nx_api.ncclFoo, buf, &st);
 *            if (a == NULL)
 *                return NULL;
 *            ncclComm_t comm;
 *            size_t count;
 *            if (nx_arg_comm(sig, a, 0, &comm) < 0 || nx_arg_size(sig, a, 1, &count) < 0)
 *                return NULL;
 *            ncclResult_t rc;
 *            NX_RUN(rc, nx_api.ncclFoo(comm, count));
 *            return nx_none_or_error(st, rc, comm);
 *        }
 *
 *      Order of checks: arity and keywords, the library load and the symbol (nx_intake, in
 *      bindings_intake.h), each argument in parameter order, then the one library call with the
 *      GIL released (NX_RUN), then its status (nx_check, or nx_none_or_error where the result is
 *      None). Every comm parameter goes through nx_arg_comm and every
 *      window through nx_arg_window, which refuse a null handle before any library call (only
 *      where NCCL gives NULL a meaning does a binding pass NX_NULL_ACCEPTED, with a comment).
 *      NX_BINDING spells the name and the parameters once: they make both foo_sig (what
 *      nx_intake checks and names in errors) and foo__doc__, whose text signature
 *      "foo(comm, count)\n--\n\n" inspect.signature reads. A second argument-count form is an
 *      NX_FORM(foo, 02, ...) (foo_sig_02) beside it.
 *   3. Add NX_FASTCALL_DEF(foo) to the file's method table. That is the name's only other
 *      spelling: nx_bindings_setup publishes the tables' names (_ext._NCCL_BINDINGS, and
 *      _ext._RCCL_BINDINGS for rocm_extensions.c's), which nccl.bindings.nccl and
 *      nccl.bindings.rocm_extensions export.
 *   4. Its types: `python tools/gen_stubs.py` writes the def, its docstring and its types into
 *      src/nccl/bindings/nccl.pyi from the built module (a new parameter name or return type is
 *      a row of the generator's tables); a test fails while the committed stub differs.
 *   5. Tests: tests/test_bindings_marshalling.py checks argument order through the stub library
 *      (tests/stubs, generated from abi.h); tests/test_bindings_bad_input.py the null-handle rule,
 *      which it derives from the signature. */
#ifndef NCCL4PY_BINDINGS_H
#define NCCL4PY_BINDINGS_H

#include "module/convert.h"
#include "group/group.h"
#include "loader/library.h"
#include "module/errors.h"
#include "module/module.h"
#include "structs/handles.h"

/* An nx_sig initializer: NX_SIGNATURE("all_reduce", "sendbuff", ...); the count is computed. */
#define NX_SIGNATURE(fname, ...) \
    {(fname), (const char *const[]){__VA_ARGS__, NULL}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *)}

/* "a, b, c" from the string literals "a", "b", "c" (1 to NX_MAX_PARAMS of them): the parameter
 * list of a text signature, spelled from the same literals as the nx_sig. */
#define NX_PT_1(a) a
#define NX_PT_2(a, ...) a ", " NX_PT_1(__VA_ARGS__)
#define NX_PT_3(a, ...) a ", " NX_PT_2(__VA_ARGS__)
#define NX_PT_4(a, ...) a ", " NX_PT_3(__VA_ARGS__)
#define NX_PT_5(a, ...) a ", " NX_PT_4(__VA_ARGS__)
#define NX_PT_6(a, ...) a ", " NX_PT_5(__VA_ARGS__)
#define NX_PT_7(a, ...) a ", " NX_PT_6(__VA_ARGS__)
#define NX_PT_8(a, ...) a ", " NX_PT_7(__VA_ARGS__)
#define NX_PT_9(a, ...) a ", " NX_PT_8(__VA_ARGS__)
#define NX_PT_10(a, ...) a ", " NX_PT_9(__VA_ARGS__)
#define NX_PT_11(a, ...) a ", " NX_PT_10(__VA_ARGS__)
#define NX_PT_12(a, ...) a ", " NX_PT_11(__VA_ARGS__)
#define NX_PT_13(a, ...) a ", " NX_PT_12(__VA_ARGS__)
#define NX_PT_14(a, ...) a ", " NX_PT_13(__VA_ARGS__)
#define NX_PT_15(a, ...) a ", " NX_PT_14(__VA_ARGS__)
#define NX_PT_16(a, ...) a ", " NX_PT_15(__VA_ARGS__)
#define NX_PT_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, n, ...) NX_PT_##n
#define NX_PARAMS_TEXT(...) \
    NX_PT_PICK(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)(__VA_ARGS__)
#define NX_UNPAREN(...) __VA_ARGS__

/* A binding's signature and docstring from one spelling of its name and parameters:
 *   NX_BINDING(comm_count, ("comm"), "ncclCommCount: the number of ranks.");
 * defines comm_count_sig (the nx_sig its intake checks) and comm_count__doc__, whose first line
 * is the text signature "comm_count(comm)\n--\n\n" that inspect.signature reads. */
#define NX_BINDING(fn, params, doc)                                     \
    static const nx_sig fn##_sig = NX_SIGNATURE(#fn, NX_UNPAREN params); \
    PyDoc_STRVAR(fn##__doc__, #fn "(" NX_PARAMS_TEXT params ")\n--\n\n" doc)

/* The same for a binding without parameters (its other form, if any, is an NX_FORM). */
#define NX_BINDING0(fn, doc)                                                     \
    static const nx_sig fn##_sig = {#fn, (const char *const[]){NULL}, 0}; \
    PyDoc_STRVAR(fn##__doc__, #fn "()\n--\n\n" doc)

/* Another argument-count form of binding fn (the 0.2.0 form, or the short form of a creation
 * call): NX_FORM(comm_split, short, "comm", ...) defines comm_split_sig_short. */
#define NX_FORM(fn, form, ...) static const nx_sig fn##_sig_##form = NX_SIGNATURE(#fn, __VA_ARGS__)

/* A method table entry of a binding: Python name = C name, FASTCALL with keywords, doc fn##__doc__. */
#define NX_FASTCALL_DEF(fn) \
    {#fn, (PyCFunction)(void (*)(void))fn, METH_FASTCALL | METH_KEYWORDS, fn##__doc__}

/* ---- argument i of the binding described by sig ----
 * Each converts a[i] and names sig's function and parameter in its error: 0, or -1 with
 * TypeError, OverflowError or ValueError. */

static inline int nx_arg_addr(const nx_sig *sig, PyObject *const *a, int i, void **out)
{
    return nx_addr(a[i], sig->fname, sig->names[i], out);
}

/* The address of the handle slot a 0.3.1 creation call fills (an int such as PointerBox().address
 * or Comm().handle_ptr, or a PointerBox): the library writes the new communicator or window
 * there, so 0 is refused (ValueError) before the call, and so is a Comm or Window itself
 * (TypeError: the library would write through the handle's value). */
static inline int nx_arg_slot(const nx_sig *sig, PyObject *const *a, int i, void **out)
{
    if (NX_UNLIKELY(nx_is_handle(a[i]))) {
        const char *type = nx_handle_type_name(a[i]);
        PyErr_Format(PyExc_TypeError, "%s() argument '%s' must be a handle slot address (an int, such as %s's "
                     "handle_ptr), not %s", sig->fname, sig->names[i], type, type);
        return -1;
    }
    if (nx_addr(a[i], sig->fname, sig->names[i], out) < 0)
        return -1;
    if (*out == NULL) {
        PyErr_Format(PyExc_ValueError, "%s() argument '%s' must not be a null handle slot address", sig->fname,
                     sig->names[i]);
        return -1;
    }
    return 0;
}

static inline int nx_arg_stream(const nx_sig *sig, PyObject *const *a, int i, cudaStream_t *out)
{
    intptr_t v;
    if (nx_intptr(a[i], sig->fname, sig->names[i], &v) < 0)
        return -1;
    *out = (cudaStream_t)v;
    return 0;
}

static inline int nx_arg_size(const nx_sig *sig, PyObject *const *a, int i, size_t *out)
{
    return nx_size(a[i], sig->fname, sig->names[i], out);
}

static inline int nx_arg_int(const nx_sig *sig, PyObject *const *a, int i, int *out)
{
    return nx_int(a[i], sig->fname, sig->names[i], out);
}

static inline int nx_arg_uint(const nx_sig *sig, PyObject *const *a, int i, unsigned int *out)
{
    return nx_uint(a[i], sig->fname, sig->names[i], out);
}

static inline int nx_arg_dtype(const nx_sig *sig, PyObject *const *a, int i, ncclDataType_t *out)
{
    return nx_dtype(a[i], sig->fname, sig->names[i], out);
}

static inline int nx_arg_redop(const nx_sig *sig, PyObject *const *a, int i, ncclRedOp_t *out)
{
    return nx_redop(a[i], sig->fname, sig->names[i], out);
}

/* A communicator that must not be null (NCCLNullHandleError before any library call). */
static inline int nx_arg_comm(const nx_sig *sig, PyObject *const *a, int i, ncclComm_t *out)
{
    return nx_comm_arg(a[i], sig->fname, sig->names[i], NX_NULL_REFUSED, out);
}

/* A communicator where NCCL gives NULL a meaning; each use says which. */
static inline int nx_arg_nullable_comm(const nx_sig *sig, PyObject *const *a, int i, ncclComm_t *out)
{
    return nx_comm_arg(a[i], sig->fname, sig->names[i], NX_NULL_ACCEPTED, out);
}

/* A window that must not be null (NCCLNullHandleError before any library call). */
static inline int nx_arg_window(const nx_sig *sig, PyObject *const *a, int i, ncclWindow_t *out)
{
    return nx_window_arg(a[i], sig->fname, sig->names[i], out);
}

/* ---- shared by the binding files (bindings.c) ---- */

/* A function with two forms told apart by the total argument count: the 0.3.1 form (s03) or the
 * 0.2.0 form (s02, which may be s03 itself when the names are shared). Returns the arguments in
 * parameter order and sets *legacy (the 0.2.0 form was called) and *sig; NULL with TypeError
 * otherwise. buf has room for NX_MAX_PARAMS. */
PyObject *const *nx_dual_args(const nx_sig *s03, const nx_sig *s02, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames, PyObject **buf, int *legacy, const nx_sig **sig);

/* A struct wrapper freshly filled by the library, or, when rc failed, NULL with the exception
 * (obj dropped). */
PyObject *nx_struct_result(nx_state *st, PyObject *obj, ncclResult_t rc, ncclComm_t comm);

/* The new handle of a creation call's short form (the 0.2.0 and 0.5+ argument counts), made before
 * the library call so that nothing can fail once the library created a communicator or window:
 * the call writes it at *slot, the object's own slot. Inside a group the object is also kept
 * alive until the outermost group end (nx_group_keep), since the library may fill the slot only
 * then. 0, or -1 with the exception. */
int nx_creation_handle(nx_state *st, nx_handle_kind kind, PyObject **handle, void **slot);

/* The result of a creation call: the status (0.3.1 form, handle NULL) or the handle (short form;
 * the reference is passed on); NULL with the exception (and the handle dropped) when rc failed. */
PyObject *nx_creation_result(nx_state *st, ncclResult_t rc, PyObject *handle, ncclComm_t comm);

/* True when o stands for an address (an int, PointerBox, ...) rather than for data. */
int nx_is_address(PyObject *o);

/* Copies `size` bytes given either as an int address or as a contiguous buffer of exactly that
 * length (read-only buffers welcome: the library only reads them). */
int nx_read_bytes_arg(PyObject *o, const char *fname, const char *argname, void *out, size_t size);

/* nx_read_bytes_arg into new PyMem storage (*out, which the caller frees), allocated only once a
 * buffer argument is known to hold exactly size bytes. */
int nx_read_bytes_alloc(PyObject *o, const char *fname, const char *argname, size_t size, void **out);

/* A host size_t[n] array given as an int address (used in place), a sequence of ints, or a 1-D
 * uint64 buffer (both copied into *copy, which the caller frees with PyMem_Free). */
int nx_size_array_arg(PyObject *o, const char *fname, const char *argname, Py_ssize_t n, const size_t **out,
                      size_t **copy);

/* An int[] given as an int address or a sequence of ints (copied into *copy, freed by the caller;
 * at least `count` entries); None gives NULL when allow_none. */
int nx_int_array_arg(PyObject *o, const char *fname, const char *argname, Py_ssize_t count, int allow_none,
                     int **out, int **copy);

/* ---- setup: each binding file's method table, added by nx_bindings_setup ---- */
extern PyMethodDef nx_bindings_memory_methods[];
extern PyMethodDef nx_bindings_lifecycle_methods[];
extern PyMethodDef nx_bindings_query_methods[];
extern PyMethodDef nx_bindings_collective_methods[];
extern PyMethodDef nx_bindings_window_methods[];
extern PyMethodDef nx_bindings_config_methods[];
extern PyMethodDef nx_bindings_team_methods[];
extern PyMethodDef nx_bindings_param_methods[];
extern PyMethodDef nx_rocm_extension_methods[];

int nx_bindings_setup(PyObject *module, nx_state *st);

#endif
