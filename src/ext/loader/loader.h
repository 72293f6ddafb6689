/* Finding and opening one NCCL/RCCL (or host backend) library; no Python objects here.
 *
 * The table below is the one process-global of the extension: a process has one dlopen handle
 * for the library, shared by every interpreter, so it cannot live in module state. It holds only
 * C values, is written once under the loader's mutex and is read-only after nx_loader_ready()
 * turns true. */
#ifndef NCCL4PY_LOADER_H
#define NCCL4PY_LOADER_H

#include <limits.h>
#include <stddef.h>

#include "abi.h"
#include "dl_attempts.h"
#include "lib_select.h"

#define NX_API_FIELD(name, ret, params, args, since) ret(*name) params;
typedef struct {
    NCCL_ABI(NX_API_FIELD)
} nx_api_table;
#undef NX_API_FIELD

extern nx_api_table nx_api;

typedef enum { NX_FLAVOUR_NONE = 0, NX_FLAVOUR_NCCL, NX_FLAVOUR_RCCL, NX_FLAVOUR_HOST } nx_flavour;


typedef struct {
    const char *override;     /* NCCL_LIBRARY, stripped and non-empty, or NULL */
    int override_is_host;     /* it names the bundled host backend (sel_library_selection.names_host) */
    const char *host_path;    /* the bundled libnccl-host.so */
    int devices;              /* NX_DEVICE_* bits (lib_select.h): the kinds of GPU device node present */
    const char *const *rccl;  /* RCCL candidates, in order; tried when an AMD device is present */
    size_t nrccl;
    const char *const *nccl;  /* NCCL candidates, in order; tried when an NVIDIA device is present */
    size_t nnccl;
} nx_load_request;

/* What the caller must tell the user once, after a successful load. */
enum {
    NX_NOTICE_HOST_AUTO = 1,  /* the host backend was chosen because no GPU was found */
    NX_NOTICE_TWO_COPIES = 2, /* another NCCL/RCCL copy is mapped in the process */
};

typedef struct {
    int loaded;
    nx_flavour flavour;
    int version;              /* ncclGetVersion code */
    const char *path;         /* absolute path the symbols came from */
    const char *host_info;    /* ncclHostGetInfo() text for the host backend, else NULL */
    char other_copy[PATH_MAX];    /* path of a second mapped copy, when NX_NOTICE_TWO_COPIES */
    unsigned aliased;         /* bit i: alias row i of NCCL_ABI_ALIASES was filled from its older spelling */
} nx_library_info;

/* Nonzero once a library is loaded; then nx_api and nx_loader_info() are immutable. */
int nx_loader_ready(void);
const nx_library_info *nx_loader_info(void);

/* Runs discovery once. Blocks on the loader mutex: call it with the GIL released.
 * Returns 0 on success (or if another thread already loaded), -1 on failure; either way
 * the attempts out-parameters describe the latest discovery (owned by the loader, valid until the next
 * failed call; after success, forever). *notices gets the NX_NOTICE_* bits for this caller to
 * report; they are handed out only once per process. */
int nx_loader_load(const nx_load_request *req, const dl_attempt **attempts, size_t *nattempts,
                   int *notices);

/* The attempts of the discovery that succeeded (or of the last failed one). Loader-owned. */
void nx_loader_attempts(const dl_attempt **attempts, size_t *nattempts);

/* Names and minimum versions of the table, in table order (NCCL rows first, then RCCL rows). */
typedef struct {
    const char *name;
    int since;  /* NCCL version code; 0 for RCCL-only entry points */
    size_t offset; /* offset of the function pointer in nx_api_table */
} nx_symbol;
extern const nx_symbol nx_symbols[];
extern const size_t nx_nsymbols;
extern const size_t nx_nnccl_symbols; /* the first nx_nnccl_symbols rows are NCCL's */

/* Aliases (NCCL_ABI_ALIASES) are resolved at load: when the library lacks an alias row's name but
 * exports its older spelling, nx_api's slot for the name holds the older function, so every wrapper
 * calls the one slot. nx_alias_of: the older spelling of an alias row's name, else NULL.
 * nx_loader_exported: row `row`'s slot as the library exports it (NULL for a slot filled by its
 * alias), for the reports of what the library itself has. */
const char *nx_alias_of(const char *name);
void *nx_loader_exported(size_t row);

/* Formats a version code as "X.Y.Z". */
void nx_format_version(int code, char *out, size_t outlen);

#endif
