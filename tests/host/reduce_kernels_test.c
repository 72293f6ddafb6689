/* Driver for tests/host/test_reduce_kernels.py: runs src/host/reduce.c on inputs the Python side
 * writes and dumps the raw results, so the expected values come from independent references
 * (numpy, ml_dtypes) and never from this code.
 *
 *   reduce_kernels_test sizes            host_type_size(-1 .. 12), one per line
 *   reduce_kernels_test decode OUT       float32 tables: 65536 half, 65536 bf16, then 256 each of
 *                                        fp8 e4m3 OCP, e5m2 OCP, e4m3 FNUZ, e5m2 FNUZ
 *   reduce_kernels_test encode IN OUT    IN: n float32. OUT, once per rounding mode (nearest,
 *                                        upward, downward, toward zero): n u16 half, n u16 bf16,
 *                                        then n u8 each of the four fp8 encodings
 *   reduce_kernels_test reduce IN OUT    IN: records (below); OUT: each record's result
 *
 * A reduce record, native byte order:
 *   int32 dt, int32 fp8 mode, int32 op (host_op_kind, or OP_BIAS), int32 nranks,
 *   int64 count, int32 flags, int32 unused, nranks x 8 bytes of scalars (element type),
 *   nranks x count elements of input, rank after rank.
 * op in 0..5: prepare(rank 0), step(rank 1..n-1) (FLAG_PAIR: ranks 0 and 1 through host_reduce_pair),
 * then (FLAG_SELF_STEP) one more step with
 * in == acc and rank n-1's scalar, then finish. OP_BIAS: acc = input 0, add_bias(input 1).
 * FLAG_INPLACE runs prepare with acc == in; FLAG_UNALIGNED puts every buffer at an odd address. */
#include <fenv.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reduce.h"

#define OP_BIAS 100
#define FLAG_INPLACE 1
#define FLAG_UNALIGNED 2
#define FLAG_SELF_STEP 4
#define FLAG_PAIR 8

static void die(const char *what)
{
    fprintf(stderr, "reduce_kernels_test: %s\n", what);
    exit(2);
}

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        die("cannot open input");
    if (fseek(f, 0, SEEK_END) != 0)
        die("seek");
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0)
        die("tell");
    unsigned char *buf = malloc((size_t)n + 1);
    if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n)
        die("read");
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void write_all(FILE *f, const void *p, size_t n)
{
    if (n != 0 && fwrite(p, 1, n, f) != n)
        die("write");
}

static FILE *open_out(const char *path)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL)
        die("cannot open output");
    return f;
}

static int cmd_decode(const char *out)
{
    FILE *f = open_out(out);
    for (uint32_t v = 0; v < 65536; v++) {
        float x = host_half_to_float((uint16_t)v);
        write_all(f, &x, sizeof x);
    }
    for (uint32_t v = 0; v < 65536; v++) {
        float x = host_bf16_to_float((uint16_t)v);
        write_all(f, &x, sizeof x);
    }
    for (int mode = 0; mode < 2; mode++)
        for (int e5m2 = 0; e5m2 < 2; e5m2++)
            for (uint32_t v = 0; v < 256; v++) {
                float x = host_fp8_to_float((uint8_t)v, e5m2, (host_fp8_mode)mode);
                write_all(f, &x, sizeof x);
            }
    return fclose(f) != 0;
}

static int cmd_encode(const char *in, const char *out)
{
    static const int modes[4] = {FE_TONEAREST, FE_UPWARD, FE_DOWNWARD, FE_TOWARDZERO};
    size_t len;
    unsigned char *raw = read_file(in, &len);
    size_t n = len / sizeof(float);
    float *x = malloc(n * sizeof *x + 1);
    uint16_t *h = malloc(n * sizeof *h + 1);
    uint8_t *b = malloc(n + 1);
    FILE *f = open_out(out);
    if (x == NULL || h == NULL || b == NULL)
        die("out of memory");
    memcpy(x, raw, n * sizeof *x);
    /* The conversions are integer-only, so every rounding mode must give the same bytes. */
    for (int m = 0; m < 4; m++) {
        if (fesetround(modes[m]) != 0)
            die("fesetround");
        for (size_t i = 0; i < n; i++)
            h[i] = host_float_to_half(x[i]);
        write_all(f, h, n * sizeof *h);
        for (size_t i = 0; i < n; i++)
            h[i] = host_float_to_bf16(x[i]);
        write_all(f, h, n * sizeof *h);
        for (int mode = 0; mode < 2; mode++)
            for (int e5m2 = 0; e5m2 < 2; e5m2++) {
                for (size_t i = 0; i < n; i++)
                    b[i] = host_float_to_fp8(x[i], e5m2, (host_fp8_mode)mode);
                write_all(f, b, n);
            }
    }
    fesetround(FE_TONEAREST);
    free(raw);
    free(x);
    free(h);
    free(b);
    return fclose(f) != 0;
}

typedef struct {
    int32_t dt, fp8, op, nranks;
    int64_t count;
    int32_t flags, unused;
} record_header;

static int cmd_reduce(const char *in, const char *out)
{
    size_t len, pos = 0;
    unsigned char *raw = read_file(in, &len);
    FILE *f = open_out(out);
    while (pos < len) {
        record_header hd;
        if (len - pos < sizeof hd)
            die("truncated header");
        memcpy(&hd, raw + pos, sizeof hd);
        pos += sizeof hd;
        size_t es = host_type_size((ncclDataType_t)hd.dt);
        if (es == 0 || hd.nranks < 1 || hd.nranks > 64 || hd.count < 0)
            die("bad record");
        size_t n = (size_t)hd.count, bytes = n * es, nr = (size_t)hd.nranks;
        if (len - pos < nr * 8 + nr * bytes)
            die("truncated record");
        const unsigned char *scalars = raw + pos;
        pos += nr * 8;
        size_t off = (hd.flags & FLAG_UNALIGNED) ? 1 : 0;
        unsigned char *accbuf = malloc(bytes + 16), *inbuf = malloc(bytes + 16);
        if (accbuf == NULL || inbuf == NULL)
            die("out of memory");
        unsigned char *acc = accbuf + off, *inp = inbuf + off;
        ncclDataType_t dt = (ncclDataType_t)hd.dt;
        host_fp8_mode mode = (host_fp8_mode)hd.fp8;
        host_op op;
        memset(&op, 0, sizeof op);
        if (hd.op == OP_BIAS) {
            memcpy(acc, raw + pos, bytes);
            memcpy(inp, raw + pos + bytes, bytes);
            host_reduce_add_bias(acc, inp, n, dt, mode);
        } else {
            op.kind = (host_op_kind)hd.op;
            size_t r0 = 0;
            if ((hd.flags & FLAG_PAIR) && nr >= 2) {
                /* ranks 0 and 1 in one host_reduce_pair call, each from its own buffer */
                unsigned char *in0buf = malloc(bytes + 16);
                host_op op1;
                if (in0buf == NULL)
                    die("out of memory");
                memcpy(in0buf + off, raw + pos, bytes);
                memcpy(inp, raw + pos + bytes, bytes);
                memset(&op1, 0, sizeof op1);
                op.kind = op1.kind = (host_op_kind)hd.op;
                memcpy(op.scalar, scalars, 8);
                memcpy(op1.scalar, scalars + 8, 8);
                host_reduce_pair(acc, in0buf + off, inp, n, dt, &op, &op1, mode, hd.nranks);
                op = op1;
                free(in0buf);
                r0 = 2;
            }
            for (size_t r = r0; r < nr; r++) {
                memcpy(op.scalar, scalars + 8 * r, 8);
                const unsigned char *src = raw + pos + r * bytes;
                if (r == 0 && (hd.flags & FLAG_INPLACE)) {
                    memcpy(acc, src, bytes);
                    host_reduce_prepare(acc, acc, n, dt, &op, mode, hd.nranks);
                } else {
                    memcpy(inp, src, bytes);
                    if (r == 0)
                        host_reduce_prepare(acc, inp, n, dt, &op, mode, hd.nranks);
                    else
                        host_reduce_step(acc, inp, n, dt, &op, mode, hd.nranks);
                }
            }
            if (hd.flags & FLAG_SELF_STEP)
                host_reduce_step(acc, acc, n, dt, &op, mode, hd.nranks);
            host_reduce_finish(acc, n, dt, &op, hd.nranks);
        }
        pos += nr * bytes;
        write_all(f, acc, bytes);
        free(accbuf);
        free(inbuf);
    }
    free(raw);
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "sizes") == 0) {
        for (int dt = -1; dt <= 12; dt++)
            printf("%zu\n", host_type_size((ncclDataType_t)dt));
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "decode") == 0)
        return cmd_decode(argv[2]);
    if (argc == 4 && strcmp(argv[1], "encode") == 0)
        return cmd_encode(argv[2], argv[3]);
    if (argc == 4 && strcmp(argv[1], "reduce") == 0)
        return cmd_reduce(argv[2], argv[3]);
    die("usage: sizes | decode OUT | encode IN OUT | reduce IN OUT");
    return 2;
}
