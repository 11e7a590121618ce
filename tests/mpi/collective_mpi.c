/*
 * collective_mpi.c - amprt/collective.h on MPI, run by tests/mpi/run.sh
 * under `mpirun -np W` (W = 2 and 3) with AMPRT_ALLREDUCE_BUCKET_BYTES=64,
 * so that 16 f32 (or 32 bf16, 8 f64) elements fill a bucket and the tensors
 * below take many buckets, split across bucket boundaries, with both
 * staging buffers in flight; and once with the default buckets.
 *
 * Every value is a small multiple of 1/4, so every partial sum is exact
 * in f32 and in bf16 whatever order MPI adds in: the expected mean is the
 * exact sum times (float)(1/W), rounded once to the tensor's dtype, and
 * the check is exact.  One case is built to differ between the wire types
 * (1 + 2^-10 survives f32 and rounds to 1 in bf16), so a bf16 setting that
 * did nothing would fail.  Each process also compares its results with
 * process 0's, byte for byte.  The push-style reduction is compared with
 * amp_allreduce_mean on values whose sums are not exact (rough()), so
 * only the same buckets give the same bits.  Prints "ok ..." lines from rank 0; exits
 * non-zero on any failure.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amprt.h"

static int rank, world, failures;

static void fail(const char *what, size_t i, double got, double want)
{
    if (failures++ < 10)
        fprintf(stderr, "rank %d: %s [%zu]: got %.9g, want %.9g\n", rank, what, i, got, want);
}

/* The value process r contributes at element i of tensor k: a multiple of
 * 1/4 in [-8, 8), so a sum over up to 4 processes needs at most 8
 * significant bits and is exact in bf16 (and f16) in any order. */
static double value(int k, size_t i, int r)
{
    return (double)((int)((i * 7 + (size_t)k * 3 + (size_t)r * 5) % 64) - 32) / 4.0;
}

/* Sizes chosen to straddle the 16-element f32 bucket: empty, one, an
 * exact bucket, and several that split; the two large ones also exceed
 * the 16384 elements packed between two polls of the bucket in flight,
 * when run with the default 4 MiB buckets. */
static const size_t sizes[] = {0, 1, 16, 37, 100, 5, 257, 40000, 20001};
static const amp_dtype dtypes[] = {AMP_F32, AMP_BF16, AMP_F32, AMP_F16, AMP_F64, AMP_F32, AMP_F64, AMP_F32, AMP_BF16};
enum { NT = sizeof sizes / sizeof sizes[0] };

static void store(amp_dtype t, void *base, size_t i, double v)
{
    switch (t) {
    case AMP_F64: ((double *)base)[i] = v; break;
    case AMP_F32: ((float *)base)[i] = (float)v; break;
    case AMP_BF16: ((amp_bf16 *)base)[i] = amp_f32_to_bf16((float)v); break;
    default: ((amp_f16 *)base)[i] = amp_f32_to_f16((float)v); break;
    }
}

static double load(amp_dtype t, const void *base, size_t i)
{
    return t == AMP_F64 ? ((const double *)base)[i] : (double)amp_load_as_f32(t, base, i);
}

/* Every process's bytes equal process 0's. */
static void same_everywhere(const void *data, size_t bytes, const char *what)
{
    unsigned char *root = malloc(bytes ? bytes : 1);
    if (rank == 0)
        memcpy(root, data, bytes);
    MPI_Bcast(root, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (memcmp(root, data, bytes) != 0)
        fail(what, 0, 0, 0);
    free(root);
}

static void check_mean(amp_dtype wire)
{
    void *data[NT];
    amp_coll_tensor t[NT];
    const float finv = (float)(1.0 / (double)world);
    amp_coll_set_allreduce_dtype(wire);
    for (int k = 0; k < NT; k++) {
        data[k] = malloc(sizes[k] * amp_dtype_size(dtypes[k]) + 1);
        for (size_t i = 0; i < sizes[k]; i++)
            store(dtypes[k], data[k], i, value(k, i, rank));
        t[k] = (amp_coll_tensor){data[k], sizes[k], dtypes[k]};
    }
    if (amp_allreduce_mean(t, NT) != AMP_OK)
        fail("amp_allreduce_mean status", 0, 0, 0);
    for (int k = 0; k < NT; k++) {
        for (size_t i = 0; i < sizes[k]; i++) {
            double sum = 0;
            for (int r = 0; r < world; r++)
                sum += value(k, i, r);
            double want;
            if (dtypes[k] == AMP_F64) {
                want = sum * (1.0 / (double)world);
            } else {
                void *one = malloc(8);
                store(dtypes[k], one, 0, (double)((float)sum * finv));
                want = load(dtypes[k], one, 0);
                free(one);
            }
            if (load(dtypes[k], data[k], i) != want)
                fail(wire == AMP_BF16 ? "mean (bf16 wire)" : "mean (f32 wire)", i, load(dtypes[k], data[k], i), want);
        }
        same_everywhere(data[k], sizes[k] * amp_dtype_size(dtypes[k]), "results differ between processes");
        free(data[k]);
    }
}

/* 1 + 2^-10 on every process: its mean is itself through f32, and 1
 * through bf16 (8 significant bits), the cost the option documents. */
static void check_wire_rounding(void)
{
    for (int wire = 0; wire < 2; wire++) {
        float g[40];
        amp_coll_tensor t = {g, 40, AMP_F32};
        for (int i = 0; i < 40; i++)
            g[i] = 1.0f + 0x1p-10f;
        amp_coll_set_allreduce_dtype(wire ? AMP_BF16 : AMP_F32);
        amp_allreduce_mean(&t, 1);
        /* the exact sum of what travels, times (float)(1/W), rounded in f32 */
        const float sent = wire ? 1.0f : 1.0f + 0x1p-10f;
        const float want = ((float)world * sent) * (float)(1.0 / (double)world);
        for (int i = 0; i < 40; i++) {
            if (g[i] != want)
                fail(wire ? "bf16 wire rounds to bf16" : "f32 wire keeps f32", (size_t)i, g[i], want);
        }
    }
    amp_coll_set_allreduce_dtype(AMP_F32);
}

/* A non-finite value on one process reaches every process. */
static void check_inf_spreads(void)
{
    float g[20] = {0};
    amp_coll_tensor t = {g, 20, AMP_F32};
    if (rank == world - 1)
        g[19] = 1.0f / 0.0f;
    amp_allreduce_mean(&t, 1);
    if (!(g[19] > 3.0e38f))
        fail("an inf on one process is an inf on all", 19, g[19], 1.0 / 0.0);
}

/* A value that is not a short binary fraction, different on each process,
 * so the sum's bits depend on how MPI groups the elements: the push-style
 * reduction is exact only if it builds the very buckets the list form does. */
static double rough(int k, size_t i, int r)
{
    return value(k, i, r) + 0.1 * (double)(r + 1) / (double)(i + 3) + 1e-3 * (double)k;
}

/* amp_allreduce_begin/push/finish against amp_allreduce_mean of the same
 * list, byte for byte, with the tensors pushed in reverse order (as the
 * emitted backward does, last layer first) and some work between pushes. */
static void check_push(amp_dtype wire)
{
    void *a[NT], *b[NT];
    amp_coll_tensor ta[NT], tb[NT];
    volatile double work = 0;
    amp_coll_set_allreduce_dtype(wire);
    for (int k = 0; k < NT; k++) {
        int src = NT - 1 - k; /* list order: the reverse of sizes[] */
        size_t bytes = sizes[src] * amp_dtype_size(dtypes[src]);
        a[k] = malloc(bytes + 1);
        b[k] = malloc(bytes + 1);
        for (size_t i = 0; i < sizes[src]; i++)
            store(dtypes[src], a[k], i, rough(src, i, rank));
        memcpy(b[k], a[k], bytes);
        ta[k] = (amp_coll_tensor){a[k], sizes[src], dtypes[src]};
        tb[k] = (amp_coll_tensor){b[k], sizes[src], dtypes[src]};
    }
    if (amp_allreduce_mean(ta, NT) != AMP_OK)
        fail("amp_allreduce_mean status", 0, 0, 0);
    if (amp_allreduce_open() != 0 || amp_allreduce_begin(NT) != AMP_OK || amp_allreduce_open() != 1)
        fail("amp_allreduce_begin opens a reduction", 0, 0, 0);
    /* a list-form reduction or a second begin while one is open is refused */
    if (amp_allreduce_mean(ta, NT) != AMP_ERR_COLLECTIVE || amp_allreduce_begin(1) != AMP_ERR_COLLECTIVE)
        fail("mean or begin refused while a reduction is open", 0, 0, 0);
    for (int k = 0; k < NT; k++) {
        if (amp_allreduce_push(&tb[k]) != AMP_OK)
            fail("amp_allreduce_push status", (size_t)k, 0, 0);
        for (int w = 0; w < 20000; w++) /* the backward's next node */
            work = work + 1.0;
    }
    if (amp_allreduce_push(&tb[0]) != AMP_ERR_BAD_DIM) /* one more than begin said */
        fail("a push beyond n is refused", 0, 0, 0);
    if (amp_allreduce_finish() != AMP_OK || amp_allreduce_open() != 0)
        fail("amp_allreduce_finish status", 0, 0, 0);
    for (int k = 0; k < NT; k++) {
        size_t bytes = tb[k].n * amp_dtype_size(tb[k].dtype);
        if (memcmp(a[k], b[k], bytes) != 0)
            fail(wire == AMP_BF16 ? "push = mean, bit for bit (bf16 wire)" : "push = mean, bit for bit (f32 wire)",
                 (size_t)k, 0, 0);
        same_everywhere(b[k], bytes, "pushed results differ between processes");
        free(a[k]);
        free(b[k]);
    }
    amp_coll_set_allreduce_dtype(AMP_F32);
}

/* The sequences the bookkeeping refuses, identically on every process. */
static void check_push_misuse(void)
{
    float g[3] = {1, 2, 3};
    amp_coll_tensor t = {g, 3, AMP_F32}, bad = {g, 3, AMP_I32};
    if (amp_allreduce_push(&t) != AMP_ERR_COLLECTIVE || amp_allreduce_finish() != AMP_ERR_COLLECTIVE)
        fail("push or finish without begin is refused", 0, 0, 0);
    if (amp_allreduce_begin(-1) != AMP_ERR_BAD_DIM || amp_allreduce_open() != 0)
        fail("begin(-1) is refused and opens nothing", 0, 0, 0);
    /* two announced, one pushed: it is reduced, and finish says so */
    if (amp_allreduce_begin(2) != AMP_OK || amp_allreduce_push(NULL) != AMP_ERR_NULL_ARG ||
        amp_allreduce_push(&bad) != AMP_ERR_COLLECTIVE || amp_allreduce_push(&t) != AMP_OK ||
        amp_allreduce_finish() != AMP_ERR_BAD_DIM || amp_allreduce_open() != 0)
        fail("a short push sequence", 0, 0, 0);
    for (int i = 0; i < 3; i++) /* every process had the same values: the mean is each */
        if (g[i] != (float)((double)(i + 1) * (double)world) * (float)(1.0 / (double)world))
            fail("the pushed tensor of a short sequence is reduced", (size_t)i, g[i], i + 1);
    if (amp_allreduce_begin(0) != AMP_OK || amp_allreduce_finish() != AMP_OK)
        fail("an empty push sequence", 0, 0, 0);
}

static void check_max(void)
{
    for (int who = 0; who < world; who++) {
        int32_t v = rank == who;
        if (amp_allreduce_max_i32(&v) != AMP_OK || v != 1)
            fail("found_inf max-reduced from one process", (size_t)who, v, 1);
        v = 0;
        amp_allreduce_max_i32(&v);
        if (v != 0)
            fail("found_inf stays 0 when no process found one", (size_t)who, v, 0);
    }
}

int main(int argc, char **argv)
{
    if (amp_coll_init(&argc, &argv) != AMP_OK)
        return 2;
    rank = amp_coll_rank();
    world = amp_coll_world();
    /* value()'s sums are exact in bf16 for up to 4 processes */
    if (strcmp(amp_coll_backend(), "mpi") != 0 || world < 2 || world > 4) {
        fprintf(stderr, "collective_mpi: needs the MPI build under mpirun -np 2 to 4 (backend %s, world %d)\n",
                amp_coll_backend(), world);
        return 2;
    }
    check_mean(AMP_F32);
    check_mean(AMP_BF16);
    check_wire_rounding();
    check_inf_spreads();
    check_push(AMP_F32);
    check_push(AMP_BF16);
    check_push_misuse();
    check_max();
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    const char *bucket = getenv("AMPRT_ALLREDUCE_BUCKET_BYTES");
    if (rank == 0 && total == 0)
        printf("ok   collectives on %d processes: bucketed mean (f32 and bf16 wire; f32, bf16, f16, f64 tensors; "
               "%s-byte buckets), identical on every process; begin/push/finish = mean bit for bit, and its misuse refused; inf spreads; "
               "found_inf max\n", world,
               bucket ? bucket : "default 4 Mi");
    amp_coll_finalize();
    return total != 0;
}
