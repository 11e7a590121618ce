/*
 * reduce.c - the sum the kernel sets share for a reduced innermost dim:
 * the [R1, O, R2] form of frame/reduce_form.h (a convolution's bias
 * gradient, [batch, channels, plane] summed over batch and plane).  Each
 * output element is the reference's one f32 chain over its values in the
 * reference's order (r1, then r2 ascending), so the results equal the
 * reference bit for bit; the speed comes from running CHAINS outputs'
 * chains side by side (independent adds the core overlaps) over rows read
 * straight along memory, instead of the reference's per-element index
 * walk.  Plain C, one copy for every set.
 */
#include "amprt_internal.h"
#include "frame/reduce_form.h"

/* Outputs whose chains run side by side: enough independent adds to hide
 * an add's latency on the cores the sets run on (4 cycles, 2 ports). */
#define CHAINS 8

/* rows_sum for one dtype t (a constant where it is inlined, so each
 * instance loads its dtype without a switch per element). */
static AMP_ALWAYS_INLINE void rows_sum(amp_dtype t, int64_t R1, int64_t O, int64_t R2, const char *x, void *y)
{
    const size_t es = amp_dtype_size(t);
    int64_t o0 = 0;
    for (; o0 + CHAINS <= O; o0 += CHAINS) {
        float acc[CHAINS] = { 0 };
        for (int64_t r1 = 0; r1 < R1; r1++) {
            const char *row = x + (size_t)((r1 * O + o0) * R2) * es;
            for (int64_t r2 = 0; r2 < R2; r2++)
                for (int c = 0; c < CHAINS; c++)
                    acc[c] += amp_ld(t, row, c * R2 + r2);
        }
        for (int c = 0; c < CHAINS; c++)
            amp_st(t, y, o0 + c, acc[c]);
    }
    for (; o0 < O; o0++) {
        float acc = 0;
        for (int64_t r1 = 0; r1 < R1; r1++) {
            const char *row = x + (size_t)((r1 * O + o0) * R2) * es;
            for (int64_t r2 = 0; r2 < R2; r2++)
                acc += amp_ld(t, row, r2);
        }
        amp_st(t, y, o0, acc);
    }
}

void amp_sum_rows_form(amp_dtype t, int64_t R1, int64_t O, int64_t R2, const void *x, void *y)
{
    switch (t) {
    case AMP_BF16: rows_sum(AMP_BF16, R1, O, R2, x, y); break;
    case AMP_F16: rows_sum(AMP_F16, R1, O, R2, x, y); break;
    default: rows_sum(AMP_F32, R1, O, R2, x, y); break;
    }
}
