/* Reduction kernels and element conversions of the host backend (docs/host-backend.md#reductions-and-numerics).
 *
 * Layout of this file:
 *   1. conversions between float and the narrow formats (half, bf16, four fp8 encodings), done on
 *      bits with integer arithmetic only, so they do not depend on the FP environment;
 *   2. the per-type kernels, one macro per family (integers, float/double, narrow floats), each
 *      a switch over the op with one loop per case;
 *   3. the entry points of reduce.h, which map an op onto those kernels.
 *
 * Arithmetic on float/double is plain C, so it follows the FP environment: the engine's workers
 * reset it (fesetenv(FE_DFL_ENV)), and the library must be built without -ffast-math and with
 * -ffp-contract=off (the default of -std=c11), because a fused multiply-add in the Avg/PreMulSum
 * step "acc + x*s" would skip a rounding NCCL performs. */
#include "reduce.h"

#include <math.h>
#include <string.h>

#include "nccl_surface.gen.h"

/* ---------------------------------------------------------------------------------------- */
/* 1. Conversions                                                                           */
/* ---------------------------------------------------------------------------------------- */

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#define F32_INF 0x7F800000u
#define F32_QNAN 0x7FC00000u

/* The narrow binary formats share one shape: sign | exponent field | `mbits` fraction bits, with
 * minimum normal exponent `emin` (= 1 - bias) and subnormals below it. A "magnitude code" is
 * everything but the sign, (exponent field << mbits) | fraction. Codes of finite values increase
 * with the value, so rounding can simply carry from the fraction into the exponent. */

/* Rounds a finite non-negative float, given as bits, to nearest-even in a narrow format and
 * returns its magnitude code. The code may exceed the format's largest finite code (or land on
 * an Inf/NaN code); each caller applies its own overflow rule. */
static uint32_t round_to_code(uint32_t abs_bits, int mbits, int emin)
{
    int fexp = (int)(abs_bits >> 23);
    uint32_t sig = abs_bits & 0x7FFFFFu;
    int e;
    if (fexp == 0) {
        e = -126; /* float subnormal: no implicit bit */
    } else {
        e = fexp - 127;
        sig |= 0x800000u;
    }
    /* value = sig * 2^(e - 23); the target's grid spacing at this magnitude is 2^(te - mbits),
     * where te is the exponent clamped to the subnormal range. */
    int te = e < emin ? emin : e;
    int shift = (te - mbits) - (e - 23); /* >= 23 - mbits >= 13 */
    if (shift >= 25)
        return 0; /* sig < 2^24 is below half a grid step: rounds to zero */
    uint32_t q = sig >> shift;
    uint32_t rem = sig & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    /* For a normal result q holds the implicit bit at position mbits, which adds the 1 that the
     * exponent field is offset by; for a subnormal q < 2^mbits and the field is 0. Either way: */
    return ((uint32_t)(te - emin) << mbits) + q;
}

/* Inverse of round_to_code for a finite magnitude code: the float's magnitude bits (exact, every
 * narrow value is a normal or zero float). */
static uint32_t code_to_float_bits(uint32_t code, int mbits, int emin)
{
    uint32_t field = code >> mbits;
    uint32_t frac = code & ((1u << mbits) - 1u);
    int e = emin + (int)field - 1;
    if (field == 0) {
        if (frac == 0)
            return 0;
        e = emin; /* subnormal: normalise so the leading 1 becomes the implicit bit */
        while (!(frac & (1u << mbits))) {
            frac <<= 1;
            e--;
        }
        frac &= (1u << mbits) - 1u;
    }
    return ((uint32_t)(e + 127) << 23) | (frac << (23 - mbits));
}

float host_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t mag = h & 0x7FFFu;
    if (mag == 0x7C00u)
        return bits_float(sign | F32_INF);
    if (mag > 0x7C00u)
        return bits_float(sign | F32_QNAN | ((mag & 0x3FFu) << 13));
    return bits_float(sign | code_to_float_bits(mag, 10, -14));
}

uint16_t host_float_to_half(float f)
{
    uint32_t x = float_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t a = x & 0x7FFFFFFFu;
    if (a > F32_INF)
        return sign | 0x7E00u; /* NaN stays a (quiet) NaN; payload is not significant */
    if (a == F32_INF)
        return sign | 0x7C00u;
    uint32_t code = round_to_code(a, 10, -14);
    if (code > 0x7BFFu)
        code = 0x7C00u; /* IEEE overflow: Inf, no saturation (docs/host-backend.md#reductions-and-numerics) */
    return (uint16_t)(sign | code);
}

float host_bf16_to_float(uint16_t b)
{
    return bits_float((uint32_t)b << 16);
}

uint16_t host_float_to_bf16(float f)
{
    uint32_t x = float_bits(f);
    if ((x & 0x7FFFFFFFu) > F32_INF)
        return (uint16_t)((x >> 16) | 0x0040u); /* truncating a NaN could leave Inf; force quiet */
    /* Round to nearest even on the low 16 bits; a carry runs into the exponent, and past the
     * largest finite value it lands exactly on Inf, which is the IEEE overflow result. */
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

typedef struct {
    int mbits;
    int emin;
    uint32_t max_code; /* largest finite magnitude code */
} fp8_format;

static const fp8_format *fp8_fmt(int e5m2, host_fp8_mode mode)
{
    /* OCP E4M3FN: bias 7, max 448 (0x7E). OCP E5M2: bias 15, max 57344 (0x7B).
     * FNUZ E4M3: bias 8, max 240 (0x7F). FNUZ E5M2: bias 16, max 57344 (0x7F). */
    static const fp8_format fmts[2][2] = {
        {{3, -6, 0x7E}, {2, -14, 0x7B}},
        {{3, -7, 0x7F}, {2, -15, 0x7F}},
    };
    return &fmts[mode == HOST_FP8_FNUZ][e5m2 != 0];
}

float host_fp8_to_float(uint8_t v, int e5m2, host_fp8_mode mode)
{
    const fp8_format *fmt = fp8_fmt(e5m2, mode);
    uint32_t sign = (uint32_t)(v & 0x80u) << 24;
    uint32_t mag = v & 0x7Fu;
    if (mode == HOST_FP8_FNUZ) {
        if (v == 0x80u)
            return bits_float(F32_QNAN); /* the only NaN; there is no -0 and no Inf */
    } else if (!e5m2) {
        if (mag == 0x7Fu)
            return bits_float(sign | F32_QNAN); /* E4M3FN: no Inf, S.1111.111 is NaN */
    } else if (mag >= 0x7Cu) {
        return bits_float(sign | (mag == 0x7Cu ? F32_INF : F32_QNAN));
    }
    return bits_float(sign | code_to_float_bits(mag, fmt->mbits, fmt->emin));
}

uint8_t host_float_to_fp8(float f, int e5m2, host_fp8_mode mode)
{
    const fp8_format *fmt = fp8_fmt(e5m2, mode);
    uint32_t x = float_bits(f);
    uint8_t sign = (uint8_t)((x >> 24) & 0x80u);
    uint32_t a = x & 0x7FFFFFFFu;
    uint32_t code;
    if (mode == HOST_FP8_FNUZ) {
        /* RCCL's converters with clipping: NaN and +-Inf both become the one NaN code 0x80,
         * finite overflow clips to +-max, and a zero result is +0 because -0 does not exist. */
        if (a >= F32_INF)
            return 0x80u;
        code = round_to_code(a, fmt->mbits, fmt->emin);
        if (code > fmt->max_code)
            code = fmt->max_code;
        return code == 0 ? 0u : (uint8_t)(sign | code);
    }
    /* OCP, CUDA's saturate-to-finite mode: overflow and even +-Inf (also for E5M2, which has an
     * Inf) become +-max; NaN becomes S.1111111, a NaN in both encodings. */
    if (a > F32_INF)
        return (uint8_t)(sign | 0x7Fu);
    code = a == F32_INF ? fmt->max_code : round_to_code(a, fmt->mbits, fmt->emin);
    if (code > fmt->max_code)
        code = fmt->max_code;
    return (uint8_t)(sign | code);
}

/* ---------------------------------------------------------------------------------------- */
/* 2. Kernels                                                                               */
/* ---------------------------------------------------------------------------------------- */

/* What one kernel call does to every element i. Prepare maps onto a copy (done with memmove by
 * the caller) or K_SCALE; a step onto one of the others. */
typedef enum {
    K_SCALE,      /* acc = round(s * in)             (Avg on floats, PreMulSum: rank 0) */
    K_SUM,        /* acc = round(acc + in) */
    K_PROD,       /* acc = round(acc * in) */
    K_MAX,        /* acc = max(acc, in), NaN-suppressing for floats */
    K_MIN,        /* acc = min(acc, in) */
    K_SCALED_SUM, /* acc = round(acc + round(s * in)) (Avg on floats, PreMulSum: ranks 1..n-1) */
} kernel_op;

/* Every kernel computes acc[i] = a[i] (op) in[i]: a is acc itself for a step, or another input
 * when two inputs are combined in one pass (host_reduce_pair). acc may alias a or in.
 * `scalar` always points at 8 readable bytes holding s in the element type (zero when unused). */
typedef void kernel_fn(unsigned char *acc, const unsigned char *a, const unsigned char *in, size_t count,
                       kernel_op k, const unsigned char *scalar);

/* Element loads and stores through memcpy: buffers need not be aligned, and acc may alias in
 * (each element is read completely before it is written). Compilers turn these into plain moves. */
static inline uint8_t ld_u8(const unsigned char *p, size_t i)
{
    uint8_t v;
    memcpy(&v, p + i * sizeof v, sizeof v);
    return v;
}
static inline void st_u8(unsigned char *p, size_t i, uint8_t v) { memcpy(p + i * sizeof v, &v, sizeof v); }

static inline uint16_t ld_u16(const unsigned char *p, size_t i)
{
    uint16_t v;
    memcpy(&v, p + i * sizeof v, sizeof v);
    return v;
}
static inline void st_u16(unsigned char *p, size_t i, uint16_t v) { memcpy(p + i * sizeof v, &v, sizeof v); }

static inline uint32_t ld_u32(const unsigned char *p, size_t i)
{
    uint32_t v;
    memcpy(&v, p + i * sizeof v, sizeof v);
    return v;
}
static inline void st_u32(unsigned char *p, size_t i, uint32_t v) { memcpy(p + i * sizeof v, &v, sizeof v); }

static inline uint64_t ld_u64(const unsigned char *p, size_t i)
{
    uint64_t v;
    memcpy(&v, p + i * sizeof v, sizeof v);
    return v;
}
static inline void st_u64(unsigned char *p, size_t i, uint64_t v) { memcpy(p + i * sizeof v, &v, sizeof v); }

static inline float ld_f32(const unsigned char *p, size_t i)
{
    float v;
    memcpy(&v, p + i * sizeof v, sizeof v);
    return v;
}
static inline void st_f32(unsigned char *p, size_t i, float v) { memcpy(p + i * sizeof v, &v, sizeof v); }

static inline double ld_f64(const unsigned char *p, size_t i)
{
    double v;
    memcpy(&v, p + i * sizeof v, sizeof v);
    return v;
}
static inline void st_f64(unsigned char *p, size_t i, double v) { memcpy(p + i * sizeof v, &v, sizeof v); }

/* One loop over the elements storing `expr` into acc[i]; the case's break is part of it. */
#define EACH(ST, expr)                                                                       \
    do {                                                                                     \
        for (size_t i = 0; i < count; i++)                                                   \
            ST(acc, i, (expr));                                                              \
    } while (0);                                                                             \
    break

/* Integers: elements live in the unsigned type U, so + and * wrap modulo 2^bits instead of being
 * undefined on signed overflow; "1u *" keeps 8-bit operands unsigned after integer promotion.
 * Max/Min compare in the storage type T, i.e. with the type's signedness (the U -> T conversion
 * is modular in gcc/clang). Avg is a plain Sum here; host_reduce_finish divides. */
#define DEFINE_INT_KERNEL(name, T, U, LD, ST)                                                \
    static void kernel_##name(unsigned char *acc, const unsigned char *a,                   \
                              const unsigned char *in, size_t count, kernel_op k,           \
                              const unsigned char *scalar)                                  \
    {                                                                                        \
        U s;                                                                                 \
        memcpy(&s, scalar, sizeof s);                                                        \
        switch (k) {                                                                         \
        case K_SCALE: EACH(ST, (U)(1u * LD(in, i) * s));                                     \
        case K_SUM: EACH(ST, (U)(1u * LD(a, i) + LD(in, i)));                              \
        case K_PROD: EACH(ST, (U)(1u * LD(a, i) * LD(in, i)));                             \
        case K_MAX: EACH(ST, (T)LD(in, i) > (T)LD(a, i) ? LD(in, i) : LD(a, i));         \
        case K_MIN: EACH(ST, (T)LD(in, i) < (T)LD(a, i) ? LD(in, i) : LD(a, i));         \
        case K_SCALED_SUM: EACH(ST, (U)(1u * LD(a, i) + (U)(1u * LD(in, i) * s)));         \
        }                                                                                    \
    }
DEFINE_INT_KERNEL(i8, int8_t, uint8_t, ld_u8, st_u8)
DEFINE_INT_KERNEL(u8, uint8_t, uint8_t, ld_u8, st_u8)
DEFINE_INT_KERNEL(i32, int32_t, uint32_t, ld_u32, st_u32)
DEFINE_INT_KERNEL(u32, uint32_t, uint32_t, ld_u32, st_u32)
DEFINE_INT_KERNEL(i64, int64_t, uint64_t, ld_u64, st_u64)
DEFINE_INT_KERNEL(u64, uint64_t, uint64_t, ld_u64, st_u64)

/* Integer Avg: divide the wrapped sum's magnitude by n and restore the sign, i.e. round toward
 * zero (NCCL 2.30). The magnitude is taken in U, so the most negative value is no special case. */
#define DEFINE_INT_FINISH(name, U, LD, ST, IS_SIGNED)                                        \
    static void finish_##name(unsigned char *acc, size_t count, uint64_t n)                 \
    {                                                                                        \
        for (size_t i = 0; i < count; i++) {                                                 \
            U v = LD(acc, i);                                                                \
            int neg = (IS_SIGNED) && (v >> (8 * sizeof v - 1)) != 0;                         \
            U mag = neg ? (U)(0u - v) : v;                                                   \
            mag = (U)(mag / n);                                                              \
            ST(acc, i, neg ? (U)(0u - mag) : mag);                                           \
        }                                                                                    \
    }
DEFINE_INT_FINISH(i8, uint8_t, ld_u8, st_u8, 1)
DEFINE_INT_FINISH(u8, uint8_t, ld_u8, st_u8, 0)
DEFINE_INT_FINISH(i32, uint32_t, ld_u32, st_u32, 1)
DEFINE_INT_FINISH(u32, uint32_t, ld_u32, st_u32, 0)
DEFINE_INT_FINISH(i64, uint64_t, ld_u64, st_u64, 1)
DEFINE_INT_FINISH(u64, uint64_t, ld_u64, st_u64, 0)

/* float/double: native IEEE operations, one rounding each; fmax/fmin suppress NaN (a NaN loses
 * to a number, two NaNs give NaN). The product in K_SCALED_SUM is rounded before the add because
 * contraction is off (see the top of the file). */
#define DEFINE_NATIVE_KERNEL(name, T, LD, ST, FMAX, FMIN)                                    \
    static void kernel_##name(unsigned char *acc, const unsigned char *a,                   \
                              const unsigned char *in, size_t count, kernel_op k,           \
                              const unsigned char *scalar)                                  \
    {                                                                                        \
        T s;                                                                                 \
        memcpy(&s, scalar, sizeof s);                                                        \
        switch (k) {                                                                         \
        case K_SCALE: EACH(ST, LD(in, i) * s);                                               \
        case K_SUM: EACH(ST, LD(a, i) + LD(in, i));                                        \
        case K_PROD: EACH(ST, LD(a, i) * LD(in, i));                                       \
        case K_MAX: EACH(ST, FMAX(LD(a, i), LD(in, i)));                                   \
        case K_MIN: EACH(ST, FMIN(LD(a, i), LD(in, i)));                                   \
        case K_SCALED_SUM: EACH(ST, LD(a, i) + LD(in, i) * s);                             \
        }                                                                                    \
    }
DEFINE_NATIVE_KERNEL(f32, float, ld_f32, st_f32, fmaxf, fminf)
DEFINE_NATIVE_KERNEL(f64, double, ld_f64, st_f64, fmax, fmin)

/* Narrow floats (half, bf16, fp8) are all sign-magnitude. Excluding NaNs, mapping a code to
 * "sign set: ~code without the sign; sign clear: code with the sign" orders the codes like their
 * values, with -0 just below +0, which is the tie rule docs/host-backend.md#reductions-and-numerics asks for. Max
 * and Min pick an
 * operand by that order; the kernel then still converts the pick back through ENC(DEC()), which
 * is the identity except for OCP e5m2's Inf: NCCL converts the __hmax/__hmin result to fp8 with
 * satfinite, so Inf becomes +-max there as in every other OCP step. */
static inline unsigned order_key(unsigned v, unsigned sign)
{
    return (v & sign) ? (~v & (sign - 1u)) : (v | sign);
}

static inline unsigned narrow_pick(unsigned a, unsigned b, int a_nan, int b_nan, unsigned sign,
                                   int want_max)
{
    if (a_nan)
        return b; /* NaN loses to a number; two NaNs give a NaN */
    if (b_nan)
        return a;
    unsigned ka = order_key(a, sign), kb = order_key(b, sign);
    return (want_max ? kb > ka : kb < ka) ? b : a;
}

/* Per-type codecs: DEC widens exactly to float, ENC rounds one arithmetic result back with the
 * rules of docs/host-backend.md#reductions-and-numerics. OCP fp8 computes in half (NCCL converts both operands to
 * __half and uses
 * half arithmetic): the float result, rounded once to half, is exactly the half operation's
 * result (float has 24 >= 2*11+2 significand bits), and then goes to fp8 with saturation, so a
 * half Inf becomes +-max. FNUZ fp8 goes from float straight to fp8 with clipping (RCCL). */
static inline float half_round(float f)
{
    return host_half_to_float(host_float_to_half(f));
}

static inline float dec_f16(uint16_t v) { return host_half_to_float(v); }
static inline uint16_t enc_f16(float f) { return host_float_to_half(f); }
static inline int nan_f16(unsigned v) { return (v & 0x7FFFu) > 0x7C00u; }

static inline float dec_bf16(uint16_t v) { return host_bf16_to_float(v); }
static inline uint16_t enc_bf16(float f) { return host_float_to_bf16(f); }
static inline int nan_bf16(unsigned v) { return (v & 0x7FFFu) > 0x7F80u; }

static inline float dec_e4m3_ocp(uint8_t v) { return host_fp8_to_float(v, 0, HOST_FP8_OCP); }
static inline uint8_t enc_e4m3_ocp(float f) { return host_float_to_fp8(half_round(f), 0, HOST_FP8_OCP); }
static inline int nan_e4m3_ocp(unsigned v) { return (v & 0x7Fu) == 0x7Fu; }

static inline float dec_e5m2_ocp(uint8_t v) { return host_fp8_to_float(v, 1, HOST_FP8_OCP); }
static inline uint8_t enc_e5m2_ocp(float f) { return host_float_to_fp8(half_round(f), 1, HOST_FP8_OCP); }
static inline int nan_e5m2_ocp(unsigned v) { return (v & 0x7Fu) > 0x7Cu; }

static inline float dec_e4m3_fnuz(uint8_t v) { return host_fp8_to_float(v, 0, HOST_FP8_FNUZ); }
static inline uint8_t enc_e4m3_fnuz(float f) { return host_float_to_fp8(f, 0, HOST_FP8_FNUZ); }
static inline float dec_e5m2_fnuz(uint8_t v) { return host_fp8_to_float(v, 1, HOST_FP8_FNUZ); }
static inline uint8_t enc_e5m2_fnuz(float f) { return host_float_to_fp8(f, 1, HOST_FP8_FNUZ); }
static inline int nan_fnuz(unsigned v) { return v == 0x80u; }

/* Every step: widen both operands, one float operation (exact products, correctly rounded
 * sums), one rounding back (double rounding through float is harmless,
 * docs/host-backend.md#reductions-and-numerics). */
#define DEFINE_NARROW_KERNEL(name, U, LD, ST, DEC, ENC, ISNAN, SIGN)                         \
    static void kernel_##name(unsigned char *acc, const unsigned char *a,                   \
                              const unsigned char *in, size_t count, kernel_op k,           \
                              const unsigned char *scalar)                                  \
    {                                                                                        \
        U sbits;                                                                             \
        memcpy(&sbits, scalar, sizeof sbits);                                                \
        const float s = DEC(sbits);                                                          \
        switch (k) {                                                                         \
        case K_SCALE: EACH(ST, ENC(DEC(LD(in, i)) * s));                                     \
        case K_SUM: EACH(ST, ENC(DEC(LD(a, i)) + DEC(LD(in, i))));                         \
        case K_PROD: EACH(ST, ENC(DEC(LD(a, i)) * DEC(LD(in, i))));                        \
        case K_MAX:                                                                          \
            EACH(ST, ENC(DEC((U)narrow_pick(LD(a, i), LD(in, i), ISNAN(LD(a, i)),        \
                                            ISNAN(LD(in, i)), SIGN, 1))));                   \
        case K_MIN:                                                                          \
            EACH(ST, ENC(DEC((U)narrow_pick(LD(a, i), LD(in, i), ISNAN(LD(a, i)),        \
                                            ISNAN(LD(in, i)), SIGN, 0))));                   \
        case K_SCALED_SUM: EACH(ST, ENC(DEC(LD(a, i)) + DEC(ENC(DEC(LD(in, i)) * s))));    \
        }                                                                                    \
    }
DEFINE_NARROW_KERNEL(f16, uint16_t, ld_u16, st_u16, dec_f16, enc_f16, nan_f16, 0x8000u)
DEFINE_NARROW_KERNEL(bf16, uint16_t, ld_u16, st_u16, dec_bf16, enc_bf16, nan_bf16, 0x8000u)
DEFINE_NARROW_KERNEL(e4m3_ocp, uint8_t, ld_u8, st_u8, dec_e4m3_ocp, enc_e4m3_ocp, nan_e4m3_ocp, 0x80u)
DEFINE_NARROW_KERNEL(e5m2_ocp, uint8_t, ld_u8, st_u8, dec_e5m2_ocp, enc_e5m2_ocp, nan_e5m2_ocp, 0x80u)
DEFINE_NARROW_KERNEL(e4m3_fnuz, uint8_t, ld_u8, st_u8, dec_e4m3_fnuz, enc_e4m3_fnuz, nan_fnuz, 0x80u)
DEFINE_NARROW_KERNEL(e5m2_fnuz, uint8_t, ld_u8, st_u8, dec_e5m2_fnuz, enc_e5m2_fnuz, nan_fnuz, 0x80u)

/* ---------------------------------------------------------------------------------------- */
/* 3. Entry points                                                                          */
/* ---------------------------------------------------------------------------------------- */

size_t host_type_size(ncclDataType_t dt)
{
#define HOST_TYPE_SIZE(c, core, shortname, size, numpy, kind, dlpack) [c] = size,
    static const size_t sizes[ncclNumTypes] = {NCCL_SURFACE_DTYPES(HOST_TYPE_SIZE)};
#undef HOST_TYPE_SIZE
    return (int)dt >= 0 && (int)dt < ncclNumTypes ? sizes[dt] : 0;
}

static kernel_fn *pick_kernel(ncclDataType_t dt, host_fp8_mode fp8)
{
    int fnuz = fp8 == HOST_FP8_FNUZ;
    switch (dt) {
    case ncclInt8: return kernel_i8;
    case ncclUint8: return kernel_u8;
    case ncclInt32: return kernel_i32;
    case ncclUint32: return kernel_u32;
    case ncclInt64: return kernel_i64;
    case ncclUint64: return kernel_u64;
    case ncclFloat16: return kernel_f16;
    case ncclFloat32: return kernel_f32;
    case ncclFloat64: return kernel_f64;
    case ncclBfloat16: return kernel_bf16;
    case ncclFloat8e4m3: return fnuz ? kernel_e4m3_fnuz : kernel_e4m3_ocp;
    case ncclFloat8e5m2: return fnuz ? kernel_e5m2_fnuz : kernel_e5m2_ocp;
    default: return NULL;
    }
}

static int is_integer(ncclDataType_t dt)
{
    return dt == ncclInt8 || dt == ncclUint8 || dt == ncclInt32 || dt == ncclUint32 ||
           dt == ncclInt64 || dt == ncclUint64;
}

/* Float Avg pre-multiplies every input by 1/n rounded to the element type (docs/host-backend.md#avg):
 * (float)(1.0/n) for float and the narrow types, 1.0/n for double. The fp8 scale is converted
 * from float directly (with saturation or clipping), not through half. */
static void avg_scale(ncclDataType_t dt, host_fp8_mode fp8, int nranks, unsigned char out[8])
{
    double inv = 1.0 / (double)nranks;
    float finv = (float)inv;
    uint16_t h;
    uint8_t b;
    switch (dt) {
    case ncclFloat32: memcpy(out, &finv, sizeof finv); break;
    case ncclFloat64: memcpy(out, &inv, sizeof inv); break;
    case ncclFloat16: h = host_float_to_half(finv); memcpy(out, &h, sizeof h); break;
    case ncclBfloat16: h = host_float_to_bf16(finv); memcpy(out, &h, sizeof h); break;
    case ncclFloat8e4m3: b = host_float_to_fp8(finv, 0, fp8); memcpy(out, &b, 1); break;
    case ncclFloat8e5m2: b = host_float_to_fp8(finv, 1, fp8); memcpy(out, &b, 1); break;
    default: break;
    }
}

/* Fills s (8 bytes, element type) and returns 1 when the op multiplies each input before summing:
 * PreMulSum always, Avg on floating types. Integer Avg sums and divides in finish instead. */
static int op_scalar(const host_op *op, ncclDataType_t dt, host_fp8_mode fp8, int nranks,
                     unsigned char s[8])
{
    memset(s, 0, 8);
    if (op->kind == HOST_OP_PREMULSUM) {
        memcpy(s, op->scalar, host_type_size(dt));
        return 1;
    }
    if (op->kind == HOST_OP_AVG && !is_integer(dt)) {
        avg_scale(dt, fp8, nranks, s);
        return 1;
    }
    return 0;
}

/* A non-positive rank count is a caller bug; treating it as 1 keeps the division defined. */
static int sane_nranks(int nranks)
{
    return nranks > 0 ? nranks : 1;
}

/* Unknown datatypes and op kinds leave acc untouched: the engine validates both before it
 * reduces, so there is nothing better to do here. */
void host_reduce_prepare(void *acc, const void *in, size_t count, ncclDataType_t dt, const host_op *op,
                         host_fp8_mode fp8, int nranks)
{
    kernel_fn *kernel = pick_kernel(dt, fp8);
    unsigned char s[8];
    if (kernel == NULL || op == NULL || (unsigned)op->kind > HOST_OP_PREMULSUM || count == 0)
        return;
    if (op_scalar(op, dt, fp8, sane_nranks(nranks), s))
        kernel(acc, acc, in, count, K_SCALE, s);
    else if (acc != in)
        memmove(acc, in, count * host_type_size(dt));
}

/* The kernel op of a step folding in one input; 0 for an unknown op kind. s gets the input's
 * scalar when it is pre-multiplied. */
static int step_op(const host_op *op, ncclDataType_t dt, host_fp8_mode fp8, int nranks, unsigned char s[8],
                   kernel_op *k)
{
    switch (op->kind) {
    case HOST_OP_SUM: *k = K_SUM; break;
    case HOST_OP_PROD: *k = K_PROD; break;
    case HOST_OP_MAX: *k = K_MAX; break;
    case HOST_OP_MIN: *k = K_MIN; break;
    case HOST_OP_AVG:
    case HOST_OP_PREMULSUM: *k = K_SUM; break; /* K_SCALED_SUM below when a scalar applies */
    default: return 0;
    }
    if (op_scalar(op, dt, fp8, sane_nranks(nranks), s))
        *k = K_SCALED_SUM;
    return 1;
}

void host_reduce_step(void *acc, const void *in, size_t count, ncclDataType_t dt, const host_op *op,
                      host_fp8_mode fp8, int nranks)
{
    kernel_fn *kernel = pick_kernel(dt, fp8);
    unsigned char s[8];
    kernel_op k;
    if (kernel == NULL || op == NULL || count == 0 || !step_op(op, dt, fp8, nranks, s, &k))
        return;
    kernel(acc, acc, in, count, k, s);
}

void host_reduce_pair(void *acc, const void *in0, const void *in1, size_t count, ncclDataType_t dt,
                      const host_op *op0, const host_op *op1, host_fp8_mode fp8, int nranks)
{
    kernel_fn *kernel = pick_kernel(dt, fp8);
    unsigned char s[8];
    kernel_op k;
    if (kernel == NULL || op0 == NULL || op1 == NULL || count == 0 || (unsigned)op0->kind > HOST_OP_PREMULSUM)
        return;
    if (op_scalar(op0, dt, fp8, sane_nranks(nranks), s)) {
        /* The first input is scaled on its own (its own rounding): two passes, as documented. */
        host_reduce_prepare(acc, in0, count, dt, op0, fp8, nranks);
        host_reduce_step(acc, in1, count, dt, op1, fp8, nranks);
        return;
    }
    /* prepare(in0) is a plain copy here, so the step may read in0 directly: one pass. */
    if (!step_op(op1, dt, fp8, nranks, s, &k)) {
        if (acc != in0)
            memmove(acc, in0, count * host_type_size(dt));
        return;
    }
    kernel(acc, in0, in1, count, k, s);
}

void host_reduce_finish(void *acc, size_t count, ncclDataType_t dt, const host_op *op, int nranks)
{
    uint64_t n = (uint64_t)sane_nranks(nranks);
    if (op == NULL || op->kind != HOST_OP_AVG || n == 1)
        return;
    switch (dt) {
    case ncclInt8: finish_i8(acc, count, n); break;
    case ncclUint8: finish_u8(acc, count, n); break;
    case ncclInt32: finish_i32(acc, count, n); break;
    case ncclUint32: finish_u32(acc, count, n); break;
    case ncclInt64: finish_i64(acc, count, n); break;
    case ncclUint64: finish_u64(acc, count, n); break;
    default: break; /* floating Avg was scaled up front */
    }
}

void host_reduce_add_bias(void *acc, const void *bias, size_t count, ncclDataType_t dt, host_fp8_mode fp8)
{
    /* One Sum step with the bias as the input: the same single rounding (and, for OCP fp8, the
     * same saturation) as any other add. */
    static const unsigned char zero[8];
    kernel_fn *kernel = pick_kernel(dt, fp8);
    if (kernel != NULL && count != 0)
        kernel(acc, acc, bias, count, K_SUM, zero);
}
