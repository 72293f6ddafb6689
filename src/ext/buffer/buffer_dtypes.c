/* The datatypes' sizes and names, and the one table of the element types nccl4py maps to NCCL
 * datatypes (buffer.h): numpy dtypes (by name, or by kind and itemsize), their DLPack type codes and
 * torch dtypes, and the numpy dtype of each datatype. Both are expanded from nccl_surface.gen.h's
 * rows (tools/nccl_surface.py's DTYPES). The resolver, create_pre_mul_sum (redop.c) and nccl.core's
 * NcclDataType (src/nccl/core/_types.py, through nccl._ext._numpy_dtypes) all read it, and so does
 * nccl.bench (the short names). */
#include "buffer/buffer.h"

#include <string.h>

#include "dlpack_abi.h"
#include "nccl_surface.gen.h"

/* The datatypes (their numpy dtype first), then the aliases (numpy bool): the rows of
 * nccl_surface.gen.h, from tools/nccl_surface.py's DTYPES and DTYPE_ALIASES. */
static const struct {
    const char *name; /* numpy dtype name; "torch." + name is the torch dtype's str() */
    char kind;        /* numpy kind; 0: told apart by name only, a dtype of the ml_dtypes package */
    uint8_t dl_code;  /* DLPack type code (bits: 8 * the datatype's size) */
    ncclDataType_t dt;
    int logical;      /* bool: the codes carry NX_DTYPE_LOGICAL */
    const char *short_name; /* as the host backend and nccl.bench print it */
} rows[] = {
#define NX_DTYPE_ROW(c, core, shortname, size, numpy, kind, dlpack) {numpy, kind, dlpack, c, 0, shortname},
#define NX_ALIAS_ROW(c, core, shortname, size, numpy, kind, dlpack) {numpy, kind, dlpack, c, 1, shortname},
    NCCL_SURFACE_DTYPES(NX_DTYPE_ROW) NCCL_SURFACE_DTYPE_ALIASES(NX_ALIAS_ROW)
#undef NX_DTYPE_ROW
#undef NX_ALIAS_ROW
};

#define NROWS ((int)(sizeof rows / sizeof rows[0]))

/* Row i's datatype code (buffer.h). */
static int code(int i) { return (int)rows[i].dt | (rows[i].logical ? NX_DTYPE_LOGICAL : 0); }

int nx_numpy_kind_dtype(const char *dname, int kind, Py_ssize_t itemsize)
{
    for (int i = 0; dname != NULL && i < NROWS; i++)
        if (rows[i].kind == 0 && strcmp(dname, rows[i].name) == 0)
            return code(i);
    for (int i = 0; i < NROWS; i++)
        if (rows[i].kind != 0 && rows[i].kind == kind && (Py_ssize_t)nx_dtype_size(rows[i].dt) == itemsize)
            return code(i);
    return -1;
}

int nx_dlpack_dtype(int dl_code, int bits)
{
    for (int i = 0; i < NROWS; i++)
        if (rows[i].dl_code == dl_code && (int)nx_dtype_size(rows[i].dt) * 8 == bits)
            return code(i);
    return -1;
}

int nx_torch_dtype(const char *str)
{
    if (strncmp(str, "torch.", 6) != 0)
        return -1;
    for (int i = 0; i < NROWS; i++)
        if (strcmp(str + 6, rows[i].name) == 0)
            return code(i);
    return -1;
}

/* The index of dt's first row; -1 for anything else. */
static int first_row(ncclDataType_t dt)
{
    for (int i = 0; i < NROWS; i++)
        if (rows[i].dt == dt)
            return i;
    return -1;
}

const char *nx_dtype_numpy_name(ncclDataType_t dt, int *ml_dtypes)
{
    int i = first_row(dt);
    if (i < 0)
        return NULL;
    *ml_dtypes = rows[i].kind == 0;
    return rows[i].name;
}

/* nccl._ext._numpy_dtypes: ((datatype, numpy name, numpy kind or "" for an ml_dtypes name,
 * itemsize, short name, alias), ...), the rows in order (the aliases last). */
int nx_buffer_dtypes_setup(PyObject *module)
{
    PyObject *t = PyTuple_New(NROWS);
    for (int i = 0; t != NULL && i < NROWS; i++) {
        char kind[2] = {rows[i].kind, '\0'};
        PyObject *row = Py_BuildValue("(issnsO)", (int)rows[i].dt, rows[i].name, kind,
                                      (Py_ssize_t)nx_dtype_size(rows[i].dt), rows[i].short_name,
                                      rows[i].logical ? Py_True : Py_False);
        if (row == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, i, row);
    }
    if (t == NULL)
        return -1;
    int rc = PyModule_AddObjectRef(module, "_numpy_dtypes", t);
    Py_DECREF(t);
    return rc;
}

/* Indexed by ncclDataType_t. */
static const struct {
    const char *name;
    size_t size;
} dtypes[ncclNumTypes] = {
#define NX_DTYPE_SIZE(c, core, shortname, size, numpy, kind, dlpack) [c] = {#core, size},
    NCCL_SURFACE_DTYPES(NX_DTYPE_SIZE)
#undef NX_DTYPE_SIZE
};

size_t nx_dtype_size(ncclDataType_t dt) { return (unsigned)dt < ncclNumTypes ? dtypes[dt].size : 0; }

const char *nx_dtype_name(ncclDataType_t dt) { return (unsigned)dt < ncclNumTypes ? dtypes[dt].name : "<invalid>"; }
