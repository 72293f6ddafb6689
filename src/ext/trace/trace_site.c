/* Call sites of the flight recorder (docs/api/trace.md#what-is-recorded): the Python file, line
 * and function that made a recorded call, as an index into one process-wide table of C strings.
 *
 * On the call path the recorder reads the calling frame's code object and instruction offset
 * (no frame object is made, no reference kept) and looks the pair up in the ring's small cache;
 * only a miss resolves the line (PyCode_Addr2Line) and copies the names, once per call site. The
 * dump then needs no Python at all. A cached pair is checked against the code object's file and
 * first line, so a code object freed and another allocated at its address is not taken for it. */
#include "trace/trace.h"

#if PY_VERSION_HEX < 0x030B0000
/* struct _frame and PyFrame_GetBack are declared here, not by Python.h, before 3.11 */
#include <frameobject.h>
#endif

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define SITE_CHUNK 256
#define SITE_CHUNKS 256   /* at most 65,535 sites; later ones are recorded as unknown */
#define SITE_HASH (1u << 17)

typedef struct {
    const void *code, *filename;
    int lasti, firstlineno;
    char *file, *func;
    int line;
    int internal; /* made from nccl4py's own Python code: attribute to its caller */
} site_row;

static pthread_mutex_t site_mu = PTHREAD_MUTEX_INITIALIZER;
static site_row *chunks[SITE_CHUNKS]; /* published with release order, never freed */
static uint32_t nsites = 1;           /* index 0 is "no site" (site_mu; read with acquire) */
static uint32_t *hash;                /* site indices by (code, lasti), 0 empty (site_mu) */
static char *package_dir;             /* ".../nccl/" */
#define MAX_FRONT_DIRS 4
static char *front_dirs[MAX_FRONT_DIRS]; /* frameworks that call us for the user (site_mu) */
static int nfront_dirs;

void nx_trace_set_package_dir(PyObject *module)
{
    PyObject *f = PyModule_GetFilenameObject(module);
    const char *path = f != NULL ? PyUnicode_AsUTF8(f) : NULL;
    const char *slash = path != NULL ? strrchr(path, '/') : NULL;
    pthread_mutex_lock(&site_mu);
    if (package_dir == NULL && slash != NULL && (package_dir = malloc((size_t)(slash - path) + 2)) != NULL) {
        memcpy(package_dir, path, (size_t)(slash - path) + 1);
        package_dir[slash - path + 1] = '\0';
    }
    pthread_mutex_unlock(&site_mu);
    Py_XDECREF(f);
    PyErr_Clear();
}

static site_row *row(uint32_t i)
{
    site_row *c = __atomic_load_n(&chunks[i / SITE_CHUNK], __ATOMIC_ACQUIRE);
    return c != NULL ? &c[i % SITE_CHUNK] : NULL;
}

void nx_trace_site_get(uint32_t site, const char **file, int *line, const char **func)
{
    site_row *r = site > 0 && site < __atomic_load_n(&nsites, __ATOMIC_ACQUIRE) ? row(site) : NULL;
    *file = r != NULL ? r->file : NULL;
    *line = r != NULL ? r->line : 0;
    *func = r != NULL ? r->func : NULL;
}

/* ---- the calling frame ---- */

/* This thread's state without PyThreadState_Get's check (the caller holds an attached thread
 * state: it is running a Python call). */
#if PY_VERSION_HEX >= 0x030D0000
#define NX_TSTATE() PyThreadState_GetUnchecked()
#else
#define NX_TSTATE() _PyThreadState_UncheckedGet()
#endif

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
/* CPython 3.11 has no accessor for an interpreter frame: the leading fields of its
 * _PyInterpreterFrame (Include/internal/pycore_frame.h, 3.11), which are fixed for the series. */
typedef struct {
    PyObject *f_func, *f_globals, *f_builtins, *f_locals;
    PyCodeObject *f_code;
    PyObject *frame_obj;
    void *previous;
    _Py_CODEUNIT *prev_instr;
} frame311;
#endif

/* The code object (borrowed: the running frame holds it) and the byte offset of the instruction
 * of the innermost Python frame of this thread; 0 when there is none. */
static int current_frame(PyCodeObject **code, int *lasti)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyThreadState *ts = NX_TSTATE();
#if PY_VERSION_HEX >= 0x030D0000
    struct _PyInterpreterFrame *f = ts->current_frame;
#else
    struct _PyInterpreterFrame *f = ts->cframe->current_frame;
#endif
    if (f == NULL)
        return 0;
    PyObject *co = PyUnstable_InterpreterFrame_GetCode(f);
    if (co == NULL || !PyCode_Check(co)) {
        Py_XDECREF(co);
        return 0;
    }
    *lasti = PyUnstable_InterpreterFrame_GetLasti(f);
    *code = (PyCodeObject *)co;
    Py_DECREF(co);
    return 1;
#elif PY_VERSION_HEX >= 0x030B0000
    PyThreadState *ts = NX_TSTATE();
    const frame311 *f = ts->cframe != NULL ? (const frame311 *)ts->cframe->current_frame : NULL;
    if (f == NULL || f->f_code == NULL)
        return 0;
    *code = f->f_code;
    *lasti = (int)((const char *)f->prev_instr - (const char *)_PyCode_CODE(f->f_code));
    return 1;
#else
    PyFrameObject *f = PyEval_GetFrame();
    if (f == NULL)
        return 0;
    *code = f->f_code;
    *lasti = f->f_lasti * (int)sizeof(_Py_CODEUNIT);
    return 1;
#endif
}

/* ---- resolving a site (once per call site) ---- */

static char *dup_utf8(PyObject *s)
{
    const char *t = s != NULL && PyUnicode_Check(s) ? PyUnicode_AsUTF8(s) : NULL;
    if (t == NULL) {
        PyErr_Clear();
        return NULL;
    }
    return strdup(t);
}

/* Adds a directory whose Python code calls nccl4py on its user's behalf (nccl.torch adds torch's:
 * a collective made through torch.distributed is attributed to the line that called torch). */
int nx_trace_add_front_dir(const char *dir)
{
    int rc = 0;
    pthread_mutex_lock(&site_mu);
    int seen = 0;
    for (int i = 0; i < nfront_dirs; i++)
        seen |= strcmp(front_dirs[i], dir) == 0;
    if (!seen) {
        if (nfront_dirs == MAX_FRONT_DIRS || (front_dirs[nfront_dirs] = strdup(dir)) == NULL)
            rc = -1;
        else
            nfront_dirs++;
    }
    pthread_mutex_unlock(&site_mu);
    return rc;
}

static int is_internal(const char *file)
{
    if (file == NULL)
        return 0;
    size_t n = strlen(file), k = strlen("/contextlib.py");
    if (n >= k && strcmp(file + n - k, "/contextlib.py") == 0)
        return 1;
    if (package_dir != NULL && strncmp(file, package_dir, strlen(package_dir)) == 0)
        return 1;
    int front = 0;
    pthread_mutex_lock(&site_mu);
    for (int i = 0; i < nfront_dirs && !front; i++)
        front = strncmp(file, front_dirs[i], strlen(front_dirs[i])) == 0;
    pthread_mutex_unlock(&site_mu);
    return front;
}

/* A slot for (code, lasti): code objects are at least 16-byte aligned; instructions are 2 bytes. */
static inline uint32_t hash_of(const void *code, int lasti)
{
    uint32_t h = (uint32_t)((uintptr_t)code >> 4) * 0x9E3779B1u ^ (uint32_t)lasti * 0x85EBCA77u;
    return h ^ (h >> 15);
}

/* The table's row for the key, or 0 (site_mu held). */
static uint32_t find_row(const PyCodeObject *co, int lasti, uint32_t *slot)
{
    if (hash == NULL && (hash = calloc(SITE_HASH, sizeof *hash)) == NULL)
        return 0;
    for (uint32_t h = hash_of(co, lasti) & (SITE_HASH - 1), probes = 0; probes < 64; h = (h + 1) & (SITE_HASH - 1), probes++) {
        uint32_t i = hash[h];
        if (i == 0) {
            *slot = h;
            return 0;
        }
        site_row *r = row(i);
        if (r->code == co && r->lasti == lasti && r->filename == co->co_filename && r->firstlineno == co->co_firstlineno)
            return i;
    }
    *slot = UINT32_MAX;
    return 0;
}

/* Adds the site (site_mu held); 0 when the table is full. */
static uint32_t add_row(const site_row *proto, uint32_t slot)
{
    uint32_t i = nsites;
    if (slot == UINT32_MAX || i >= SITE_CHUNK * SITE_CHUNKS)
        return 0;
    if (chunks[i / SITE_CHUNK] == NULL) {
        site_row *c = calloc(SITE_CHUNK, sizeof *c);
        if (c == NULL)
            return 0;
        __atomic_store_n(&chunks[i / SITE_CHUNK], c, __ATOMIC_RELEASE);
    }
    *row(i) = *proto;
    hash[slot] = i;
    __atomic_store_n(&nsites, i + 1, __ATOMIC_RELEASE);
    return i;
}

/* The table's index of (co, lasti), resolving it on first sight. The names are computed with no
 * lock held (they run Python's own code), then inserted. */
static NX_COLD uint32_t resolve(PyCodeObject *co, int lasti, int *internal)
{
    uint32_t slot, i;
    pthread_mutex_lock(&site_mu);
    i = find_row(co, lasti, &slot);
    pthread_mutex_unlock(&site_mu);
    if (i != 0) {
        *internal = row(i)->internal;
        return i;
    }
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *name = co->co_qualname;
#else
    PyObject *name = co->co_name;
#endif
    site_row proto = {co, co->co_filename, lasti, co->co_firstlineno, dup_utf8(co->co_filename), dup_utf8(name),
                      PyCode_Addr2Line(co, lasti), 0};
    proto.internal = is_internal(proto.file);
    pthread_mutex_lock(&site_mu);
    if ((i = find_row(co, lasti, &slot)) == 0 && (i = add_row(&proto, slot)) != 0)
        proto.file = proto.func = NULL; /* the table owns them now */
    pthread_mutex_unlock(&site_mu);
    free(proto.file);
    free(proto.func);
    *internal = i != 0 ? row(i)->internal : 0;
    return i;
}

/* The first frame outside nccl4py's own code and the frameworks' (nx_trace_add_front_dir), from
 * the innermost one up (a call through `with nccl.group()`, Communicator.from_env or torch). Walks frame objects, which CPython may have to
 * create: this happens only for calls that nccl4py's Python code makes. */
static NX_COLD uint32_t caller_outside(void)
{
    PyFrameObject *f = PyThreadState_GetFrame(PyThreadState_Get());
    uint32_t site = 0;
    while (f != NULL) {
        PyCodeObject *co = PyFrame_GetCode(f);
#if PY_VERSION_HEX >= 0x030B0000
        int lasti = PyFrame_GetLasti(f);
#else
        int lasti = f->f_lasti * (int)sizeof(_Py_CODEUNIT);
#endif
        int internal;
        uint32_t s = resolve(co, lasti, &internal);
        Py_DECREF(co);
        if (!internal) {
            site = s;
            break;
        }
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    Py_XDECREF(f);
    return site;
}

int nx_stacklevel_outside_package(void)
{
    int level = 1;
    PyFrameObject *f = PyThreadState_GetFrame(PyThreadState_Get());
    while (f != NULL) {
        PyCodeObject *co = PyFrame_GetCode(f);
        const char *file = PyUnicode_AsUTF8(co->co_filename);
        int internal = file != NULL ? is_internal(file) : (PyErr_Clear(), 0);
        Py_DECREF(co);
        if (!internal)
            break;
        level++;
        PyFrameObject *back = PyFrame_GetBack(f);
        Py_DECREF(f);
        f = back;
    }
    Py_XDECREF(f);
    return level;
}

uint32_t nx_trace_site(nx_trace_site_slot *cache)
{
    PyCodeObject *co;
    int lasti;
    if (!current_frame(&co, &lasti))
        return 0;
    nx_trace_site_slot *s = &cache[hash_of(co, lasti) & (NX_TRACE_SITE_CACHE - 1)];
    if (NX_LIKELY(s->code == co && s->lasti == lasti && s->filename == co->co_filename &&
                  s->firstlineno == co->co_firstlineno))
        return s->site != UINT32_MAX ? s->site : caller_outside();
    int internal;
    uint32_t site = resolve(co, lasti, &internal);
    s->code = co;
    s->filename = co->co_filename;
    s->lasti = lasti;
    s->firstlineno = co->co_firstlineno;
    s->site = internal ? UINT32_MAX : site;
    return internal ? caller_outside() : site;
}
