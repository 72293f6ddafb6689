/* The config= of nccl.core's collectives (nccl4py 0.6.0): an NCCLCollConfig (or a bindings
 * CollConfig) turned into an ncclCollConfig_t, and the one call of the matching ncclXxxConfig
 * entry point. Only the calls that pass a config come here; the plain calls in collectives.c keep
 * their straight line. docs/compatibility.md lists the rule for libraries without the entry points:
 * a default config (every field None, no vendor options) runs as the plain call, any other config
 * raises FunctionNotFoundError, never silently dropped.
 *
 * Reading the ten fields costs more than the call itself, so the struct built from an
 * NCCLCollConfig is kept in the config's __dict__ (a capsule under "_nx_coll_config", which
 * NCCLCollConfig.__getstate__ leaves out) with the field values it was built from; the next call
 * reuses it when every field is still the very same object. The capsule holds those values, so
 * their addresses cannot be reused while it lives: an assignment to any field, even of an equal
 * value, is seen, and the config is rebuilt from its current values as before. Only configs made
 * of immutable values are kept (vendor_options a tuple, launch_completion_event None or an int):
 * a list could change in place, an event object's handle is asked for at each use.
 *
 * One table, coll_fields, names the fields of NCCLCollConfig read here: it drives the conversion,
 * the interned names in the module state and the values a cached struct is checked against. */
#include "core/coll_config.h"

#include <stddef.h>
#include <string.h>

#include "core/core.h"

#include "module/state.h"
#include "structs/struct_layouts.h"
#include "structs/structs.h"

typedef nx_coll_config coll_config;

/* How a field of NCCLCollConfig becomes its member of ncclCollConfig_t. */
typedef enum {
    CF_INT,    /* int or None */
    CF_STR,    /* str or None, kept alive while the struct is used */
    CF_TAG,    /* int in [0, 2**64) or None */
    CF_EVENT,  /* an event (int handle or cuda.core Event) or None */
    CF_VENDOR, /* a sequence of VendorOption: the ext chain */
} coll_field_kind;

typedef struct {
    const char *name; /* the dataclass field */
    coll_field_kind kind;
    size_t offset;    /* its member of ncclCollConfig_t */
} coll_field;

/* NCCLCollConfig's fields, in the order they are read (so the first bad one is reported). */
static const coll_field coll_fields[] = {
    {"min_ctas", CF_INT, offsetof(ncclCollConfig_t, minCTAs)},
    {"max_ctas", CF_INT, offsetof(ncclCollConfig_t, maxCTAs)},
    {"nvls_ctas", CF_INT, offsetof(ncclCollConfig_t, nvlsCTAs)},
    {"cga_cluster_size", CF_INT, offsetof(ncclCollConfig_t, cgaClusterSize)},
    {"force_alg_selection", CF_INT, offsetof(ncclCollConfig_t, forceAlgSelection)},
    {"cta_policy", CF_INT, offsetof(ncclCollConfig_t, CTAPolicy)},
    {"alg_selection", CF_STR, offsetof(ncclCollConfig_t, algSelection)},
    {"user_profiler_tag", CF_TAG, offsetof(ncclCollConfig_t, userProfilerTag)},
    {"launch_completion_event", CF_EVENT, offsetof(ncclCollConfig_t, launchCompletionEvent)},
    {"vendor_options", CF_VENDOR, offsetof(ncclCollConfig_t, ext)},
};
#define NFIELDS ((int)(sizeof coll_fields / sizeof coll_fields[0]))

static const char capsule_name[] = "nccl._ext.coll_config";

/* A struct built from an NCCLCollConfig, owned by its capsule. */
typedef struct {
    ncclCollConfig_t cfg;
    int is_default;
    struct {
        PyObject *name, *value; /* a field's interned name, and the value it was built from (owned) */
    } seen[NFIELDS];            /* in coll_fields' order */
    PyObject *keep;             /* what the pointers in cfg point into (owned) */
    ncclConfigExt_t ext[];      /* cfg.ext points here when there are vendor options */
} built_config;

/* The interned name of coll_fields[i] (borrowed). */
static PyObject *field_name(const nx_state *st, int i) { return PyTuple_GET_ITEM(st->coll_config.names, i); }

static NX_COLD PyObject *wrong_type(nx_state *st, const char *fname, PyObject *o)
{
    (void)st;
    return PyErr_Format(PyExc_TypeError, "%s: config must be an NCCLCollConfig or None, got %s", fname,
                        Py_TYPE(o)->tp_name);
}

/* getattr(o, name) as a new reference. */
static PyObject *field(PyObject *o, const char *name) { return PyObject_GetAttrString(o, name); }

static int vendor_option(nx_state *st, PyObject *o, const char *fname, Py_ssize_t i, ncclConfigExt_t *e,
                         PyObject *keep)
{
    PyObject *vid = NULL, *oid = NULL, *iv = NULL, *sv = NULL, *rv = NULL;
    int r = -1;
    if ((vid = field(o, "vendor_id")) == NULL || (oid = field(o, "option_id")) == NULL ||
        (iv = field(o, "int_value")) == NULL || (sv = field(o, "str_value")) == NULL ||
        (rv = field(o, "raw_value")) == NULL)
        goto done;
    if (nx_int(vid, fname, "vendor_options[].vendor_id", &e->key.vendorId) < 0 ||
        nx_int(oid, fname, "vendor_options[].option_id", &e->key.optionId) < 0)
        goto done;
    if (iv != Py_None) {
        if (nx_int(iv, fname, "vendor_options[].int_value", &e->val.i) < 0)
            goto done;
    } else if (sv != Py_None) {
        if (!PyUnicode_Check(sv)) {
            PyErr_Format(PyExc_TypeError, "%s: vendor_options[%zd].str_value must be str, got %s", fname, i,
                         Py_TYPE(sv)->tp_name);
            goto done;
        }
        if ((e->val.s = PyUnicode_AsUTF8(sv)) == NULL || PyList_Append(keep, sv) < 0)
            goto done;
    } else if (rv != Py_None) {
        if (nx_addr(rv, fname, "vendor_options[].raw_value", &e->val.raw) < 0)
            goto done;
    } else {
        nx_invalid(st, "%s: vendor_options[%zd] has no value", fname, i);
        goto done;
    }
    r = 0;
done:
    Py_XDECREF(vid);
    Py_XDECREF(oid);
    Py_XDECREF(iv);
    Py_XDECREF(sv);
    Py_XDECREF(rv);
    return r;
}

/* config.alg_selection: a str, kept alive by out->keep. */
static int str_field(PyObject *v, const char *fname, const char **slot, coll_config *out)
{
    if (!PyUnicode_Check(v)) {
        PyErr_Format(PyExc_TypeError, "%s: config.alg_selection must be str, got %s", fname, Py_TYPE(v)->tp_name);
        return -1;
    }
    *slot = PyUnicode_AsUTF8(v);
    return *slot == NULL || PyList_Append(out->keep, v) < 0 ? -1 : 0;
}

/* config.user_profiler_tag: an int in [0, 2**64). */
static int tag_field(PyObject *v, const char *fname, uint64_t *slot)
{
    unsigned long long tag = PyLong_Check(v) ? PyLong_AsUnsignedLongLong(v) : (unsigned long long)-1;
    if (!PyLong_Check(v) || (tag == (unsigned long long)-1 && PyErr_Occurred())) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: config.user_profiler_tag must be an int in [0, 2**64), got %R", fname, v);
        return -1;
    }
    *slot = tag;
    return 0;
}

/* config.launch_completion_event: its handle, asked of the event at each use. */
static int event_field(nx_state *st, PyObject *v, const char *fname, cudaEvent_t *slot)
{
    PyObject *fn = nx_lazy(st, NX_LAZY_GET_EVENT_PTR);
    PyObject *h = fn ? PyObject_CallOneArg(fn, v) : NULL;
    void *ev = NULL;
    int r = h ? nx_addr(h, fname, "config.launch_completion_event", &ev) : -1;
    Py_XDECREF(h);
    *slot = (cudaEvent_t)ev;
    return r;
}

static const char ext_capsule_name[] = "nccl._ext.coll_config.ext";

static void ext_capsule_free(PyObject *cap) { PyMem_Free(PyCapsule_GetPointer(cap, ext_capsule_name)); }

/* out->ext for n vendor options past NX_SMALL_EXT: PyMem memory owned by a capsule in out->keep,
 * so that releasing keep frees it. 0, or -1 with the exception. */
static int heap_ext(coll_config *out, Py_ssize_t n)
{
    ncclConfigExt_t *ext = PyMem_Calloc((size_t)n, sizeof *ext);
    if (ext == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    PyObject *cap = PyCapsule_New(ext, ext_capsule_name, ext_capsule_free);
    if (cap == NULL) {
        PyMem_Free(ext);
        return -1;
    }
    int r = PyList_Append(out->keep, cap);
    Py_DECREF(cap);
    if (r == 0)
        out->ext = ext;
    return r;
}

/* config.vendor_options: the ext chain in out->ext (past NX_SMALL_EXT, memory out->keep owns);
 * *set when it is not empty. */
static int vendor_field(nx_state *st, PyObject *v, const char *fname, coll_config *out, int *set)
{
    /* owned: an option's properties run Python code that may change the caller's list */
    PyObject *seq = nx_seq_snapshot(v);
    Py_ssize_t n;
    int r = -1;
    if (seq == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_SetString(PyExc_TypeError, "config.vendor_options must be a sequence of VendorOption");
        }
        goto done;
    }
    if (PyList_Append(out->keep, seq) < 0)
        goto done;
    n = PyTuple_GET_SIZE(seq);
    if (n > NX_SMALL_EXT && heap_ext(out, n) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (vendor_option(st, PyTuple_GET_ITEM(seq, i), fname, i, &out->ext[i], out->keep) < 0)
            goto done;
        out->ext[i].next = i + 1 < n ? &out->ext[i + 1] : NULL;
    }
    if (n > 0) {
        out->cfg.ext = out->ext;
        *set = 1;
    }
    out->n_ext = n;
    r = 0;
done:
    Py_XDECREF(seq); /* out->keep holds it */
    return r;
}

/* The value v of field f into out->cfg; *set when it differs from the initializer. */
static int convert_field(nx_state *st, const coll_field *f, PyObject *v, const char *fname, coll_config *out,
                         int *set)
{
    char *slot = (char *)&out->cfg + f->offset;
    if (v == Py_None && f->kind != CF_VENDOR)
        return 0; /* the initializer's value */
    if (f->kind != CF_VENDOR)
        *set = 1;
    switch (f->kind) {
    case CF_INT: return nx_int(v, fname, f->name, (int *)slot);
    case CF_STR: return str_field(v, fname, (const char **)slot, out);
    case CF_TAG: return tag_field(v, fname, (uint64_t *)slot);
    case CF_EVENT: return event_field(st, v, fname, (cudaEvent_t *)slot);
    default: return vendor_field(st, v, fname, out, set);
    }
}

/* Reads an NCCLCollConfig into out (initialised by the caller), field by field as coll_fields
 * says. 0, or -1 with an exception. */
static int from_dataclass(nx_state *st, PyObject *o, const char *fname, coll_config *out)
{
    int set = 0, r = 0;
    for (int i = 0; i < NFIELDS && r == 0; i++) {
        PyObject *v = PyObject_GetAttr(o, field_name(st, i));
        r = v != NULL ? convert_field(st, &coll_fields[i], v, fname, out, &set) : -1;
        Py_XDECREF(v);
    }
    out->is_default = !set;
    return r;
}

static void built_free(built_config *b)
{
    for (int i = 0; i < NFIELDS; i++) {
        Py_XDECREF(b->seen[i].name);
        Py_XDECREF(b->seen[i].value);
    }
    Py_XDECREF(b->keep);
    PyMem_Free(b);
}

static void capsule_free(PyObject *cap) { built_free(PyCapsule_GetPointer(cap, capsule_name)); }

/* The capsule of the struct built from dict's current field values (a new reference), or NULL:
 * none, a field assigned since, or an error (set). Every item is owned while it is compared: a
 * lookup may run a key's __eq__, which may change the dict (docs/architecture.md). */
static PyObject *cached(nx_state *st, PyObject *dict)
{
    PyObject *cap;
    if (PyDict_GetItemRef(dict, st->coll_config.cache_key, &cap) <= 0)
        return NULL;
    if (!PyCapsule_IsValid(cap, capsule_name)) {
        Py_DECREF(cap);
        return NULL;
    }
    const built_config *b = PyCapsule_GetPointer(cap, capsule_name);
    for (int i = 0; i < NFIELDS; i++) {
        PyObject *v;
        int found = PyDict_GetItemRef(dict, b->seen[i].name, &v);
        Py_XDECREF(v); /* compared by identity: the capsule holds the value it was built from */
        if (found <= 0 || v != b->seen[i].value) {
            Py_DECREF(cap);
            return NULL;
        }
    }
    return cap;
}

/* Whether a field's value cannot change in place, nor its meaning between calls. */
static int immutable_value(coll_field_kind kind, PyObject *v)
{
    if (kind == CF_VENDOR)
        return PyTuple_CheckExact(v);
    if (kind == CF_EVENT)
        return v == Py_None || PyLong_CheckExact(v);
    return 1;
}

/* Keeps the struct just built in out in dict, for the next calls, when every field is an
 * immutable value held in dict. 0, or -1 with an exception. */
static int store(nx_state *st, PyObject *dict, const coll_config *out)
{
    PyObject *values[NFIELDS] = {NULL};
    int r = -1;
    for (int i = 0; i < NFIELDS; i++) {
        int found = PyDict_GetItemRef(dict, field_name(st, i), &values[i]); /* owned, as in cached() */
        if (found <= 0 || !immutable_value(coll_fields[i].kind, values[i])) {
            r = found < 0 ? -1 : 0;
            goto done;
        }
    }
    Py_ssize_t n = out->n_ext;
    built_config *b = PyMem_Calloc(1, sizeof *b + (size_t)n * sizeof(ncclConfigExt_t));
    if (b == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    b->cfg = out->cfg;
    b->is_default = out->is_default;
    for (Py_ssize_t i = 0; i < n; i++) {
        b->ext[i] = out->ext[i];
        b->ext[i].next = i + 1 < n ? &b->ext[i + 1] : NULL;
    }
    if (n > 0)
        b->cfg.ext = b->ext;
    for (int i = 0; i < NFIELDS; i++) {
        b->seen[i].name = Py_NewRef(field_name(st, i));
        b->seen[i].value = Py_NewRef(values[i]);
    }
    b->keep = Py_NewRef(out->keep);
    PyObject *cap = PyCapsule_New(b, capsule_name, capsule_free);
    if (cap == NULL) {
        built_free(b);
        goto done;
    }
    r = PyDict_SetItem(dict, st->coll_config.cache_key, cap);
    Py_DECREF(cap);
done:
    for (int i = 0; i < NFIELDS; i++)
        Py_XDECREF(values[i]);
    return r;
}

/* Fills out from the config argument o (not None). 0, or -1 with TypeError/NcclInvalid. */
static int config_arg(nx_state *st, PyObject *o, const char *fname, coll_config *out)
{
    out->keep = NULL;
    nx_struct_descs[NX_STRUCT_COLL_CONFIG].init(&out->cfg);
    out->ext = out->small;
    out->is_default = 1;
    out->use = &out->cfg;
    const ncclCollConfig_t *raw = nx_struct_storage(st, o, NX_STRUCT_COLL_CONFIG);
    if (raw != NULL) { /* a bindings CollConfig: used as the caller filled it */
        ncclCollConfig_t init = out->cfg;
        out->cfg = *raw;
        out->is_default = memcmp(&init, raw, sizeof init) == 0;
        return (out->keep = Py_NewRef(o)) != NULL ? 0 : -1;
    }
    PyObject *cls = nx_lazy(st, NX_LAZY_COLL_CONFIG);
    if (cls == NULL)
        return -1;
    int ok = PyObject_IsInstance(o, cls);
    if (ok <= 0) {
        if (ok == 0)
            wrong_type(st, fname, o);
        return -1;
    }
    if (Py_TYPE(o) != (PyTypeObject *)cls) { /* a subclass may compute its fields: read them each time */
        if ((out->keep = PyList_New(0)) == NULL)
            return -1;
        return from_dataclass(st, o, fname, out);
    }
    PyObject *dict = PyObject_GenericGetDict(o, NULL);
    if (dict == NULL)
        return -1;
    int r = -1;
    PyObject *cap = cached(st, dict);
    if (cap != NULL) {
        const built_config *b = PyCapsule_GetPointer(cap, capsule_name);
        out->use = &b->cfg;
        out->is_default = b->is_default;
        out->keep = cap;
        r = 0;
    } else if (!PyErr_Occurred() && (out->keep = PyList_New(0)) != NULL &&
               from_dataclass(st, o, fname, out) == 0) {
        r = store(st, dict, out);
    }
    Py_DECREF(dict);
    return r;
}

int nx_coll_config_take(nx_state *st, PyObject *config, const char *fname, nx_coll_config *out)
{
    if (config_arg(st, config, fname, out) == 0)
        return 0;
    Py_CLEAR(out->keep);
    return -1;
}

PyObject *nx_coll_config_run(nx_state *st, const nx_coll_call *a, const nx_coll_config *c, nx_trace_ring *ring)
{
    if (nx_loaded(st) < 0)
        return NULL;
    void (*fn)(void); /* the ncclXxxConfig entry point, or NULL on a library without it */
    memcpy(&fn, nx_coll_config_slot(a->kind), sizeof fn);
    if (fn == NULL && !c->is_default)
        return nx_raise_function_not_found(st, nx_coll_config_name(a->kind), NULL);
    if (fn == NULL && nx_require(st, nx_coll_plain_slot(a->kind)) < 0)
        return NULL;
    nx_trace_call tc = nx_coll_trace_call(a->kind, a);
    nx_trace_mark tm = nx_trace_enter(ring, &tc);
    ncclResult_t rc = nx_coll_run(a->kind, a, fn != NULL ? c->use : NULL);
    nx_trace_leave(tm, rc);
    return nx_none_or_error(st, rc, a->comm);
}

int nx_coll_config_cache_traverse(nx_coll_config_cache *c, visitproc visit, void *arg)
{
    Py_VISIT(c->cache_key);
    Py_VISIT(c->names);
    return 0;
}

void nx_coll_config_cache_clear(nx_coll_config_cache *c)
{
    Py_CLEAR(c->cache_key);
    Py_CLEAR(c->names);
}

int nx_coll_config_setup(PyObject *module, nx_state *st)
{
    (void)module;
    if ((st->coll_config.cache_key = PyUnicode_InternFromString("_nx_coll_config")) == NULL ||
        (st->coll_config.names = PyTuple_New(NFIELDS)) == NULL)
        return -1;
    for (int i = 0; i < NFIELDS; i++) {
        PyObject *name = PyUnicode_InternFromString(coll_fields[i].name);
        if (name == NULL)
            return -1;
        PyTuple_SET_ITEM(st->coll_config.names, i, name);
    }
    return 0;
}
