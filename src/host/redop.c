/* User reduction ops: ncclRedOpCreatePreMulSum / ncclRedOpDestroy (docs/host-backend.md#premulsum-operators).
 *
 * Handle values come from a process-wide counter that starts at ncclNumOps and is never reused,
 * so an op destroyed or created on another communicator is always recognised. Each op lives in
 * its communicator's list; every call using it copies its state (the host-immediate scalar, or
 * the device-residence pointer that is read when the collective executes), so destroying it
 * right after the last call returned is safe even before the ncclGroupEnd that runs that call. */
#include <stdlib.h>
#include <string.h>

#include "nccl_host.h"

static _Atomic int host_next_op = ncclNumOps;

ncclResult_t host_redop_create(ncclRedOp_t *op, void *scalar, ncclDataType_t dt, ncclScalarResidence_t res,
                               ncclComm_t comm)
{
    host_comm *c;
    host_userop *u;
    ncclResult_t rc;
    int v;
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclRedOpCreatePreMulSum", &c)))
        return rc;
    if (HOST_FAILED(rc = host_comm_usable(c, "ncclRedOpCreatePreMulSum")))
        goto exit;
    if (op == NULL || scalar == NULL) {
        rc = host_fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: %s is NULL", op == NULL ? "op" : "scalar");
        goto exit;
    }
    if ((int)dt < 0 || (int)dt >= ncclNumTypes) {
        rc = host_fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: invalid datatype %d", (int)dt);
        goto exit;
    }
    if (res != ncclScalarDevice && res != ncclScalarHostImmediate) {
        rc = host_fail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: invalid residence %d", (int)res);
        goto exit;
    }
    u = calloc(1, sizeof *u);
    if (u == NULL) {
        rc = host_fail(ncclSystemError, "ncclRedOpCreatePreMulSum: out of memory");
        goto exit;
    }
    v = atomic_fetch_add_explicit(&host_next_op, 1, memory_order_seq_cst);
    if (v < ncclNumOps || v >= (int)ncclMaxRedOp) {
        free(u);
        rc = host_fail(ncclInvalidUsage, "ncclRedOpCreatePreMulSum: out of reduction op handles");
        goto exit;
    }
    u->value = (ncclRedOp_t)v;
    u->datatype = dt;
    u->residence = res;
    if (res == ncclScalarHostImmediate)
        memcpy(u->scalar, scalar, host_type_size(dt)); /* copied before the call returns */
    else
        u->scalar_ptr = scalar;
    pthread_mutex_lock(&c->lock);
    u->next = c->userops;
    c->userops = u;
    pthread_mutex_unlock(&c->lock);
    *op = u->value;
    rc = ncclSuccess;
exit:
    host_comm_leave(c);
    return rc;
}

ncclResult_t host_redop_destroy(ncclRedOp_t op, ncclComm_t comm)
{
    ncclResult_t rc;
    host_comm *c;
    host_userop *found = NULL;
    if ((int)op < ncclNumOps)
        return host_fail(ncclInvalidArgument, "ncclRedOpDestroy: op %d is not a user-created reduction op", (int)op);
    if (HOST_FAILED(rc = host_comm_enter(comm, "ncclRedOpDestroy", &c)))
        return rc;
    pthread_mutex_lock(&c->lock);
    for (host_userop **pp = &c->userops; *pp != NULL; pp = &(*pp)->next)
        if ((*pp)->value == op) {
            found = *pp;
            *pp = found->next;
            break;
        }
    pthread_mutex_unlock(&c->lock);
    host_comm_leave(c);
    if (found == NULL)
        return host_fail(ncclInvalidArgument, "ncclRedOpDestroy: op %d is not a live reduction op of this "
                         "communicator", (int)op);
    free(found);
    return ncclSuccess;
}

ncclResult_t host_redop_resolve(host_comm *c, ncclRedOp_t op, ncclDataType_t dt, host_opd *opd)
{
    host_userop *u;
    ncclResult_t rc = ncclSuccess;
    if ((int)op < 0)
        return host_fail(ncclInvalidArgument, "%s: invalid reduction op %d", opd->name, (int)op);
    if ((int)op < ncclNumOps) {
        opd->opkind = (int)op;
        return ncclSuccess;
    }
    pthread_mutex_lock(&c->lock);
    for (u = c->userops; u != NULL && u->value != op; u = u->next)
        ;
    if (u == NULL) {
        rc = host_fail(ncclInvalidArgument, "%s: reduction op %d is not a live user op of this communicator "
                       "(destroyed, never created, or created on another communicator)", opd->name, (int)op);
    } else if (u->datatype != dt) {
        rc = host_fail(ncclInvalidArgument, "%s: reduction op %d was created for datatype %s; data type does not "
                       "match %s", opd->name, (int)op, host_type_name(u->datatype), host_type_name(dt));
    } else {
        opd->opkind = HOST_OP_PREMULSUM;
        memcpy(opd->scalar, u->scalar, sizeof opd->scalar);
        opd->scalar_ptr = u->residence == ncclScalarDevice ? u->scalar_ptr : NULL;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

void host_redop_free_all(host_comm *c)
{
    while (c->userops != NULL) {
        host_userop *u = c->userops;
        c->userops = u->next;
        free(u);
    }
}
