/* What the struct wrapper classes know about each C struct: its size, its initializer and its
 * fields. The tables are in struct_layouts.c; structs.c turns them into classes and dtypes. */
#ifndef NCCL4PY_STRUCT_LAYOUTS_H
#define NCCL4PY_STRUCT_LAYOUTS_H

#include "module/module.h"
#include "structs/structs.h"

#include <stddef.h>

typedef enum {
    F_I32,
    F_U32,
    F_U8,     /* uint8_t and the headers' one-byte bool */
    F_SIZE,   /* size_t */
    F_U64,
    F_F32,
    F_PTR,    /* a pointer (or pointer-sized union), as an address */
    F_CSTR,   /* const char *, set from a str kept alive by the wrapper */
    F_BYTES,  /* an opaque byte array */
    F_STRUCT, /* a nested struct: aux is its nx_struct_kind */
    F_ARRAY   /* len elements of the kind in aux (F_I32, F_U8 or F_PTR) */
} nx_field_kind;

typedef struct {
    const char *name;
    nx_field_kind kind;
    size_t offset;
    size_t len; /* F_BYTES: byte count; F_ARRAY: element count */
    int aux;    /* F_CSTR: keep slot; F_STRUCT: nested kind; F_ARRAY: element kind */
    const char *doc; /* the attribute's docstring: the C member it maps to */
} nx_field;

typedef struct {
    const char *tp_name;    /* "nccl.bindings.nccl.<Class>", static: the type keeps the pointer */
    const char *name;       /* the class name */
    const char *dtype_name; /* module-level numpy dtype */
    size_t size;
    void (*init)(void *);
    const nx_field *fields;
    const char *doc;        /* the class docstring, text signature first */
} nx_struct_desc;

#define NX_MAX_KEEP 2      /* F_CSTR fields per struct */
#define NX_MAX_FIELDS 48

extern const nx_struct_desc nx_struct_descs[NX_NSTRUCTS];

/* Bytes of one element of an F_ARRAY field. */
size_t nx_field_elem_size(nx_field_kind elem);

#endif
