/* Reduction kernels and element conversions of the host backend (docs/host-backend.md#reductions-and-numerics).
 *
 * Plain C, no state: every function is safe to call from any thread. The collective engine
 * combines inputs in rank order 0..n-1 with these calls, so every rank computes bit-identical
 * results:
 *
 *     host_reduce_prepare(acc, in_0, count, dt, op, fp8, n)       -- acc = pre-step of rank 0
 *     for r in 1..n-1: host_reduce_step(acc, in_r, count, dt, op, fp8, n)
 *     host_reduce_finish(acc, count, dt, op, n)                    -- integer Avg division
 *
 * where `op` carries the kind and, for PreMulSum, the per-rank scalar of the rank whose input is
 * being folded in (scalars may differ per rank). */
#ifndef NCCL_HOST_REDUCE_H
#define NCCL_HOST_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_abi.h"

typedef enum {
    HOST_OP_SUM = 0,
    HOST_OP_PROD = 1,
    HOST_OP_MAX = 2,
    HOST_OP_MIN = 3,
    HOST_OP_AVG = 4,
    HOST_OP_PREMULSUM = 5
} host_op_kind;

/* fp8 encoding for datatypes 10/11: OCP E4M3FN/E5M2 (NVIDIA) or FNUZ (RCCL on gfx94x). */
typedef enum { HOST_FP8_OCP = 0, HOST_FP8_FNUZ = 1 } host_fp8_mode;

typedef struct {
    host_op_kind kind;
    /* PreMulSum only: the scalar of the rank whose input is being folded in, stored in the
     * element type (typesize(datatype) bytes). */
    unsigned char scalar[8];
} host_op;

/* Size in bytes of one element, or 0 for a datatype outside [0, ncclNumTypes). */
size_t host_type_size(ncclDataType_t dt);

/* acc[i] = pre(in[i]): a copy for Sum/Prod/Max/Min and integer Avg; the input multiplied by
 * 1/n (floating Avg, rounding rules of docs/host-backend.md#avg) or by op->scalar (PreMulSum,
 * docs/host-backend.md#premulsum-operators). */
void host_reduce_prepare(void *acc, const void *in, size_t count, ncclDataType_t dt, const host_op *op,
                         host_fp8_mode fp8, int nranks);
/* acc[i] = acc[i] (+) pre(in[i]) with the per-step rounding of docs/host-backend.md#reductions-and-numerics. acc
 * == in is allowed. */
void host_reduce_step(void *acc, const void *in, size_t count, ncclDataType_t dt, const host_op *op,
                      host_fp8_mode fp8, int nranks);
/* host_reduce_prepare(acc, in0, op0) followed by host_reduce_step(acc, in1, op1), bit for bit,
 * in one pass over memory when the first input needs no scaling. acc may alias in0, not in1. */
void host_reduce_pair(void *acc, const void *in0, const void *in1, size_t count, ncclDataType_t dt,
                      const host_op *op0, const host_op *op1, host_fp8_mode fp8, int nranks);
/* Integer Avg: divide the wrapped sum by n rounding toward zero (docs/host-backend.md#avg); otherwise nothing. */
void host_reduce_finish(void *acc, size_t count, ncclDataType_t dt, const host_op *op, int nranks);
/* RCCL AllReduceWithBias: acc[i] = round(acc[i] + bias[i]), one rounding (docs/host-backend.md#allreducewithbias). */
void host_reduce_add_bias(void *acc, const void *bias, size_t count, ncclDataType_t dt, host_fp8_mode fp8);

/* Conversions (round to nearest even; saturation as in docs/host-backend.md#reductions-and-numerics). Exposed for
 * tests. */
float host_half_to_float(uint16_t h);
uint16_t host_float_to_half(float f);
float host_bf16_to_float(uint16_t b);
uint16_t host_float_to_bf16(float f);
float host_fp8_to_float(uint8_t v, int e5m2, host_fp8_mode mode);
uint8_t host_float_to_fp8(float f, int e5m2, host_fp8_mode mode);

#endif
