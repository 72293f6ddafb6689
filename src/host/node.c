/* Where this process runs, as the bootstrap needs to know it
 * (docs/host-backend.md#several-machines-and-network-namespaces).
 *
 * 1. The address every bootstrap listener of this process binds (the root's, each rank's mesh
 *    listener, a split's): host_node_bind_addr, called once by params.c when
 *    NCCL_HOST_BIND_ADDR is unset. Loopback unless NCCL_HOST_ALLOW_NONLOOPBACK=1; then the first
 *    IPv4 address of the interface NCCL_SOCKET_IFNAME selects, in NCCL's spelling (a comma list
 *    of name prefixes; `^` first excludes the listed ones; `=` first, after any `^`, matches
 *    whole names), or without it the interface NCCL itself would take: ib* first, then any but
 *    docker* and lo*, then docker*, then loopback. Every process chooses for itself, so ranks in
 *    different network namespaces each bind their own interface's address.
 * 2. The machine as the bootstrap compares it (host_node_get): the kernel (its boot id, the same
 *    in every namespace of one machine), the network namespace, and the /dev/shm directory the
 *    process sees, where descriptors are passed between network namespaces (sys.c,
 *    host_uds_name). Ranks of one communicator need one kernel, and, when they span network
 *    namespaces, one /dev/shm; the root refuses anything else (root.c), and a rank refuses an
 *    id whose loopback root it could never reach (bootstrap.c). The host name is for messages. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nccl_host.h"

/* ------------------------------------------------------------------------------------------ */
/* NCCL_SOCKET_IFNAME                                                                           */
/* ------------------------------------------------------------------------------------------ */

/* Whether the comma-separated list (after any ^ and =) names ifname: whole names when exact,
 * else prefixes. Empty entries match nothing. */
static int list_names(const char *list, int exact, const char *ifname)
{
    size_t n = strlen(ifname);
    while (*list != '\0') {
        const char *end = strchr(list, ',');
        size_t len = end == NULL ? strlen(list) : (size_t)(end - list);
        if (len > 0 && strncmp(list, ifname, len) == 0 && (!exact || len == n))
            return 1;
        if (end == NULL)
            break;
        list = end + 1;
    }
    return 0;
}

/* Whether NCCL_SOCKET_IFNAME's value spec selects ifname. */
static int spec_selects(const char *spec, const char *ifname)
{
    int exclude = 0, exact = 0;
    if (*spec == '^') {
        exclude = 1;
        spec++;
    }
    if (*spec == '=') {
        exact = 1;
        spec++;
    }
    return list_names(spec, exact, ifname) != exclude;
}

/* NCCL's order without NCCL_SOCKET_IFNAME: the pass (0 first) in which ifname is taken. */
static int default_pass(const struct ifaddrs *a)
{
    if (a->ifa_flags & IFF_LOOPBACK)
        return 3;
    if (strncmp(a->ifa_name, "ib", 2) == 0)
        return 0;
    if (strncmp(a->ifa_name, "docker", 6) == 0)
        return 2;
    if (strncmp(a->ifa_name, "lo", 2) == 0)
        return 3;
    return 1;
}

/* "lo, eth0, ib0" for the interfaces that are up with an IPv4 address, for messages. */
static void list_interfaces(const struct ifaddrs *all, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (const struct ifaddrs *a = all; a != NULL && o + 2 < len; a = a->ifa_next)
        if (a->ifa_addr != NULL && a->ifa_addr->sa_family == AF_INET && (a->ifa_flags & IFF_UP))
            o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", a->ifa_name);
    if (buf[0] == '\0')
        snprintf(buf, len, "none");
}

void host_node_bind_addr(host_params_t *p)
{
    const char *spec = getenv("NCCL_SOCKET_IFNAME");
    struct ifaddrs *all = NULL;
    const struct ifaddrs *best = NULL;
    int best_pass = 4;
    char names[200];

    p->bind_addr = htonl(INADDR_LOOPBACK);
    snprintf(p->bind_from, sizeof p->bind_from, "loopback");
    if (spec != NULL && *spec == '\0')
        spec = NULL;
    if (!p->allow_nonloopback) {
        if (spec != NULL)
            HOST_INFO(HOST_SUB_BOOTSTRAP, "NCCL_SOCKET_IFNAME=%s is not used: the bootstrap binds loopback unless "
                      "NCCL_HOST_ALLOW_NONLOOPBACK=1", spec);
        return;
    }
    if (getifaddrs(&all) != 0) {
        snprintf(p->bind_error, sizeof p->bind_error, "NCCL_HOST_ALLOW_NONLOOPBACK=1, but the network interfaces "
                 "cannot be listed (getifaddrs failed)");
        p->bind_addr = htonl(INADDR_NONE);
        return;
    }
    for (const struct ifaddrs *a = all; a != NULL; a = a->ifa_next) {
        int pass;
        if (a->ifa_addr == NULL || a->ifa_addr->sa_family != AF_INET || !(a->ifa_flags & IFF_UP))
            continue;
        if (spec != NULL) {
            if (spec_selects(spec, a->ifa_name)) {
                best = a;
                break;
            }
            continue;
        }
        pass = default_pass(a);
        if (pass < best_pass) {
            best = a;
            best_pass = pass;
        }
    }
    if (best != NULL) {
        p->bind_addr = ((const struct sockaddr_in *)best->ifa_addr)->sin_addr.s_addr;
        snprintf(p->bind_from, sizeof p->bind_from, "interface %s, %s%s", best->ifa_name,
                 spec != NULL ? "by NCCL_SOCKET_IFNAME=" : "NCCL's default choice", spec != NULL ? spec : "");
    } else {
        /* only reachable with NCCL_SOCKET_IFNAME: without it loopback always qualifies */
        list_interfaces(all, names, sizeof names);
        snprintf(p->bind_error, sizeof p->bind_error, "NCCL_SOCKET_IFNAME=%s selects no interface that is up with "
                 "an IPv4 address (those here: %s)", spec, names);
        p->bind_addr = htonl(INADDR_NONE);
    }
    freeifaddrs(all);
}

/* ------------------------------------------------------------------------------------------ */
/* The machine                                                                                  */
/* ------------------------------------------------------------------------------------------ */

/* The device and inode of path, hashed; 0 when it cannot be examined. */
static uint64_t file_identity(const char *path)
{
    struct stat st;
    uint64_t v[2];
    if (stat(path, &st) != 0)
        return 0;
    v[0] = (uint64_t)st.st_dev;
    v[1] = (uint64_t)st.st_ino;
    return host_hash64(v, sizeof v, 0) | 1;
}

static uint64_t boot_identity(void)
{
    char buf[64];
    size_t n = 0;
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    if (f == NULL)
        return 0;
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return n == 0 ? 0 : host_hash64(buf, n, 0) | 1;
}

void host_node_get(host_node *n)
{
    memset(n, 0, sizeof *n);
    n->boot = boot_identity();
    n->netns = file_identity("/proc/self/ns/net");
    n->shm = file_identity(HOST_UDS_DIR);
    if (gethostname(n->host, sizeof n->host - 1) != 0)
        snprintf(n->host, sizeof n->host, "?");
}

const char *host_node_differs(const host_node *a, const host_node *b)
{
    if (a->boot != 0 && b->boot != 0 && a->boot != b->boot)
        return "they run on different kernels (their boot ids differ)";
    if (a->netns != b->netns && a->shm != b->shm)
        return "they are in different network namespaces and do not share " HOST_UDS_DIR;
    return NULL;
}
