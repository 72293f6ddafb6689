/* DLPack capsules for the cuda.core shim: exporting a Buffer (producer) and taking ownership of a
 * capsule (consumer, for StridedMemoryView). The structs are the shared declaration of
 * src/include/dlpack_abi.h.
 *
 * Producer lifetime: the managed tensor's manager_ctx holds a strong reference to the exporting
 * object, dropped by the deleter. The capsule's destructor calls the deleter only while the
 * capsule is unconsumed; a consumer renames it to "used_*" and calls the deleter itself. */
#include "hip_module.h"

#include <stdint.h>
#include <string.h>

#include "dlpack_abi.h"

/* The capsule names. PyCapsule keeps the name pointer, so these must be static strings. */
static const char name_tensor[] = DL_CAPSULE;
static const char name_versioned[] = DL_CAPSULE_VERSIONED;
static const char name_used_tensor[] = DL_CAPSULE_USED;
static const char name_used_versioned[] = DL_CAPSULE_USED_VERSIONED;

/* One allocation per export: the managed struct and the one-element shape it points to. */
typedef struct {
    dl_managed managed;
    int64_t shape[1];
} export_unversioned;

typedef struct {
    dl_managed_versioned managed;
    int64_t shape[1];
} export_versioned;

/* Deleters may run on any thread, with or without the GIL (DLPack allows both). */
static void delete_unversioned(dl_managed *self)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_XDECREF((PyObject *)self->manager_ctx);
    PyGILState_Release(gil);
    PyMem_RawFree(self);
}

static void delete_versioned(dl_managed_versioned *self)
{
    PyGILState_STATE gil = PyGILState_Ensure();
    Py_XDECREF((PyObject *)self->manager_ctx);
    PyGILState_Release(gil);
    PyMem_RawFree(self);
}

/* Called when a capsule dies. Runs with the GIL; must not disturb a pending exception. */
static void capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, name_tensor)) {
        dl_managed *m = PyCapsule_GetPointer(capsule, name_tensor);
        if (m->deleter != NULL)
            m->deleter(m);
    } else if (PyCapsule_IsValid(capsule, name_versioned)) {
        dl_managed_versioned *m = PyCapsule_GetPointer(capsule, name_versioned);
        if (m->deleter != NULL)
            m->deleter(m);
    }
}

static void fill_tensor(dl_tensor *t, int64_t *shape, uintptr_t ptr, size_t nbytes, int device_type, int device_id)
{
    shape[0] = (int64_t)nbytes;
    t->data = (void *)ptr;
    t->device.device_type = device_type;
    t->device.device_id = device_id;
    t->ndim = 1;
    t->dtype.code = kDLInt;
    t->dtype.bits = 8;
    t->dtype.lanes = 1;
    t->shape = shape;
    t->strides = NULL; /* compact row-major */
    t->byte_offset = 0;
}

PyDoc_STRVAR(dlpack_export__doc__,
"dlpack_export(owner, ptr, nbytes, device_type, device_id, versioned, readonly, /)\n--\n\n"
"A DLPack capsule for nbytes at ptr as a 1-D int8 tensor with NULL strides. The capsule keeps\n"
"owner alive until the consumer's deleter runs, or until the capsule dies unconsumed.\n"
"versioned selects 'dltensor_versioned' (DLPack 1.0) over 'dltensor'.");

static PyObject *dlpack_export(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    uintptr_t ptr;
    size_t nbytes;
    int device_type, device_id;
    if (!nh_check_nargs("dlpack_export", nargs, 7, 7) || !nh_handle_converter(args[1], &ptr) ||
        !nh_size_converter(args[2], &nbytes) || !nh_int_converter(args[3], &device_type) ||
        !nh_int_converter(args[4], &device_id))
        return NULL;
    int versioned = PyObject_IsTrue(args[5]);
    int readonly = versioned < 0 ? -1 : PyObject_IsTrue(args[6]);
    if (versioned < 0 || readonly < 0)
        return NULL;
    if (nbytes > (size_t)INT64_MAX) {
        PyErr_SetString(PyExc_OverflowError, "nbytes does not fit in a DLPack shape");
        return NULL;
    }
    PyObject *owner = args[0]; /* borrowed; a reference is taken once the capsule exists */
    PyObject *capsule = NULL;
    if (versioned) {
        export_versioned *e = PyMem_RawCalloc(1, sizeof *e);
        if (e == NULL)
            return PyErr_NoMemory();
        e->managed.version.major = 1;
        e->managed.version.minor = 0;
        e->managed.deleter = delete_versioned;
        e->managed.flags = readonly ? DL_FLAG_READ_ONLY : 0;
        fill_tensor(&e->managed.dl_tensor, e->shape, ptr, nbytes, device_type, device_id);
        capsule = PyCapsule_New(&e->managed, name_versioned, capsule_destructor);
        if (capsule == NULL) {
            PyMem_RawFree(e);
            return NULL;
        }
        e->managed.manager_ctx = Py_NewRef(owner);
    } else {
        export_unversioned *e = PyMem_RawCalloc(1, sizeof *e);
        if (e == NULL)
            return PyErr_NoMemory();
        e->managed.deleter = delete_unversioned;
        fill_tensor(&e->managed.dl_tensor, e->shape, ptr, nbytes, device_type, device_id);
        capsule = PyCapsule_New(&e->managed, name_tensor, capsule_destructor);
        if (capsule == NULL) {
            PyMem_RawFree(e);
            return NULL;
        }
        e->managed.manager_ctx = Py_NewRef(owner);
    }
    return capsule;
}

/* Validates a fresh DLPack capsule: returns 1 (versioned), 0 (unversioned), or -1 with BufferError. */
static int capsule_kind(PyObject *capsule)
{
    if (!PyCapsule_CheckExact(capsule)) {
        PyErr_Format(PyExc_BufferError, "expected a DLPack capsule, got %.200s", Py_TYPE(capsule)->tp_name);
        return -1;
    }
    const char *name = PyCapsule_GetName(capsule);
    if (name == NULL && PyErr_Occurred())
        return -1;
    if (name != NULL && strcmp(name, name_versioned) == 0)
        return 1;
    if (name != NULL && strcmp(name, name_tensor) == 0)
        return 0;
    if (name != NULL && strncmp(name, "used_", 5) == 0)
        PyErr_Format(PyExc_BufferError, "the DLPack capsule has already been consumed (its name is '%s')", name);
    else
        PyErr_Format(PyExc_BufferError, "not a DLPack capsule (name %s%s%s)", name ? "'" : "", name ? name : "NULL",
                     name ? "'" : "");
    return -1;
}

PyDoc_STRVAR(capsule_info__doc__, "capsule_info(capsule, /)\n--\n\n"
"(versioned, address of the managed tensor) for an unconsumed DLPack capsule; BufferError for an\n"
"invalid or already consumed one. Does not change the capsule.");

static PyObject *capsule_info(PyObject *Py_UNUSED(module), PyObject *capsule)
{
    int versioned = capsule_kind(capsule);
    if (versioned < 0)
        return NULL;
    void *managed = PyCapsule_GetPointer(capsule, versioned ? name_versioned : name_tensor);
    if (managed == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_BufferError, "the DLPack capsule holds a NULL tensor");
        return NULL;
    }
    return Py_BuildValue("(ON)", versioned ? Py_True : Py_False, PyLong_FromVoidPtr(managed));
}

PyDoc_STRVAR(capsule_consume__doc__, "capsule_consume(capsule, /)\n--\n\n"
"Take ownership of a DLPack capsule's tensor: renames the capsule to 'used_dltensor[_versioned]'\n"
"so its destructor no longer frees it, and returns (versioned, address). The caller must later\n"
"call dlpack_release(address, versioned) exactly once.");

static PyObject *capsule_consume(PyObject *Py_UNUSED(module), PyObject *capsule)
{
    int versioned = capsule_kind(capsule);
    if (versioned < 0)
        return NULL;
    void *managed = PyCapsule_GetPointer(capsule, versioned ? name_versioned : name_tensor);
    if (managed == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_BufferError, "the DLPack capsule holds a NULL tensor");
        return NULL;
    }
    PyObject *address = PyLong_FromVoidPtr(managed);
    if (address == NULL)
        return NULL;
    if (PyCapsule_SetName(capsule, versioned ? name_used_versioned : name_used_tensor) < 0) {
        Py_DECREF(address);
        return NULL;
    }
    return Py_BuildValue("(ON)", versioned ? Py_True : Py_False, address);
}

PyDoc_STRVAR(dlpack_release__doc__, "dlpack_release(address, versioned, /)\n--\n\n"
"Call the deleter of a managed tensor taken with capsule_consume(). Must be called once.");

static PyObject *dlpack_release(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs)
{
    uintptr_t address;
    if (!nh_check_nargs("dlpack_release", nargs, 2, 2) || !nh_handle_converter(args[0], &address))
        return NULL;
    int versioned = PyObject_IsTrue(args[1]);
    if (versioned < 0)
        return NULL;
    if (address == 0) {
        PyErr_SetString(PyExc_ValueError, "address must not be 0");
        return NULL;
    }
    if (versioned) {
        dl_managed_versioned *m = (dl_managed_versioned *)address;
        if (m->deleter != NULL)
            m->deleter(m);
    } else {
        dl_managed *m = (dl_managed *)address;
        if (m->deleter != NULL)
            m->deleter(m);
    }
    Py_RETURN_NONE;
}

PyMethodDef nh_dlpack_methods[] = {
    {"dlpack_export", (PyCFunction)(void (*)(void))dlpack_export, METH_FASTCALL, dlpack_export__doc__},
    {"capsule_info", capsule_info, METH_O, capsule_info__doc__},
    {"capsule_consume", capsule_consume, METH_O, capsule_consume__doc__},
    {"dlpack_release", (PyCFunction)(void (*)(void))dlpack_release, METH_FASTCALL, dlpack_release__doc__},
    {NULL, NULL, 0, NULL},
};
