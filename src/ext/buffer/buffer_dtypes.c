/* The one table of the element types nccl4py maps to NCCL datatypes (buffer.h): numpy dtypes (by
 * name, or by kind and itemsize), their DLPack type codes and torch dtypes, and the numpy dtype
 * of each datatype. The resolver, create_pre_mul_sum (redop.c) and nccl.core's NcclDataType
 * (src/nccl/core/_types.py, through nccl._ext._numpy_dtypes) all read it. Sizes are the datatype
 * table's (nx_dtype_size). */
#include "buffer/buffer.h"

#include <string.h>

#include "dlpack_abi.h"

/* The first row of a datatype names its numpy dtype; later rows are aliases (numpy bool). */
static const struct {
    const char *name; /* numpy dtype name; "torch." + name is the torch dtype's str() */
    char kind;        /* numpy kind; 0: told apart by name only, a dtype of the ml_dtypes package */
    uint8_t dl_code;  /* DLPack type code (bits: 8 * the datatype's size) */
    ncclDataType_t dt;
    int logical;      /* bool: the codes carry NX_DTYPE_LOGICAL */
} rows[] = {
    {"int8", 'i', kDLInt, ncclInt8},
    {"uint8", 'u', kDLUInt, ncclUint8},
    {"int32", 'i', kDLInt, ncclInt32},
    {"uint32", 'u', kDLUInt, ncclUint32},
    {"int64", 'i', kDLInt, ncclInt64},
    {"uint64", 'u', kDLUInt, ncclUint64},
    {"float16", 'f', kDLFloat, ncclFloat16},
    {"float32", 'f', kDLFloat, ncclFloat32},
    {"float64", 'f', kDLFloat, ncclFloat64},
    {"bfloat16", 0, kDLBfloat, ncclBfloat16},
    {"float8_e4m3fn", 0, kDLFloat8_e4m3fn, ncclFloat8e4m3},
    {"float8_e5m2", 0, kDLFloat8_e5m2, ncclFloat8e5m2},
    {"bool", 'b', kDLBool, ncclUint8, 1},
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
 * itemsize), ...), the rows in order. */
int nx_buffer_dtypes_setup(PyObject *module)
{
    PyObject *t = PyTuple_New(NROWS);
    for (int i = 0; t != NULL && i < NROWS; i++) {
        char kind[2] = {rows[i].kind, '\0'};
        PyObject *row = Py_BuildValue("(issn)", (int)rows[i].dt, rows[i].name, kind,
                                      (Py_ssize_t)nx_dtype_size(rows[i].dt));
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
    [ncclInt8] = {"INT8", 1},       [ncclUint8] = {"UINT8", 1},       [ncclInt32] = {"INT32", 4},
    [ncclUint32] = {"UINT32", 4},   [ncclInt64] = {"INT64", 8},       [ncclUint64] = {"UINT64", 8},
    [ncclFloat16] = {"FLOAT16", 2}, [ncclFloat32] = {"FLOAT32", 4},   [ncclFloat64] = {"FLOAT64", 8},
    [ncclBfloat16] = {"BFLOAT16", 2}, [ncclFloat8e4m3] = {"FLOAT8E4M3", 1}, [ncclFloat8e5m2] = {"FLOAT8E5M2", 1},
};

size_t nx_dtype_size(ncclDataType_t dt) { return (unsigned)dt < ncclNumTypes ? dtypes[dt].size : 0; }

const char *nx_dtype_name(ncclDataType_t dt) { return (unsigned)dt < ncclNumTypes ? dtypes[dt].name : "<invalid>"; }
