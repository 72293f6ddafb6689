/* Loading, as seen from Python. The discovery order itself is in loader.c. */
#include "loader/library.h"

#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "module/convert.h"
#include "module/errors.h"
#include "module/module.h"
#include "trace/trace.h"

const char *nx_flavour_name(nx_flavour f)
{
    switch (f) {
    case NX_FLAVOUR_NCCL: return "nccl";
    case NX_FLAVOUR_RCCL: return "rccl";
    case NX_FLAVOUR_HOST: return "host";
    default: return "none";
    }
}

/* The bundled host backend sits in nccl/_lib/, beside this extension module (nccl/_ext*.so). */
static int host_backend_path(char *out, size_t outlen)
{
    Dl_info dli;
    if (dladdr((void *)host_backend_path, &dli) == 0 || dli.dli_fname == NULL)
        return -1;
    char copy[PATH_MAX];
    snprintf(copy, sizeof copy, "%s", dli.dli_fname);
    snprintf(out, outlen, "%s/_lib/libnccl-host.so", dirname(copy));
    return 0;
}

/* Owned C strings, freed together. */
typedef struct {
    char **items;
    size_t n, cap;
} strlist;

static int strlist_add(strlist *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i], s) == 0)
            return 0; /* the same candidate twice adds nothing */
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        char **grown = PyMem_Realloc(l->items, cap * sizeof *grown);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        l->items = grown, l->cap = cap;
    }
    if ((l->items[l->n] = strdup(s)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    l->n++;
    return 0;
}

static void strlist_free(strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    PyMem_Free(l->items);
}

static int add_env_path(strlist *l, const char *var, const char *suffix)
{
    const char *v = getenv(var);
    if (v == NULL || *v == '\0')
        return 0;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", v, suffix);
    return strlist_add(l, path);
}

/* ctypes.util.find_library("rccl"), the first RCCL candidate of the RCCL fork. */
static int add_find_library(strlist *l)
{
    PyObject *util = PyImport_ImportModule("ctypes.util");
    PyObject *res = util ? PyObject_CallMethod(util, "find_library", "s", "rccl") : NULL;
    Py_XDECREF(util);
    if (res == NULL)
        return -1;
    int rc = 0;
    if (PyUnicode_Check(res)) {
        const char *s = PyUnicode_AsUTF8(res);
        rc = s ? strlist_add(l, s) : -1;
    }
    Py_DECREF(res);
    return rc;
}

static int add_dirs_from(strlist *l, PyObject *seq, const char *suffix)
{
    PyObject *fast = nx_seq_snapshot(seq); /* sys.path: another thread may change it meanwhile */
    if (fast == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fast); i++) {
        PyObject *item = PyTuple_GET_ITEM(fast, i);
        const char *dir = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
        if (dir == NULL || *dir == '\0') {
            PyErr_Clear();
            continue;
        }
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, suffix);
        if (strlist_add(l, path) < 0) {
            Py_DECREF(fast);
            return -1;
        }
    }
    Py_DECREF(fast);
    return 0;
}

/* <dir>/nvidia/nccl/lib/libnccl.so.2 for the site directories and sys.path, in that order: where
 * the nvidia-nccl-cu12/-cu13 wheels install. */
static int add_wheel_dirs(strlist *l)
{
    static const char *suffix = "nvidia/nccl/lib/libnccl.so.2";
    int rc = -1;
    PyObject *site = PyImport_ImportModule("site");
    if (site == NULL)
        return -1;
    PyObject *dirs = PyObject_CallMethod(site, "getsitepackages", NULL);
    if (dirs == NULL || add_dirs_from(l, dirs, suffix) < 0)
        goto done;
    Py_CLEAR(dirs);
    dirs = PyObject_CallMethod(site, "getusersitepackages", NULL);
    if (dirs == NULL)
        goto done;
    if (PyUnicode_Check(dirs)) {
        PyObject *one = PyTuple_Pack(1, dirs);
        int r = one ? add_dirs_from(l, one, suffix) : -1;
        Py_XDECREF(one);
        if (r < 0)
            goto done;
    }
    PyObject *path = PySys_GetObject("path"); /* borrowed */
    if (path != NULL && add_dirs_from(l, path, suffix) < 0)
        goto done;
    rc = 0;
done:
    Py_XDECREF(dirs);
    Py_DECREF(site);
    return rc;
}

static int build_candidates(strlist *rccl, strlist *nccl)
{
    if (add_find_library(rccl) < 0 || add_env_path(rccl, "ROCM_PATH", "lib/librccl.so") < 0 ||
        add_env_path(rccl, "ROCM_PATH", "lib/librccl.so.1") < 0 ||
        add_env_path(rccl, "HIP_PATH", "lib/librccl.so") < 0 ||
        add_env_path(rccl, "HIP_PATH", "lib/librccl.so.1") < 0 || strlist_add(rccl, "librccl.so") < 0 ||
        strlist_add(rccl, "librccl.so.1") < 0)
        return -1;
    if (add_wheel_dirs(nccl) < 0 || add_env_path(nccl, "CONDA_PREFIX", "lib/libnccl.so.2") < 0 ||
        strlist_add(nccl, "libnccl.so.2") < 0 || add_env_path(nccl, "CUDA_HOME", "lib64/libnccl.so.2") < 0 ||
        add_env_path(nccl, "CUDA_PATH", "lib64/libnccl.so.2") < 0)
        return -1;
    return 0;
}

static PyObject *attempts_tuple(const dl_attempt *a, size_t n)
{
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    for (size_t i = 0; t != NULL && i < n; i++) {
        PyObject *pair = a[i].outcome ? Py_BuildValue("(ss)", a[i].candidate, a[i].outcome)
                                      : Py_BuildValue("(sO)", a[i].candidate, Py_None);
        if (pair == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, (Py_ssize_t)i, pair);
    }
    return t;
}

static void raise_not_supported(nx_state *st, const dl_attempt *a, size_t n)
{
    PyObject *cls = nx_exception_class(st, NX_EXC_NOT_SUPPORTED); /* borrowed */
    if (cls == NULL)
        return;
    PyObject *tuple = attempts_tuple(a, n);
    if (tuple == NULL)
        return;
    PyObject *exc = PyObject_CallMethod(cls, "_from_attempts", "(O)", tuple);
    if (exc != NULL) {
        PyErr_SetObject(cls, exc);
        Py_DECREF(exc);
    }
    Py_DECREF(tuple);
}

static int emit_notices(nx_state *st, int notices)
{
    const nx_library_info *li = nx_loader_info();
    if (notices & NX_NOTICE_HOST_AUTO) {
        /* Attributed to the user's call that loaded the library, not to nccl4py's own frames, and
         * short; `python -m nccl` names the path. */
        PyObject *cls = nx_exception_class(st, NX_EXC_HOST_BACKEND_WARNING);
        if (cls == NULL ||
            PyErr_WarnEx(cls,
                         "nccl4py: no GPU found; using the bundled host backend (CPU). Set NCCL_LIBRARY=host "
                         "to choose it and silence this notice.",
                         nx_stacklevel_outside_package()) < 0)
            return -1;
    }
    if (notices & NX_NOTICE_TWO_COPIES) {
        if (PyErr_WarnFormat(PyExc_RuntimeWarning, nx_stacklevel_outside_package(),
                             "nccl4py: two NCCL/RCCL copies are loaded in this process: using %s, while %s "
                             "is also mapped; communicators from one cannot be used with the other",
                             li->path, li->other_copy) < 0)
            return -1;
    }
    return 0;
}

int nx_load_library(nx_state *st)
{
    int rc = -1;
    strlist rccl = {0}, nccl = {0};
    char host_path[PATH_MAX];
    if (host_backend_path(host_path, sizeof host_path) < 0)
        snprintf(host_path, sizeof host_path, "libnccl-host.so");

    /* The environment is read with the GIL held: os.environ writes happen under it. */
    sel_library_selection *sel = PyMem_Malloc(sizeof *sel);
    if (sel == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    sel_read(sel);
    const char *override = sel->library[0] != '\0' ? sel->library : NULL;
    int devices = sel->devices;
    if (override == NULL && devices != 0 && build_candidates(&rccl, &nccl) < 0)
        goto done;

    nx_load_request req = {
        .override = override,
        .override_is_host = sel->names_host,
        .host_path = host_path,
        .devices = devices,
        .rccl = (const char *const *)rccl.items,
        .nrccl = rccl.n,
        .nccl = (const char *const *)nccl.items,
        .nnccl = nccl.n,
    };
    const dl_attempt *attempts;
    size_t nattempts;
    int notices, loaded;
    Py_BEGIN_ALLOW_THREADS
    loaded = nx_loader_load(&req, &attempts, &nattempts, &notices);
    Py_END_ALLOW_THREADS
    if (loaded != 0) {
        raise_not_supported(st, attempts, nattempts);
        goto done;
    }
    rc = emit_notices(st, notices);
done:
    PyMem_Free(sel);
    strlist_free(&rccl);
    strlist_free(&nccl);
    return rc;
}

int nx_missing_function(nx_state *st, const void *slot)
{
    size_t offset = (size_t)((const char *)slot - (const char *)&nx_api);
    const char *name = "<not an entry point of the ABI table>";
    for (size_t i = 0; i < nx_nsymbols; i++)
        if (nx_symbols[i].offset == offset)
            name = nx_symbols[i].name;
    nx_raise_function_not_found(st, name, nx_alias_of(name));
    return -1;
}

PyDoc_STRVAR(get_library_path__doc__, "get_library_path()\n--\n\n"
"Absolute path of the library every symbol was resolved from. Loads the library on first use.");

static PyObject *get_library_path(PyObject *module, PyObject *unused)
{
    (void)unused;
    if (nx_loaded(nx_get_state(module)) < 0)
        return NULL;
    const char *p = nx_loader_info()->path;
    if (p == NULL)
        Py_RETURN_NONE;
    return PyUnicode_DecodeFSDefault(p);
}

PyDoc_STRVAR(get_library_flavour__doc__, "get_library_flavour()\n--\n\n"
"'rccl', 'nccl' or 'host': which kind of library is loaded. Loads the library on first use.");

static PyObject *get_library_flavour(PyObject *module, PyObject *unused)
{
    (void)unused;
    if (nx_loaded(nx_get_state(module)) < 0)
        return NULL;
    return PyUnicode_FromString(nx_flavour_name(nx_loader_info()->flavour));
}

PyDoc_STRVAR(get_load_attempts__doc__, "get_load_attempts()\n--\n\n"
"Each candidate the loader tried, as (candidate, error), with error None for the one that loaded.\n"
"Loads the library on first use; raises NotSupportedError if nothing loads.");

static PyObject *get_load_attempts(PyObject *module, PyObject *unused)
{
    (void)unused;
    if (nx_loaded(nx_get_state(module)) < 0)
        return NULL;
    const dl_attempt *a;
    size_t n;
    nx_loader_attempts(&a, &n);
    return attempts_tuple(a, n);
}

PyDoc_STRVAR(host_library_path__doc__, "_host_library_path()\n--\n\n"
"Absolute path of the bundled host backend (nccl/_lib/libnccl-host.so), whichever library is loaded\n"
"(no load is triggered): nccl.torch opens a second handle on it for CPU tensors on GPU machines.");

static PyObject *host_library_path(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    char path[PATH_MAX];
    if (host_backend_path(path, sizeof path) < 0) {
        PyErr_SetString(PyExc_RuntimeError, "the bundled host backend's folder could not be found (dladdr)");
        return NULL;
    }
    return PyUnicode_DecodeFSDefault(path);
}

PyDoc_STRVAR(library_info__doc__, "_library_info()\n--\n\n"
"(path, flavour, version code, host backend text or None) of the loaded library; loads it.");

static PyObject *library_info(PyObject *module, PyObject *unused)
{
    (void)unused;
    if (nx_loaded(nx_get_state(module)) < 0)
        return NULL;
    const nx_library_info *li = nx_loader_info();
    return Py_BuildValue("(NsiN)", PyUnicode_DecodeFSDefault(li->path), nx_flavour_name(li->flavour),
                         li->version,
                         li->host_info ? PyUnicode_FromString(li->host_info) : Py_NewRef(Py_None));
}

PyDoc_STRVAR(inspect_function_pointers__doc__, "_inspect_function_pointers()\n--\n\n"
"{'__ncclXxx': address or 0} for every NCCL entry point the library exports under that name; loads it.");

static PyObject *inspect_function_pointers(PyObject *module, PyObject *unused)
{
    (void)unused;
    if (nx_loaded(nx_get_state(module)) < 0)
        return NULL;
    PyObject *d = PyDict_New();
    for (size_t i = 0; d != NULL && i < nx_nnccl_symbols; i++) {
        PyObject *addr = PyLong_FromVoidPtr(nx_loader_exported(i));
        PyObject *key = PyUnicode_FromFormat("__%s", nx_symbols[i].name);
        if (addr == NULL || key == NULL || PyDict_SetItem(d, key, addr) < 0)
            Py_CLEAR(d);
        Py_XDECREF(addr);
        Py_XDECREF(key);
    }
    return d;
}

PyDoc_STRVAR(abi_symbols__doc__, "_abi_symbols()\n--\n\n"
"((name, since, is_rccl_only), ...) for every row of the ABI table (abi.h), in table order.");

static PyObject *abi_symbols(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    PyObject *t = PyTuple_New((Py_ssize_t)nx_nsymbols);
    for (size_t i = 0; t != NULL && i < nx_nsymbols; i++) {
        PyObject *row = Py_BuildValue("(siO)", nx_symbols[i].name, nx_symbols[i].since,
                                      i >= nx_nnccl_symbols ? Py_True : Py_False);
        if (row == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, (Py_ssize_t)i, row);
    }
    return t;
}

PyDoc_STRVAR(abi_resolved__doc__, "_abi_resolved()\n--\n\n"
"{name: address or 0} for every row of the ABI table as the library exports it (RCCL-only rows\n"
"included; 0 for a name it serves only under the older spelling); loads the library.");

static PyObject *abi_resolved(PyObject *module, PyObject *unused)
{
    (void)unused;
    if (nx_loaded(nx_get_state(module)) < 0)
        return NULL;
    PyObject *d = PyDict_New();
    for (size_t i = 0; d != NULL && i < nx_nsymbols; i++) {
        PyObject *addr = PyLong_FromVoidPtr(nx_loader_exported(i));
        if (addr == NULL || PyDict_SetItemString(d, nx_symbols[i].name, addr) < 0)
            Py_CLEAR(d);
        Py_XDECREF(addr);
    }
    return d;
}

PyDoc_STRVAR(abi_aliases__doc__, "_abi_aliases()\n--\n\n"
"((name, older spelling), ...): entry points a library serves under either name (abi.h).");

static PyObject *abi_aliases(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
#define NX_ALIAS_ROW(name, older) "(ss)"
#define NX_ALIAS_ARGS(name, older) , #name, #older
    return Py_BuildValue("(" NCCL_ABI_ALIASES(NX_ALIAS_ROW) ")" NCCL_ABI_ALIASES(NX_ALIAS_ARGS));
#undef NX_ALIAS_ROW
#undef NX_ALIAS_ARGS
}

PyDoc_STRVAR(version_text__doc__, "_version_text(code)\n--\n\n"
"An NCCL version code as 'X.Y.Z', decoded as the loader decodes it: major*10000 + minor*100 + patch\n"
"from 2.9 on (2.30.7 = 23007), major*1000 + minor*100 + patch before (2.8.4 = 2804). The one\n"
"decoder of the package: the Python side formats every version code through it.");

static PyObject *version_text(PyObject *module, PyObject *arg)
{
    (void)module;
    int code;
    if (nx_int(arg, "_version_text", "code", &code) < 0)
        return NULL;
    if (code < 0) {
        PyErr_Format(PyExc_ValueError, "_version_text() argument 'code' must be non-negative, got %d", code);
        return NULL;
    }
    char text[32];
    nx_format_version(code, text, sizeof text);
    return PyUnicode_FromString(text);
}

PyDoc_STRVAR(library_selection__doc__, "_library_selection()\n--\n\n"
"The library-selection environment as the loader reads it (no load is triggered): {'library':\n"
"NCCL_LIBRARY stripped, or None when unset or blank; 'host': whether it names the host backend;\n"
"'dev_dir': NCCL4PY_DEV_DIR or '/dev'; 'amd', 'nvidia': whether a device node of that kind is\n"
"there; 'nodes': the GPU device nodes, kfd first, then nvidia<N> sorted}.");

static int add_node(const char *path, void *list)
{
    PyObject *s = PyUnicode_DecodeFSDefault(path);
    int rc = s != NULL ? PyList_Append((PyObject *)list, s) : -1;
    Py_XDECREF(s);
    return rc;
}

static PyObject *library_selection(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    PyObject *result = NULL;
    sel_library_selection *sel = PyMem_Malloc(sizeof *sel);
    PyObject *nodes = PyList_New(0);
    if (sel == NULL || nodes == NULL) {
        if (sel == NULL)
            PyErr_NoMemory();
        goto done;
    }
    sel_read(sel);
    if (sel_gpu_devices(sel->dev_dir, add_node, nodes) < 0)
        goto done;
    /* kfd stays first; the nvidia<N> nodes come in directory order and are sorted here. */
    Py_ssize_t first = (sel->devices & NX_DEVICE_AMD) && PyList_GET_SIZE(nodes) > 0 ? 1 : 0;
    PyObject *nvidia = PyList_GetSlice(nodes, first, PyList_GET_SIZE(nodes));
    if (nvidia == NULL || PyList_Sort(nvidia) < 0 ||
        PyList_SetSlice(nodes, first, PyList_GET_SIZE(nodes), nvidia) < 0) {
        Py_XDECREF(nvidia);
        goto done;
    }
    Py_DECREF(nvidia);
    result = Py_BuildValue("{s:N,s:O,s:N,s:O,s:O,s:O}", "library",
                           sel->library[0] ? PyUnicode_DecodeFSDefault(sel->library) : Py_NewRef(Py_None), "host",
                           sel->names_host ? Py_True : Py_False, "dev_dir", PyUnicode_DecodeFSDefault(sel->dev_dir),
                           "amd", (sel->devices & NX_DEVICE_AMD) ? Py_True : Py_False, "nvidia",
                           (sel->devices & NX_DEVICE_NVIDIA) ? Py_True : Py_False, "nodes", nodes);
done:
    PyMem_Free(sel);
    Py_XDECREF(nodes);
    return result;
}

PyDoc_STRVAR(mapped_libraries__doc__, "_mapped_libraries()\n--\n\n"
"Paths of every libnccl.so* / librccl.so* mapped in this process (no load is triggered).");

static int collect_names(struct dl_phdr_info *pi, size_t size, void *data)
{
    (void)size;
    const char *name = pi->dlpi_name;
    if (name == NULL || *name == '\0')
        return 0;
    const char *b = strrchr(name, '/');
    b = b ? b + 1 : name;
    if (strncmp(b, "libnccl.so", 10) != 0 && strncmp(b, "librccl.so", 10) != 0)
        return 0;
    PyObject *s = PyUnicode_DecodeFSDefault(name);
    if (s == NULL || PyList_Append((PyObject *)data, s) < 0)
        PyErr_Clear();
    Py_XDECREF(s);
    return 0;
}

static PyObject *mapped_libraries(PyObject *module, PyObject *unused)
{
    (void)module, (void)unused;
    PyObject *list = PyList_New(0);
    if (list != NULL)
        dl_iterate_phdr(collect_names, list);
    return list;
}

static PyMethodDef library_methods[] = {
    {"get_library_path", get_library_path, METH_NOARGS, get_library_path__doc__},
    {"get_library_flavour", get_library_flavour, METH_NOARGS, get_library_flavour__doc__},
    {"get_load_attempts", get_load_attempts, METH_NOARGS, get_load_attempts__doc__},
    {"_library_info", library_info, METH_NOARGS, library_info__doc__},
    {"_host_library_path", host_library_path, METH_NOARGS, host_library_path__doc__},
    {"_inspect_function_pointers", inspect_function_pointers, METH_NOARGS, inspect_function_pointers__doc__},
    {"_abi_symbols", abi_symbols, METH_NOARGS, abi_symbols__doc__},
    {"_abi_resolved", abi_resolved, METH_NOARGS, abi_resolved__doc__},
    {"_abi_aliases", abi_aliases, METH_NOARGS, abi_aliases__doc__},
    {"_mapped_libraries", mapped_libraries, METH_NOARGS, mapped_libraries__doc__},
    {"_library_selection", library_selection, METH_NOARGS, library_selection__doc__},
    {"_version_text", version_text, METH_O, version_text__doc__},
    {NULL, NULL, 0, NULL},
};

int nx_library_setup(PyObject *module, nx_state *st)
{
    (void)st;
    /* The NCCL version whose header we implement (nccl_abi.h), the code that structs are stamped
     * with; nccl.bindings.nccl.__version__ is its text, and nccl.core's VersionInfo.nccl_bindings
     * (as nccl4py 0.6.0 reports its bindings' header version). */
    if (PyModule_AddIntConstant(module, "_ABI_VERSION", NCCL_ABI_API_VERSION) < 0)
        return -1;
    return PyModule_AddFunctions(module, library_methods);
}
