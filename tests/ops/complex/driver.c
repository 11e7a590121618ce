/*
 * driver.c - runs tests/ops/complex/cx.amp's emitted C (cx.c / cx.h)
 * on fixed inputs and prints every input and output as text, one tensor a
 * line: `name count v0 v1 ...`, complex elements as their two parts, each
 * value as a C99 hex float (exact).  ref.py reads it; run.sh builds and runs both.
 * Built with -DCX_F32 it drives the f32 / c64 form of the model instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cx.h"

#ifdef CX_F32
typedef float real;
typedef amp_c64 cplx;
#else
typedef double real;
typedef amp_c128 cplx;
#endif

#define INPUTS(ITEM) ITEM(x, X, real, 0) ITEM(y, Y, real, 0) ITEM(z, Z, cplx, 1) ITEM(m, M, real, 0) ITEM(w, W, real, 0) ITEM(p, P, real, 0)
#define OUTPUTS(ITEM)                                                                                              \
    ITEM(f, F, cplx, 1) ITEM(fi, FI, cplx, 1) ITEM(f2, F2, cplx, 1) ITEM(fn, FN, cplx, 1) ITEM(ifn, IFN, cplx, 1)               \
    ITEM(r, R, cplx, 1) ITEM(ir, IR, real, 0) ITEM(ir7, IR7, real, 0) ITEM(r2, R2, cplx, 1) ITEM(ir2, IR2, real, 0)                    \
    ITEM(rn, RN, cplx, 1) ITEM(irn, IRN, real, 0) ITEM(f2s, F2S, cplx, 1) ITEM(fnd, FND, cplx, 1) ITEM(rns, RNS, cplx, 1)                  \
    ITEM(h, H, real, 0) ITEM(ih, IH, cplx, 1) ITEM(s1, S1, cplx, 1)                   \
    ITEM(s2, S2, cplx, 1) ITEM(s3, S3, cplx, 1) ITEM(po, PO, cplx, 1) ITEM(vc, VC, cplx, 1) ITEM(vr, VR, real, 0)                 \
    ITEM(re, RE, real, 0) ITEM(im, IM, real, 0) ITEM(ab, AB, real, 0) ITEM(an, AN, real, 0) ITEM(cj, CJ, cplx, 1) ITEM(ax, AX, real, 0)      \
    ITEM(ar, AR, real, 0) ITEM(vals, VALS, cplx, 1) ITEM(vecs, VECS, cplx, 1) ITEM(ev, EV, cplx, 1)

static void dump(const char *name, const real *v, size_t n)
{
    printf("%s %zu", name, n);
    for (size_t i = 0; i < n; i++)
        printf(" %a", (double)v[i]);
    printf("\n");
}

int main(void)
{
    cx_dims dims = {3};
    cx_inputs in;
    cx_outputs out;
    cx_params params = {0};
    unsigned seed = 12345;
#define FILL(name, NAME, T, is_complex)                                                                       \
    size_t n_##name = CX_##NAME##_NUMEL(dims.B) * (is_complex ? 2 : 1);                                \
    real *in_##name = malloc(n_##name * sizeof(real));                                       \
    for (size_t i = 0; i < n_##name; i++) {                                                      \
        seed = seed * 1103515245u + 12345u;                                                      \
        in_##name[i] = (real)((double)(seed >> 8 & 0xffff) / 32768.0 - 1);                               \
    }                                                                                            \
    in.name = (const T *)(const void *)in_##name;                                                \
    dump("in." #name, in_##name, n_##name);
    INPUTS(FILL)
#define ALLOC(name, NAME, T, is_complex)                                                                      \
    size_t n_out_##name = CX_##NAME##_NUMEL(dims.B) * (is_complex ? 2 : 1);                            \
    out.name = malloc(n_out_##name * sizeof(real));
    OUTPUTS(ALLOC)
    size_t bytes = cx_arena_bytes(&dims);
    void *arena = malloc(bytes ? bytes : 1);
    int rc = cx_forward(&params, &in, &out, &dims, arena, bytes);
    if (rc != AMP_OK) {
        fprintf(stderr, "cx_forward: %s\n", cx_strerror(rc));
        return 1;
    }
#define DUMP(name, NAME, T, is_complex) dump("out." #name, (const real *)(const void *)out.name, n_out_##name);
    OUTPUTS(DUMP)
    return 0;
}
