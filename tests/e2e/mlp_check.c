/* mlp_check.c: end-to-end check of the compiled examples/mlp.amp, for any
 * target.  Runs the generated mlp_forward and compares it with the same
 * model evaluated independently of the runtime: in double precision, with
 * values rounded to the low dtype exactly where autocast rounds them (x, W
 * and b before each linear, each linear's output), by a rounding function
 * of its own (frexp/ldexp/nearbyint, not the runtime's bit tricks).
 *
 * What may still differ, and the tolerance that follows: the runtime
 * accumulates in f32, the reference in double, so a value that lands
 * within about K * 2^-24 of a rounding boundary of the low dtype may round
 * the other way: one ulp of the low dtype in a logit, plus one ulp of each
 * hidden unit times its weight.  Anything beyond that (rounding twice,
 * accumulating in the low dtype, a wrong cast point) fails.  The loss,
 * computed in f32 from the logits (through a low-dtype log_softmax on cpu),
 * may move by twice one logit ulp (a flip) plus one low-dtype ulp of its
 * own value (the cpu log_softmax rounding), plus f32 noise.
 *
 * It also checks the entry point's error codes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlp.h"

enum { IN = 64, HID = 128, OUT = 10 };

static uint32_t rng_state = 0x9e3779b9u;

static float uniform(float lo, float hi)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}

/* Significand bits and smallest normal exponent of a storage dtype. */
static int precision(amp_dtype t) { return t == AMP_BF16 ? 8 : t == AMP_F16 ? 11 : 24; }
static int min_exponent(amp_dtype t) { return t == AMP_F16 ? -14 : -126; }

/* Round v to the dtype, to nearest even, subnormals kept. */
static double round_to(amp_dtype t, double v)
{
    if (v == 0 || !isfinite(v))
        return v;
    int e;
    frexp(v, &e); /* v = m * 2^e, 0.5 <= |m| < 1 */
    int quantum = e - precision(t);
    if (quantum < min_exponent(t) - precision(t) + 1)
        quantum = min_exponent(t) - precision(t) + 1;
    return ldexp(nearbyint(ldexp(v, -quantum)), quantum);
}

/* The spacing of the dtype's values around v. */
static double ulp(amp_dtype t, double v)
{
    int e;
    frexp(v == 0 ? ldexp(1, min_exponent(t)) : v, &e);
    int quantum = e - precision(t);
    if (quantum < min_exponent(t) - precision(t) + 1)
        quantum = min_exponent(t) - precision(t) + 1;
    return ldexp(1, quantum);
}

static int failures;

typedef struct TensorSpec {
    const char *name;
    const float *data;
    int ndim;
    int64_t d0, d1;
} TensorSpec;

/* A minimal safetensors writer: the header JSON, then the f32 data in order. */
static int write_safetensors(const char *path, int n, const TensorSpec *ts)
{
    char header[4096];
    size_t len = 0;
    uint64_t offset = 0;
    len += (size_t)snprintf(header + len, sizeof header - len, "{");
    for (int i = 0; i < n; i++) {
        uint64_t bytes = (uint64_t)(ts[i].ndim == 2 ? ts[i].d0 * ts[i].d1 : ts[i].d0) * 4;
        if (ts[i].ndim == 2)
            len += (size_t)snprintf(header + len, sizeof header - len,
                                    "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld,%lld],\"data_offsets\":[%llu,%llu]}",
                                    i ? "," : "", ts[i].name, (long long)ts[i].d0, (long long)ts[i].d1,
                                    (unsigned long long)offset, (unsigned long long)(offset + bytes));
        else
            len += (size_t)snprintf(header + len, sizeof header - len,
                                    "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld],\"data_offsets\":[%llu,%llu]}",
                                    i ? "," : "", ts[i].name, (long long)ts[i].d0, (unsigned long long)offset,
                                    (unsigned long long)(offset + bytes));
        offset += bytes;
    }
    len += (size_t)snprintf(header + len, sizeof header - len, "}");
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    unsigned char size[8];
    for (int i = 0; i < 8; i++)
        size[i] = (unsigned char)((uint64_t)len >> (8 * i));
    fwrite(size, 1, 8, f);
    fwrite(header, 1, len, f);
    for (int i = 0; i < n; i++)
        fwrite(ts[i].data, 4, (size_t)(ts[i].ndim == 2 ? ts[i].d0 * ts[i].d1 : ts[i].d0), f);
    return fclose(f);
}

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL: %s\n", what);
        failures++;
    }
}

int main(void)
{
    const int64_t B = 16;
    static float w1[HID * IN], b1[HID], w2[OUT * HID], b2[OUT], x[16 * IN];
    static int64_t y[16];
    for (int i = 0; i < HID * IN; i++)
        w1[i] = uniform(-0.125f, 0.125f);
    for (int i = 0; i < HID; i++)
        b1[i] = uniform(-0.125f, 0.125f);
    for (int i = 0; i < OUT * HID; i++)
        w2[i] = uniform(-0.0884f, 0.0884f);
    for (int i = 0; i < OUT; i++)
        b2[i] = uniform(-0.0884f, 0.0884f);
    for (int i = 0; i < B * IN; i++)
        x[i] = uniform(-3.0f, 3.0f);
    for (int i = 0; i < B; i++)
        y[i] = (i * 3) % OUT;
    y[5] = -100; /* ignore_index: this row does not count in the mean */

    /* the reference: double arithmetic, low-dtype rounding where autocast
     * puts it (linear's operands and output; relu is exact) */
    const amp_dtype low = MLP_LOGITS_DTYPE;
    static double h[16 * HID], ref_logits[16 * OUT], tol[16 * OUT];
    for (int n = 0; n < B; n++) {
        for (int j = 0; j < HID; j++) {
            double acc = round_to(low, b1[j]);
            for (int k = 0; k < IN; k++)
                acc += round_to(low, x[n * IN + k]) * round_to(low, w1[j * IN + k]);
            acc = round_to(low, acc);
            h[n * HID + j] = acc > 0 ? acc : 0;
        }
        for (int i = 0; i < OUT; i++) {
            double acc = round_to(low, b2[i]), flips = 0;
            for (int j = 0; j < HID; j++) {
                acc += h[n * HID + j] * round_to(low, w2[i * HID + j]);
                if (h[n * HID + j] > 0)
                    flips += fabs(w2[i * HID + j]) * ulp(low, h[n * HID + j]);
            }
            ref_logits[n * OUT + i] = round_to(low, acc);
            tol[n * OUT + i] = ulp(low, acc) + flips;
        }
    }
    double ref_loss = 0;
    int counted = 0;
    for (int n = 0; n < B; n++) {
        if (y[n] == -100)
            continue;
        double mx = -INFINITY, sum = 0;
        for (int i = 0; i < OUT; i++)
            mx = fmax(mx, ref_logits[n * OUT + i]);
        for (int i = 0; i < OUT; i++)
            sum += exp(ref_logits[n * OUT + i] - mx);
        ref_loss += -(ref_logits[n * OUT + y[n]] - mx - log(sum));
        counted++;
    }
    ref_loss /= counted;

    /* the compiled model */
    mlp_dims dims = {.B = B};
    mlp_params params = {.fc1_weight = w1, .fc1_bias = b1, .fc2_weight = w2, .fc2_bias = b2};
    mlp_inputs inputs = {.x = x, .y = y};
    static unsigned char logits_mem[16 * OUT * 4];
    float loss;
    mlp_outputs outputs = {.logits = (void *)logits_mem, .loss = &loss};
    size_t arena_bytes = mlp_arena_bytes(&dims);
    void *arena = malloc(arena_bytes);
    int rc = mlp_forward(&params, &inputs, &outputs, &dims, arena, arena_bytes);
    expect(rc == AMP_OK, "mlp_forward returns AMP_OK");

    double worst = 0, max_err = 0, max_ulp = 0;
    int exact = 0;
    for (int i = 0; i < B * OUT; i++) {
        double got = amp_load_as_f32(MLP_LOGITS_DTYPE, logits_mem, (size_t)i);
        double err = fabs(got - ref_logits[i]);
        worst = fmax(worst, err / tol[i]);
        max_err = fmax(max_err, err);
        max_ulp = fmax(max_ulp, ulp(low, ref_logits[i]));
        exact += err == 0;
    }
    printf("logits (%s): %d of %d bit-exact, max |error| %.3g, worst error/tolerance %.3f\n",
           amp_dtype_name(MLP_LOGITS_DTYPE), exact, (int)(B * OUT), max_err, worst);
    expect(worst <= 1.0, "logits within the dtype-derived tolerance");
    /* cpu runs log_softmax in bf16 (not in PyTorch's CPU lists): one more rounding */
    double loss_tol = 2 * max_ulp + ulp(low, ref_loss) + 1e-5;
    printf("loss: %.7f, reference %.7f, |error| %.3g, tolerance %.3g\n", loss, ref_loss, fabs(loss - ref_loss),
           loss_tol);
    expect(fabs(loss - ref_loss) <= loss_tol, "loss within tolerance");

    /* weights from a safetensors file, by state_dict name, give the same logits */
    {
        static unsigned char loaded_logits[16 * OUT * 4];
        float loaded_loss;
        mlp_outputs lout = {.logits = (void *)loaded_logits, .loss = &loaded_loss};
        mlp_params lp;
        void *storage = malloc(MLP_WEIGHTS_BYTES);
        const TensorSpec ts[] = {
            {"fc1.weight", w1, 2, HID, IN}, {"fc1.bias", b1, 1, HID, 0},
            {"fc2.weight", w2, 2, OUT, HID}, {"fc2.bias", b2, 1, OUT, 0},
        };
        expect(write_safetensors("mlp-weights.safetensors", 4, ts) == 0, "write a safetensors file");
        expect(mlp_load_weights("mlp-weights.safetensors", storage, MLP_WEIGHTS_BYTES, &lp) == AMP_OK,
               "mlp_load_weights reads it");
        expect(mlp_forward(&lp, &inputs, &lout, &dims, arena, arena_bytes) == AMP_OK &&
                   memcmp(loaded_logits, logits_mem, sizeof loaded_logits) == 0 && loaded_loss == loss,
               "loaded weights give bit-identical outputs");
        {
            /* saved by mlp_save_weights and loaded again: the same outputs */
            mlp_params sp;
            void *saved = malloc(MLP_WEIGHTS_BYTES);
            expect(mlp_save_weights(&lp, "mlp-saved.safetensors") == AMP_OK &&
                       mlp_load_weights("mlp-saved.safetensors", saved, MLP_WEIGHTS_BYTES, &sp) == AMP_OK &&
                       mlp_forward(&sp, &inputs, &lout, &dims, arena, arena_bytes) == AMP_OK &&
                       memcmp(loaded_logits, logits_mem, sizeof loaded_logits) == 0 && loaded_loss == loss,
                   "mlp_save_weights writes what mlp_load_weights reads back, bit for bit");
            free(saved);
        }
        expect(mlp_load_weights("mlp-weights.safetensors", storage, MLP_WEIGHTS_BYTES - 1, &lp) == AMP_ERR_ARENA_TOO_SMALL,
               "storage one byte short is refused");
        expect(write_safetensors("mlp-missing.safetensors", 3, ts) == 0 &&
                   mlp_load_weights("mlp-missing.safetensors", storage, MLP_WEIGHTS_BYTES, &lp) == AMP_ERR_WEIGHTS_MISSING,
               "a missing tensor is reported");
        {
            char why[512], want[128];
            snprintf(want, sizeof want, "no tensor 'fc2.bias' in the file (the model's f32[%d])", (int)OUT);
            expect(mlp_load_weights_ex("mlp-missing.safetensors", storage, MLP_WEIGHTS_BYTES, &lp, why, sizeof why) ==
                           AMP_ERR_WEIGHTS_MISSING &&
                       strcmp(why, want) == 0,
                   "mlp_load_weights_ex names the missing tensor");
        }
        expect(mlp_load_weights("no-such-file.safetensors", storage, MLP_WEIGHTS_BYTES, &lp) == AMP_ERR_IO,
               "a missing file is an I/O error");
        FILE *f = fopen("mlp-weights.safetensors", "rb");
        static unsigned char bytes[1 << 18];
        size_t n = f ? fread(bytes, 1, sizeof bytes, f) : 0;
        if (f)
            fclose(f);
        f = fopen("mlp-truncated.safetensors", "wb");
        if (f) {
            fwrite(bytes, 1, n - 1, f);
            fclose(f);
        }
        expect(mlp_load_weights("mlp-truncated.safetensors", storage, MLP_WEIGHTS_BYTES, &lp) == AMP_ERR_WEIGHTS_TRUNCATED,
               "a file one byte short is reported as truncated");
        {
            /* the same file's bytes from memory (the loader of a runtime
             * without files): the same outputs; one byte short, the same
             * status and message as the file */
            mlp_params bp;
            char why[512];
            void *from_bytes = malloc(MLP_WEIGHTS_BYTES);
            memset(loaded_logits, 0, sizeof loaded_logits);
            loaded_loss = 0.0f;
            expect(n > 0 && mlp_load_weights_bytes(bytes, n, from_bytes, MLP_WEIGHTS_BYTES, &bp, why, sizeof why) == AMP_OK &&
                       why[0] == '\0' && mlp_forward(&bp, &inputs, &lout, &dims, arena, arena_bytes) == AMP_OK &&
                       memcmp(loaded_logits, logits_mem, sizeof loaded_logits) == 0 && loaded_loss == loss,
                   "mlp_load_weights_bytes reads the file's bytes: bit-identical outputs");
            expect(mlp_load_weights_bytes(bytes, n - 1, from_bytes, MLP_WEIGHTS_BYTES, &bp, why, sizeof why) ==
                           AMP_ERR_WEIGHTS_TRUNCATED &&
                       strcmp(why, amp_strerror(AMP_ERR_WEIGHTS_TRUNCATED)) == 0,
                   "mlp_load_weights_bytes refuses the bytes one short, with the status's text");
            expect(mlp_load_weights_bytes(NULL, n, from_bytes, MLP_WEIGHTS_BYTES, &bp, NULL, 0) == AMP_ERR_NULL_ARG,
                   "mlp_load_weights_bytes refuses NULL bytes");
            free(from_bytes);
        }
        {
            char why[512];
            expect(mlp_load_weights_ex("mlp-truncated.safetensors", storage, MLP_WEIGHTS_BYTES, &lp, why, sizeof why) ==
                           AMP_ERR_WEIGHTS_TRUNCATED &&
                       strcmp(why, amp_strerror(AMP_ERR_WEIGHTS_TRUNCATED)) == 0,
                   "... with its text as mlp_load_weights_ex's message");
        }
        free(storage);
    }

    /* weights prepared once (mlp_prepare): the same outputs, bit for bit;
     * a block that is not this model's prepared block is refused */
    {
        const size_t prepared_bytes = mlp_prepared_bytes();
        uint64_t *prepared = malloc(prepared_bytes);
        static unsigned char prepared_logits[16 * OUT * 4];
        float prepared_loss;
        mlp_outputs pout = {.logits = (void *)prepared_logits, .loss = &prepared_loss};
        expect(prepared != NULL, "allocate the prepared block");
        expect(mlp_prepare(&params, prepared, prepared_bytes - 1) == AMP_ERR_ARENA_TOO_SMALL,
               "a prepared block one byte short is refused");
        expect(mlp_prepare(&params, prepared, prepared_bytes) == AMP_OK, "mlp_prepare fills the block");
        expect(mlp_forward_prepared(prepared, &params, &inputs, &pout, &dims, arena, arena_bytes) == AMP_OK &&
                   memcmp(prepared_logits, logits_mem, sizeof prepared_logits) == 0 &&
                   memcmp(&prepared_loss, &loss, sizeof loss) == 0,
               "the prepared forward gives bit-identical outputs");
        prepared[0] ^= 1; /* another model's (or target's, or prefix's) magic */
        expect(mlp_forward_prepared(prepared, &params, &inputs, &pout, &dims, arena, arena_bytes) ==
                   AMP_ERR_BAD_PREPARED,
               "a block with another model's magic gives AMP_ERR_BAD_PREPARED");
        prepared[0] ^= 1;
        prepared[1] += 1;
        expect(mlp_forward_prepared(prepared, &params, &inputs, &pout, &dims, arena, arena_bytes) ==
                   AMP_ERR_BAD_PREPARED,
               "a block with another entry count gives AMP_ERR_BAD_PREPARED");
        memset(prepared, 0, prepared_bytes);
        expect(mlp_forward_prepared(prepared, &params, &inputs, &pout, &dims, arena, arena_bytes) ==
                   AMP_ERR_BAD_PREPARED,
               "a block never prepared (zeroed) gives AMP_ERR_BAD_PREPARED");
        free(prepared);
    }

    /* the entry point's contract */
    expect(mlp_forward(&params, &inputs, &outputs, &dims, arena, arena_bytes - 1) == AMP_ERR_ARENA_TOO_SMALL,
           "a one-byte-short arena is refused");
    mlp_dims negative = {.B = -1};
    expect(mlp_forward(&params, &inputs, &outputs, &negative, arena, arena_bytes) == AMP_ERR_BAD_DIM,
           "a negative batch is refused");
    mlp_dims huge = {.B = INT64_MAX / 2};
    expect(mlp_forward(&params, &inputs, &outputs, &huge, arena, arena_bytes) == AMP_ERR_BAD_DIM,
           "a batch whose buffers overflow 64 bits is refused");
    mlp_params missing = params;
    missing.fc2_bias = NULL;
    expect(mlp_forward(&missing, &inputs, &outputs, &dims, arena, arena_bytes) == AMP_ERR_NULL_ARG,
           "a missing parameter is refused");
    y[3] = OUT; /* class index one past the end */
    expect(mlp_forward(&params, &inputs, &outputs, &dims, arena, arena_bytes) == AMP_ERR_TARGET_OUT_OF_RANGE,
           "a label outside [0, 10) is reported");
    y[3] = 0;
    mlp_dims empty = {.B = 0};
    expect(mlp_forward(&params, &inputs, &outputs, &empty, arena, mlp_arena_bytes(&empty)) == AMP_OK && isnan(loss),
           "an empty batch gives a NaN mean loss, as PyTorch's nll_loss does");
    free(arena);
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
