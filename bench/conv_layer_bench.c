/*
 * conv_layer_bench.c - CPU time per call, on one thread, of the public
 * convolution kernels (the set AMPRT_ISA chooses) layer by layer, f32 and
 * bf16: for comparing two builds of the runtime, or a set with the FMA
 * peak (bench/results/2026-11-28-depthwise.md, 2026-11-28-zen4.md).
 *
 *   cc -std=c99 -O2 -Iruntime/include bench/conv_layer_bench.c libamprt.a -lm -lpthread -o conv_layer_bench
 *   AMPRT_THREADS=1 [AMPRT_ISA=avx2] ./conv_layer_bench [BATCH [RUNS [LAYERS [PASS]]]]
 *
 * BATCH 1 and RUNS 15 by default.  LAYERS: "mobile" (default: the
 * depthwise layers of mobilenet_v2 and mnasnet1_0 and the grouped layers
 * of resnext50_32x4d at 224 x 224) or "resnet18" (its convolutions, one
 * of each shape).  PASS: "forward" (amp_conv_T, default), "input"
 * (the input gradient, amp_conv_transpose_T as the emitted training step
 * calls it) or "weight" (the weight gradient: amp_conv_backward_weight_f32,
 * and for bf16 amp_conv_backward_weight_to_f32_bf16 as training calls it).
 *
 * Prints per layer and dtype the median and the fastest of RUNS calls
 * (after two untimed ones) of process CPU time in microseconds and the
 * fastest call's GFLOP/s (2 x multiply-adds of the convolution), and the
 * totals per dtype.  CPU time, not wall time: on a machine loaded beyond
 * its CPUs it is what the work costs.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amprt.h"

typedef struct {
    const char *what;
    int64_t cin, cout, groups, hw, kernel, stride;
} layer;

static const layer mobile_layers[] = {
    { "mbv2 dw 32 112 s1", 32, 32, 32, 112, 3, 1 },
    { "mbv2 dw 96 112 s2", 96, 96, 96, 112, 3, 2 },
    { "mbv2 dw 144 56 s1", 144, 144, 144, 56, 3, 1 },
    { "mbv2 dw 144 56 s2", 144, 144, 144, 56, 3, 2 },
    { "mbv2 dw 192 28 s1", 192, 192, 192, 28, 3, 1 },
    { "mbv2 dw 384 14 s1", 384, 384, 384, 14, 3, 1 },
    { "mbv2 dw 576 14 s2", 576, 576, 576, 14, 3, 2 },
    { "mbv2 dw 960 7 s1", 960, 960, 960, 7, 3, 1 },
    { "mnas dw5 72 56 s2", 72, 72, 72, 56, 5, 2 },
    { "mnas dw5 120 28 s1", 120, 120, 120, 28, 5, 1 },
    { "mnas dw5 480 14 s1", 480, 480, 480, 14, 5, 1 },
    { "mnas dw5 1152 7 s1", 1152, 1152, 1152, 7, 5, 1 },
    { "resnext g32 128 56 s1", 128, 128, 32, 56, 3, 1 },
    { "resnext g32 256 28 s1", 256, 256, 32, 28, 3, 1 },
    { "resnext g32 512 14 s1", 512, 512, 32, 14, 3, 1 },
    { "resnext g32 1024 7 s1", 1024, 1024, 32, 7, 3, 1 },
    { NULL, 0, 0, 0, 0, 0, 0 },
};

static const layer resnet18_layers[] = {
    { "r18 conv1 3 224 k7 s2", 3, 64, 1, 224, 7, 2 },
    { "r18 layer1 64 56", 64, 64, 1, 56, 3, 1 },
    { "r18 layer2 64 56 s2", 64, 128, 1, 56, 3, 2 },
    { "r18 layer2 128 28", 128, 128, 1, 28, 3, 1 },
    { "r18 layer3 128 28 s2", 128, 256, 1, 28, 3, 2 },
    { "r18 layer3 256 14", 256, 256, 1, 14, 3, 1 },
    { "r18 layer4 256 14 s2", 256, 512, 1, 14, 3, 2 },
    { "r18 layer4 512 7", 512, 512, 1, 7, 3, 1 },
    { "r18 down 64 56 k1 s2", 64, 128, 1, 56, 1, 2 },
    { NULL, 0, 0, 0, 0, 0, 0 },
};

static double cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { FORWARD, PACKED, INPUT_GRAD, WEIGHT_GRAD };

/* One call of the pass: forward y = conv(x, w); the input gradient into x
 * from y as dy (the transposed convolution of d's shapes); the weight
 * gradient into w (f32) or dw32 (bf16's f32 gradient) from x and y as dy. */
static void conv(int pass, amp_dtype t, const amp_conv_desc *d, void *x, void *w, const void *packed, void *y,
                 float *dw32)
{
    if (pass == PACKED) {
        if (t == AMP_F32)
            amp_conv_ex_f32(d, x, NULL, packed, NULL, NULL, y);
        else
            amp_conv_ex_bf16(d, x, NULL, packed, NULL, NULL, y);
    } else if (pass == FORWARD) {
        if (t == AMP_F32)
            amp_conv_f32(d, x, w, NULL, y);
        else
            amp_conv_bf16(d, x, w, NULL, y);
    } else if (pass == INPUT_GRAD) {
        amp_conv_desc dt = *d;
        dt.in_channels = d->out_channels;
        dt.out_channels = d->in_channels;
        for (int i = 0; i < d->nspatial; i++) {
            dt.in_size[i] = d->out_size[i];
            dt.out_size[i] = d->in_size[i];
        }
        if (t == AMP_F32)
            amp_conv_transpose_f32(&dt, y, w, NULL, x);
        else
            amp_conv_transpose_bf16(&dt, y, w, NULL, x);
    } else if (t == AMP_F32) {
        amp_conv_backward_weight_f32(d, x, y, w);
    } else {
        amp_conv_backward_weight_to_f32_bf16(d, x, y, dw32, 0);
    }
}

int main(int argc, char **argv)
{
    const int64_t batch = argc > 1 ? atoll(argv[1]) : 1;
    const int runs = argc > 2 ? atoi(argv[2]) : 15;
    const char *which = argc > 3 ? argv[3] : "mobile", *pass_name = argc > 4 ? argv[4] : "forward";
    const layer *layers = strcmp(which, "resnet18") == 0 ? resnet18_layers : strcmp(which, "mobile") == 0 ? mobile_layers : NULL;
    const int pass = strcmp(pass_name, "forward") == 0 ? FORWARD : strcmp(pass_name, "packed") == 0 ? PACKED : strcmp(pass_name, "input") == 0 ? INPUT_GRAD
                     : strcmp(pass_name, "weight") == 0 ? WEIGHT_GRAD : -1;
    if (layers == NULL || pass < 0) {
        fprintf(stderr, "usage: conv_layer_bench [BATCH [RUNS [mobile|resnet18 [forward|packed|input|weight]]]]\n");
        return 2;
    }
    static const amp_dtype types[] = { AMP_F32, AMP_BF16 };
    double *ts = malloc((size_t)(runs > 0 ? runs : 1) * sizeof *ts);
    if (ts == NULL || runs < 1 || batch < 1)
        return 1;
    printf("kernel set %s, batch %lld, %s layers, %s pass; CPU us per call: median fastest, GFLOP/s of the fastest\n",
           amp_isa_name(), (long long)batch, which, pass_name);
    for (int ti = 0; ti < 2; ti++) {
        const amp_dtype t = types[ti];
        double total_med = 0, total_min = 0;
        for (size_t li = 0; layers[li].what != NULL; li++) {
            const layer *l = &layers[li];
            amp_conv_desc d;
            memset(&d, 0, sizeof d);
            d.nspatial = 2;
            d.batch = batch;
            d.in_channels = l->cin;
            d.out_channels = l->cout;
            d.groups = l->groups;
            for (int i = 0; i < 2; i++) {
                d.in_size[i] = l->hw;
                d.kernel[i] = l->kernel;
                d.stride[i] = l->stride;
                d.padding[i] = l->kernel / 2;
                d.dilation[i] = 1;
                d.out_size[i] = (l->hw + 2 * (l->kernel / 2) - l->kernel) / l->stride + 1;
            }
            const size_t es = amp_dtype_size(t);
            const size_t nx = (size_t)(batch * l->cin * l->hw * l->hw);
            const size_t nw = (size_t)(l->cout * (l->cin / l->groups) * l->kernel * l->kernel);
            const size_t ny = (size_t)(batch * l->cout * d.out_size[0] * d.out_size[1]);
            unsigned char *x = malloc(nx * es), *w = malloc(nw * es), *y = malloc(ny * es);
            float *dw32 = malloc(nw * sizeof *dw32);
            if (x == NULL || w == NULL || y == NULL || dw32 == NULL)
                return 1;
            for (size_t i = 0; i < nx; i++)
                amp_store_from_f32(t, x, i, (float)((i * 7919) % 2001) / 1000.0f - 1.0f);
            for (size_t i = 0; i < nw; i++)
                amp_store_from_f32(t, w, i, (float)((i * 104729) % 2001) / 4000.0f - 0.25f);
            for (size_t i = 0; pass != FORWARD && i < ny; i++) /* y is dy: small values */
                amp_store_from_f32(t, y, i, (float)((i * 7919) % 2001) / 8000.0f - 0.125f);
            void *packed = NULL;
            if (pass == PACKED) {
                const size_t bytes = t == AMP_F32 ? amp_conv_packed_bytes_f32(&d) : amp_conv_packed_bytes_bf16(&d);
                if (posix_memalign(&packed, 64, bytes) != 0)
                    return 1;
                if (t == AMP_F32)
                    amp_conv_pack_weights_f32(&d, t, w, packed);
                else
                    amp_conv_pack_weights_bf16(&d, t, w, packed);
            }
            for (int r = 0; r < 2; r++)
                conv(pass, t, &d, x, w, packed, y, dw32);
            for (int r = 0; r < runs; r++) {
                const double t0 = cpu_us();
                conv(pass, t, &d, x, w, packed, y, dw32);
                ts[r] = cpu_us() - t0;
            }
            qsort(ts, (size_t)runs, sizeof *ts, cmp_double);
            const double flops = 2.0 * (double)ny * (double)(l->cin / l->groups) * (double)(l->kernel * l->kernel);
            printf("%-24s %-4s %10.1f %10.1f %8.1f\n", l->what, amp_dtype_name(t), ts[runs / 2], ts[0],
                   flops / ts[0] * 1e-3);
            total_med += ts[runs / 2];
            total_min += ts[0];
            free(x);
            free(w);
            free(y);
            free(dw32);
            free(packed);
        }
        printf("%-24s %-4s %10.1f %10.1f\n", "total", amp_dtype_name(t), total_med, total_min);
    }
    free(ts);
    return 0;
}
