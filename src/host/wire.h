/* The wire messages of libnccl-host's bootstrap and control mesh: their types, header and payloads
 * (docs/host-backend.md#unique-ids-and-bootstrap). Included by nccl_host.h, which defines the
 * secret and token sizes they carry. */
#ifndef NCCL_HOST_WIRE_H
#define NCCL_HOST_WIRE_H

#include <stdint.h>

enum {
    HOST_MSG_HELLO = 0x48454c4f,   /* rank -> root */
    HOST_MSG_DISMISS,              /* rank 0 -> extra scalable roots */
    HOST_MSG_ROOT_OK,              /* root -> rank: peer table */
    HOST_MSG_ROOT_FAIL,            /* root -> rank: bootstrap failed */
    HOST_MSG_MESH_HELLO,           /* lower rank -> higher rank on the mesh */
    HOST_MSG_MESH_FAIL,            /* init failure reported to a peer (any phase until READY) */
    HOST_MSG_SEG_NAME,             /* rank 0 -> all: where to fetch the segment */
    HOST_MSG_SEG_ACK,              /* all -> rank 0: segment attached */
    HOST_MSG_READY,                /* rank 0 -> all */
    HOST_MSG_LEAVE,                /* finalize/destroy notice */
    HOST_MSG_ABORT,                /* abort notice */
    HOST_MSG_MGMT,                 /* split/shrink exchange, tagged */
    HOST_MSG_MESH_DONE             /* all -> rank 0: every mesh connection is up */
};

typedef struct {
    uint32_t type;
    uint32_t len; /* payload bytes after this header */
    uint64_t tag;
} host_msg_hdr;

/* The machine a process runs on, as the bootstrap compares it (node.c). */
typedef struct {
    uint64_t boot;   /* hash of the kernel's boot id: one value for every process of a machine */
    uint64_t netns;  /* the network namespace (/proc/self/ns/net's device and inode, hashed) */
    uint64_t shm;    /* the /dev/shm the process sees (its device and inode, hashed) */
    char host[64];   /* the host name, for messages */
} host_node;

/* A rank's check-in at the root (HELLO), or rank 0's DISMISS of an extra scalable-init root. */
typedef struct {
    uint8_t secret[HOST_SECRET_BYTES];
    uint32_t proto, libver, layout, flavor;
    int32_t nranks, rank;
    uint32_t pid, addr_be;
    uint16_t port_be, pad16;
    uint32_t pad32;
    uint64_t idhash;
    host_node node;
} host_hello;

typedef struct {
    host_msg_hdr h;
    host_hello p;
} host_hello_msg;

/* ROOT_FAIL and MESH_FAIL payload. */
typedef struct {
    int32_t code;
    char text[512];
} host_fail_msg;

typedef struct {
    uint32_t pid;
    uint32_t addr_be;
    uint16_t port_be;
    uint16_t pad;
} host_peer_addr;

/* ROOT_OK payload: host_peer_addr[nranks] follow. */
typedef struct {
    int32_t nranks;
    uint32_t flags;  /* HOST_TABLE_* */
    uint8_t token[HOST_TOKEN_BYTES];
} host_table_msg;

/* The ranks are in more than one network namespace: descriptors pass through HOST_UDS_DIR. */
#define HOST_TABLE_SPANS_NETNS 1u

#define HOST_MSG_MAX_PAYLOAD (1u << 20)

#endif
