/*
 * gemm.c - the one blocked, packed GEMM driver behind every optimized
 * linear, matmul and gemm (the micro-kernels, packing and epilogues are per
 * kernel set, in x86/avx2.c and x86/avx512.c (both AVX-512 sets); the contract is in
 * amprt_internal.h).  Plain C: it only calls through the descriptor.
 *
 * The output is cut into tasks, blocks of up to AMP_GEMM_MB_MAX rows x nc
 * columns (of one output batch), run on the thread pool.  Per task:
 *
 *   for each summed batch b (sum_batch; else the task's own batch)
 *     for each k block (kc = kcu * kpair values of k)
 *       pack B[k block][task columns] into nr-wide micro-panels
 *       for each mc-row block: pack A[rows][k block] into mr-row panels
 *         for each mr-row strip: the micro-kernel on each of its mr x nr
 *           tiles, into the task's f32 accumulator block W (first pass
 *           stores, later ones add); on the last pass the strip's
 *           epilogue (alpha, beta * C, bias, the one rounding to the
 *           output dtype) runs at once, while the strip is in L1, one
 *           call per row over all the task's columns (mr calls of nr
 *           columns per tile cost 10% of a 512^3 bf16 product).
 *
 * Every output element is summed by one task in a fixed order (k blocks in
 * order, f32 throughout), so results do not depend on the thread count.
 * The packing buffers and W are static, one set per pool slot (no malloc).
 *
 * A product cut into several tasks would pack each operand once per task
 * that reads it: A once per column block, B once per row block (a ViT's
 * 1576 x 3072 x 768 linear: A six times, B five).  Where that repacking
 * is large (PACK_WHOLE_MIN_SAVED), a one-batch product packs both
 * operands whole first, every panel once, on the pool, into one
 * scratch buffer (pack_whole), and its tasks read their panels from there;
 * the panels are the ones the tasks would have packed, so the results are
 * the same bits.  Without scratch memory the tasks pack as above.
 *
 * linear_ex's packed weights (amp_fast_linear_pack_weights) are B in
 * pack_whole's layout, packed once at load time behind a header (and, for
 * a small weight, w itself in T after them): a product given them packs
 * only A (whole, where repacking A would cost as above), and its tasks
 * read B's panels from there, the same panels, so linear_ex is bit for
 * bit linear.
 */
#include <assert.h>
#include <string.h>

#include "amprt_internal.h"
#include "kernel_set.h"

#define ALIGN64 __attribute__((aligned(64)))

static float w_buf[AMP_MAX_THREADS][AMP_GEMM_MB_MAX * AMP_GEMM_NC_MAX] ALIGN64;
static uint32_t a_buf[AMP_MAX_THREADS][AMP_GEMM_MC_MAX * AMP_GEMM_KCU_MAX] ALIGN64;
static uint32_t b_buf[AMP_MAX_THREADS][AMP_GEMM_KCU_MAX * AMP_GEMM_NC_MAX] ALIGN64;
/* (linear_pack_task rounds its source rows into b_buf: it must hold them) */
typedef char b_buf_holds_rounded_rows[sizeof b_buf[0] >= AMP_GEMM_NR_MAX * 2 * AMP_GEMM_KCU_MAX * 4 ? 1 : -1];

/* Output elements below which a sum_batch product gets one task per
 * thread (see fast_gemm). */
#define SMALL_SUMMED_OUTPUT 32768

/* Below this many flops a single thread is faster than waking the pool. */
#define PARALLEL_MIN_FLOPS (4.0 * 1024 * 1024)

/* Elements of repacking a product must save to be packed whole first
 * (pack_whole): a pool run costs some 15-25 us, packing 2-4 elements a
 * nanosecond, so a quarter of a millisecond of packing saved and more. */
#define PACK_WHOLE_MIN_SAVED (1024.0 * 1024)

typedef struct gemm_job {
    const amp_gemm_kernel *k;
    amp_dtype t, yt; /* operands', and the output's (t, or f32: amp_fast_gemm_f32) */
    size_t es, yes;
    const amp_gemm_desc *d;
    const char *a, *b, *c, *bias;
    char *y;
    float alpha, beta;
    int add_c;
    int64_t mb, nb, m_chunks, n_chunks;
    /* pack_whole's panels (NULL: each task packs its own): per k block,
     * A's mr-row strips then, in pb_all, B's nr-column panels, in order;
     * pb_all may be linear_ex's packed weights, which pack_whole leaves
     * as they are (pack_panels 0) */
    const uint32_t *pa_all, *pb_all;
    int64_t strips, panels, pack_panels;
} gemm_job;

/* isa_pack_f32_body specialized per storage dtype (the switch leaves the
 * loop): the sets' f32 packers' general case (ISA_PACK_F32_SWITCH). */
void amp_pack_f32_generic(amp_dtype t, const void *base, int64_t ws, int64_t ks, int width, int64_t k, float *dst,
                          int W)
{
    switch (t) {
    case AMP_F32: isa_pack_f32_body(AMP_F32, base, ws, ks, width, k, dst, W); break;
    case AMP_BF16: isa_pack_f32_body(AMP_BF16, base, ws, ks, width, k, dst, W); break;
    case AMP_F16: isa_pack_f32_body(AMP_F16, base, ws, ks, width, k, dst, W); break;
    default: isa_pack_f32_body(t, base, ws, ks, width, k, dst, W); break;
    }
}

/* The scalar epilogue of one row's elements j0 .. n - 1 (the contract's
 * arithmetic, loads and stores as amp_ld/amp_st convert): every set's epi
 * calls it for the strided-C case and its vector loop's tail.  One copy
 * here, its loads and stores the out-of-line amp_load_as_f32 and
 * amp_store_from_f32, rather than one inlined into each set's epi with
 * amp_ld/amp_st's every dtype: a tail is under a vector long, and a small
 * binary links each set's epi (3.5 KB each, inlined). */
void amp_gemm_epi_scalar(amp_dtype t, int64_t j0, int64_t n, const float *w, float alpha, float beta, const void *c,
                         int64_t c_cs, const void *bias, void *y)
{
    for (int64_t j = j0; j < n; j++) {
        float v = w[j];
        if (alpha != 1.0f)
            v = alpha * v;
        if (c != NULL)
            v += beta * amp_load_as_f32(t, c, (size_t)(j * c_cs));
        if (bias != NULL)
            v += amp_load_as_f32(t, bias, (size_t)j);
        amp_store_from_f32(t, y, (size_t)j, v);
    }
}

static int64_t cdiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t round_up(int64_t a, int64_t b) { return cdiv(a, b) * b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Units of one strip (or panel) packed whole over all of K: the full k
 * blocks (the driver's kcu units each), then the last. */
static int64_t whole_units(const amp_gemm_kernel *k, int64_t K)
{
    const int64_t kstep = (int64_t)k->kcu * k->kpair, blocks = cdiv(K, kstep);
    return K <= 0 ? 0 : (blocks - 1) * k->kcu + cdiv(K - (blocks - 1) * kstep, k->kpair);
}

/* The epilogue of rows [r0, r0 + rows) x columns [c0, c0 + cols) of the
 * task block whose top-left output element is (m0, n0) of batch ob. */
static void epilogue(const gemm_job *j, int64_t ob, int64_t m0, int64_t n0, const float *w, int64_t ldw, int64_t r0,
                     int64_t rows, int64_t c0, int64_t cols)
{
    const amp_gemm_desc *d = j->d;
    int64_t cb = d->sum_batch ? 0 : ob;
    for (int64_t r = r0; r < r0 + rows; r++) {
        int64_t m = m0 + r, n = n0 + c0;
        const char *crow = j->add_c ? j->c + (size_t)(cb * d->c_stride[0] + m * d->c_stride[1] + n * d->c_stride[2]) * j->es
                                    : NULL;
        const char *brow = j->bias != NULL ? j->bias + (size_t)n * j->es : NULL;
        char *yrow = j->y + (size_t)((ob * d->M + m) * d->N + n) * j->yes;
        j->k->epi(j->yt, cols, w + r * ldw + c0, j->alpha, j->beta, crow, d->c_stride[2], brow, yrow);
    }
}

/* Where pack_whole put strip (or panel) i of k block kb, whose units
 * are kcu, in buf holding count strips (or panels) of width w per block:
 * the blocks before kb are full (the driver's kcu units each). */
static const uint32_t *whole_panel(const uint32_t *buf, const amp_gemm_kernel *k, int64_t count, int w, int64_t kb,
                                   int64_t kcu, int64_t i)
{
    return buf + (kb * k->kcu * count + i * kcu) * w;
}

static void gemm_task(void *ctx, int64_t task, int slot)
{
    const gemm_job *j = ctx;
    const amp_gemm_kernel *k = j->k;
    const amp_gemm_desc *d = j->d;
    const int mr = k->mr, nr = k->nr;
    const int64_t per_batch = j->m_chunks * j->n_chunks;
    const int64_t ob = task / per_batch;
    const int64_t m0 = (task % per_batch) / j->n_chunks * j->mb, n0 = task % j->n_chunks * j->nb;
    const int64_t mlen = min64(j->mb, d->M - m0), nlen = min64(j->nb, d->N - n0);
    const int64_t ldw = round_up(nlen, nr);
    const int64_t kstep = (int64_t)k->kcu * k->kpair;
    const int64_t summed = d->sum_batch ? d->batch : 1;
    float *w = w_buf[slot];
    uint32_t *pa = a_buf[slot], *pb = b_buf[slot];
    int first = 1;

    if (d->K == 0 || summed == 0) { /* an empty sum: every product is 0 */
        for (int64_t r = 0; r < mlen; r++)
            memset(w + r * ldw, 0, (size_t)nlen * sizeof(float));
        epilogue(j, ob, m0, n0, w, ldw, 0, mlen, 0, nlen);
        return;
    }
    for (int64_t sb = 0; sb < summed; sb++) {
        const int64_t bi = d->sum_batch ? sb : ob;
        const char *abase = j->a + (size_t)(bi * d->a_stride[0] + m0 * d->a_stride[1]) * j->es;
        /* (no B to read where its panels are packed already: linear_ex's b is NULL) */
        const char *bbase =
            j->pb_all != NULL ? NULL : j->b + (size_t)(bi * d->b_stride[0] + n0 * d->b_stride[2]) * j->es;
        for (int64_t k0 = 0; k0 < d->K; k0 += kstep) {
            const int64_t kc = min64(kstep, d->K - k0), kcu = cdiv(kc, k->kpair);
            const int last = sb == summed - 1 && k0 + kstep >= d->K;
            const int64_t kb = k0 / kstep;
            const uint32_t *pbk = pb, *pak = pa;
            if (j->pb_all != NULL) /* the task's first panel, packed by pack_whole */
                pbk = whole_panel(j->pb_all, k, j->panels, nr, kb, kcu, n0 / nr);
            else
                for (int64_t jr = 0; jr < nlen; jr += nr)
                    k->pack_b(j->t, bbase + (size_t)(k0 * d->b_stride[1] + jr * d->b_stride[2]) * j->es, d->b_stride[1],
                              d->b_stride[2], (int)min64(nr, nlen - jr), kc, pb + jr / nr * kcu * nr);
            for (int64_t ic = 0; ic < mlen; ic += k->mc) {
                const int64_t mcl = min64(k->mc, mlen - ic);
                if (j->pa_all != NULL)
                    pak = whole_panel(j->pa_all, k, j->strips, mr, kb, kcu, (m0 + ic) / mr);
                else
                    for (int64_t ir = 0; ir < mcl; ir += mr)
                        k->pack_a(j->t, abase + (size_t)((ic + ir) * d->a_stride[1] + k0 * d->a_stride[2]) * j->es,
                                  d->a_stride[1], d->a_stride[2], (int)min64(mr, mcl - ir), kc, pa + ir / mr * kcu * mr);
                for (int64_t ir = 0; ir < mcl; ir += mr) {
                    for (int64_t jr = 0; jr < nlen; jr += nr)
                        k->micro(kcu, pak + ir / mr * kcu * mr, pbk + jr / nr * kcu * nr, w + (ic + ir) * ldw + jr, ldw,
                                 !first);
                    if (last)
                        epilogue(j, ob, m0, n0, w, ldw, ic + ir, min64(mr, mcl - ir), 0, nlen);
                }
            }
            first = 0;
        }
    }
}

static int pack_whole_policy; /* amp_gemm_pack_whole_policy */

void amp_gemm_pack_whole_policy(int policy) { __atomic_store_n(&pack_whole_policy, policy, __ATOMIC_RELAXED); }

/* pack_whole's task: one k block's A strip (task < strips of it) or B
 * panel, the same call with the same rows or columns as gemm_task's. */
static void pack_whole_task(void *ctx, int64_t task, int slot)
{
    const gemm_job *j = ctx;
    const amp_gemm_kernel *k = j->k;
    const amp_gemm_desc *d = j->d;
    const int mr = k->mr, nr = k->nr;
    const int64_t kstep = (int64_t)k->kcu * k->kpair, per_block = j->strips + j->pack_panels;
    const int64_t kb = task / per_block, q = task % per_block, k0 = kb * kstep;
    const int64_t kc = min64(kstep, d->K - k0), kcu = cdiv(kc, k->kpair);
    (void)slot;
    if (q < j->strips) {
        const int64_t r0 = q * mr;
        k->pack_a(j->t, j->a + (size_t)(r0 * d->a_stride[1] + k0 * d->a_stride[2]) * j->es, d->a_stride[1],
                  d->a_stride[2], (int)min64(mr, d->M - r0), kc,
                  (uint32_t *)whole_panel(j->pa_all, k, j->strips, mr, kb, kcu, q));
    } else {
        const int64_t c0 = (q - j->strips) * nr;
        k->pack_b(j->t, j->b + (size_t)(k0 * d->b_stride[1] + c0 * d->b_stride[2]) * j->es, d->b_stride[1],
                  d->b_stride[2], (int)min64(nr, d->N - c0), kc,
                  (uint32_t *)whole_panel(j->pb_all, k, j->panels, nr, kb, kcu, q - j->strips));
    }
}

/* Packs the operands of a one-batch product whole (see the file's
 * comment) into scratch memory, on the pool: A, and B unless j->pb_all
 * already holds it (linear_ex); returns the buffer, or NULL (nothing
 * packed: the tasks pack their own). */
static uint32_t *pack_whole(gemm_job *j, int threads)
{
    const amp_gemm_kernel *k = j->k;
    const amp_gemm_desc *d = j->d;
    const int64_t kstep = (int64_t)k->kcu * k->kpair, blocks = cdiv(d->K, kstep);
    const int64_t units = whole_units(k, d->K);
    j->strips = cdiv(d->M, k->mr);
    j->pack_panels = j->pb_all != NULL ? 0 : j->panels;
    /* B's panels start on a cache line, as the micro-kernels' aligned loads need */
    const int64_t a_units = round_up(units * j->strips * k->mr, 16);
    uint32_t *buf = amp_scratch_alloc((size_t)(a_units + units * j->pack_panels * k->nr) * sizeof *buf);
    if (buf == NULL)
        return NULL;
    j->pa_all = buf;
    if (j->pack_panels)
        j->pb_all = buf + a_units;
    amp_parallel_run(threads, blocks * (j->strips + j->pack_panels), pack_whole_task, j);
    return buf;
}

/* The product; packed_b, when not NULL, is B packed whole (linear_ex's
 * packed weights, after their header), and b is not read. */
static void fast_gemm(const amp_gemm_kernel *k, amp_dtype t, amp_dtype yt, const amp_gemm_desc *d, const void *a,
                      const void *b, const void *c, const void *bias, void *y, const uint32_t *packed_b)
{
    gemm_job j;
    const int64_t out_batches = d->sum_batch ? 1 : d->batch;
    int threads;
    int64_t mb_max;

    if (d->M <= 0 || d->N <= 0 || out_batches <= 0)
        return;
    j.k = k;
    j.t = t;
    j.es = amp_dtype_size(t);
    j.yt = yt;
    j.yes = amp_dtype_size(yt);
    j.d = d;
    j.a = a;
    j.b = b;
    j.c = c;
    j.bias = bias;
    j.y = y;
    j.alpha = (float)d->alpha;
    j.beta = (float)d->beta;
    j.add_c = c != NULL && d->beta != 0.0;

    threads = amp_get_threads();
    if (2.0 * (double)d->M * (double)d->N * (double)d->K * (double)d->batch < PARALLEL_MIN_FLOPS)
        threads = 1;

    /* Equal-sized chunks: rows in multiples of mr, columns of nr. */
    mb_max = AMP_GEMM_MB_MAX / k->mr * k->mr;
    j.m_chunks = cdiv(d->M, mb_max);
    j.mb = round_up(cdiv(d->M, j.m_chunks), k->mr);
    j.n_chunks = cdiv(d->N, k->nc);
    j.nb = round_up(cdiv(d->N, j.n_chunks), k->nr);
    /* Enough tasks for every thread, splitting the larger side: two per
     * thread, so a thread slowed by other work gets help, but no more -
     * each task packs its own A and B blocks, and more, narrower tasks
     * pack the same A rows again (4 per thread cost 5-8% at N = 512).
     * One per thread for a small output summed over a long K (sum_batch:
     * the resnet18 stem's weight gradient, 64 x 147 over 8 x 12544
     * products), where every task packs its rows' A and columns' B over
     * all of K, so more tasks mostly repack the same operands (stem at 2
     * threads: 6.6 -> 5.2 ms).  One per thread, too, where the packing
     * converts (f16 or bf16 storage on an f32 micro-kernel: kpair 1), so
     * that the duplicated packing costs most: f16 at N = 512 on 2 threads
     * 397-415 -> 428-438 GFLOP/s, alternating; f32 and the bf16 kernel
     * unchanged. */
    const int converting = k->kpair == 1 && j.es == 2;
    const int64_t tasks_per_thread = (d->sum_batch && d->M * d->N < SMALL_SUMMED_OUTPUT) || converting ? 1 : 2;
    while (threads > 1 && out_batches * j.m_chunks * j.n_chunks < tasks_per_thread * threads) {
        if (j.nb > k->nr && (j.nb >= j.mb || j.mb <= k->mr)) {
            j.n_chunks *= 2;
            j.nb = round_up(cdiv(d->N, j.n_chunks), k->nr);
            j.n_chunks = cdiv(d->N, j.nb);
        } else if (j.mb > k->mr) {
            j.m_chunks *= 2;
            j.mb = round_up(cdiv(d->M, j.m_chunks), k->mr);
            j.m_chunks = cdiv(d->M, j.mb);
        } else {
            break;
        }
    }
    j.pa_all = NULL;
    j.pb_all = packed_b;
    j.panels = cdiv(d->N, k->nr);
    uint32_t *whole = NULL;
    /* only where the repacking it saves outweighs its own run on the pool
     * (a 128 x 256 x 128 product on 2 threads, saving 49K elements, went
     * from 29 to 45-55 us with it) */
    const int policy = __atomic_load_n(&pack_whole_policy, __ATOMIC_RELAXED);
    const double saved = (double)(j.n_chunks - 1) * (double)d->M * (double)d->K +
                         (packed_b != NULL ? 0.0 : (double)(j.m_chunks - 1) * (double)d->K * (double)d->N);
    if (d->batch == 1 && !d->sum_batch && d->K > 0 && policy >= 0 && saved > 0 &&
        (policy > 0 || saved >= PACK_WHOLE_MIN_SAVED))
        whole = pack_whole(&j, threads);
    amp_parallel_run(threads, out_batches * j.m_chunks * j.n_chunks, gemm_task, &j);
    if (whole != NULL)
        amp_scratch_free(whole);
}

void amp_fast_gemm(const amp_gemm_kernel *k, amp_dtype t, const amp_gemm_desc *d, const void *a, const void *b,
                   const void *c, const void *bias, void *y)
{
    fast_gemm(k, t, t, d, a, b, c, bias, y, NULL);
}

/* The epilogue's only store is then to f32 (no C, no bias to read in t):
 * epi(AMP_F32, ...) with c and bias NULL stores alpha * w. */
void amp_fast_gemm_f32(const amp_gemm_kernel *k, amp_dtype t, const amp_gemm_desc *d, const void *a, const void *b,
                       float *y)
{
    fast_gemm(k, t, AMP_F32, d, a, b, NULL, NULL, y, NULL);
}

/* ---- a linear's weights packed once (linear_ex) ---------------------------- */

/* The packed weights' header (amp_linear_packed_header): what they were
 * packed for, and the function linear_ex runs on them.  64 bytes, so the
 * panels after it keep the buffer's 64-byte alignment. */
#define LINEAR_PACKED_MAGIC 0x316e696c63706d61ull /* "ampclin1" */
typedef char linear_header_is_64_bytes[sizeof(amp_linear_packed_header) == 64 ? 1 : -1];

/* A linear's product: y[M, N] = x[M, K] w[N, K]^T, i.e. B (k, n) = w[n * K + k]. */
static amp_gemm_desc linear_desc(int64_t M, int64_t N, int64_t K)
{
    amp_gemm_desc d = { 1, M, N, K, { 0, K, 1 }, { 0, 1, K }, { 0, 0, 0 }, 1.0, 0.0, 0 };
    return d;
}

/* Bytes of the packed panels (after the header), and of the copy of w in T
 * after them (0: not kept). */
static size_t linear_panel_bytes(const amp_gemm_kernel *k, int64_t N, int64_t K)
{
    return N > 0 && K > 0 ? (size_t)(whole_units(k, K) * cdiv(N, k->nr) * k->nr) * sizeof(uint32_t) : 0;
}

static size_t linear_copy_bytes(amp_dtype t, int64_t N, int64_t K)
{
    return N > 0 && K > 0 && K <= AMP_LINEAR_COPY_MAX_K && N * K <= AMP_LINEAR_COPY_MAX
               ? (size_t)round_up(N * K * (int64_t)amp_dtype_size(t), 64)
               : 0;
}

size_t amp_fast_linear_packed_bytes(const amp_gemm_kernel *k, amp_dtype t, int64_t N, int64_t K)
{
    return sizeof(amp_linear_packed_header) + linear_panel_bytes(k, N, K) + linear_copy_bytes(t, N, K);
}

/* n elements of w (dtype src) into dst in t: a copy, or each rounded once,
 * as amp_cast_<src>_<t> rounds. */
static void round_to(amp_dtype t, void *dst, amp_dtype src, const void *w, int64_t n)
{
    if (src == t) {
        memcpy(dst, w, (size_t)n * amp_dtype_size(t));
        return;
    }
    for (int64_t i = 0; i < n; i++)
        amp_std(t, dst, i, amp_ldd(src, w, i));
}

typedef struct {
    const amp_gemm_kernel *k;
    amp_dtype t, src;
    int64_t N, K, panels;
    const char *w;
    uint32_t *out;
} linear_pack_job;

/* Panel p (output columns p * nr ..) over every k block, as pack_whole packs it. */
static void linear_pack_task(void *ctx, int64_t p, int slot)
{
    const linear_pack_job *j = ctx;
    const amp_gemm_kernel *k = j->k;
    const int nr = k->nr;
    const int64_t kstep = (int64_t)k->kcu * k->kpair, c0 = p * nr;
    const int width = (int)min64(nr, j->N - c0);
    const size_t es = amp_dtype_size(j->t), src_es = amp_dtype_size(j->src);
    for (int64_t k0 = 0; k0 < j->K; k0 += kstep) {
        const int64_t kc = min64(kstep, j->K - k0), kcu = cdiv(kc, k->kpair);
        uint32_t *dst = (uint32_t *)whole_panel(j->out, k, j->panels, nr, k0 / kstep, kcu, p);
        if (j->src == j->t) {
            k->pack_b(j->t, j->w + (size_t)(c0 * j->K + k0) * es, 1, j->K, width, kc, dst);
            continue;
        }
        /* rounded to T first, nr x kc of them in the slot's B buffer (no
         * product runs beside the packing), then packed as a T source */
        char *buf = (char *)b_buf[slot];
        for (int i = 0; i < width; i++)
            round_to(j->t, buf + (size_t)(i * kc) * es, j->src, j->w + (size_t)((c0 + i) * j->K + k0) * src_es, kc);
        k->pack_b(j->t, buf, 1, kc, width, kc, dst);
    }
}

void amp_fast_linear_pack_weights(const amp_gemm_kernel *k, amp_dtype t, int64_t N, int64_t K, amp_dtype src,
                                  const void *w, void *packed, amp_linear_packed_fn *run)
{
    amp_linear_packed_header hd;
    memset(&hd, 0, sizeof hd);
    hd.h.magic = LINEAR_PACKED_MAGIC;
    hd.h.k = k;
    hd.h.run = run;
    hd.h.t = t;
    hd.h.N = N;
    hd.h.K = K;
    hd.h.copy = linear_copy_bytes(t, N, K) ? (int64_t)(sizeof hd + linear_panel_bytes(k, N, K)) : 0;
    memcpy(packed, &hd, sizeof hd);
    if (N <= 0 || K <= 0)
        return;
    linear_pack_job j = { k, t, src, N, K, cdiv(N, k->nr), w, (uint32_t *)((char *)packed + sizeof hd) };
    const int threads = (double)N * (double)K < PARALLEL_MIN_FLOPS / 16 ? 1 : amp_get_threads();
    amp_parallel_run(threads, j.panels, linear_pack_task, &j);
    if (hd.h.copy) /* w as it is, in T (rounded as the panels were) */
        round_to(t, (char *)packed + hd.h.copy, src, w, N * K);
}

void amp_fast_linear_ex(const amp_gemm_kernel *k, amp_dtype t, int64_t M, int64_t N, int64_t K, const void *x,
                        const void *packed, const void *bias, void *y)
{
    const amp_gemm_desc d = linear_desc(M, N, K);
    const amp_linear_packed_header *hd = packed;
    (void)hd;
    /* from linear_pack_weights, under this set, for this dtype and shape */
    assert(hd->h.magic == LINEAR_PACKED_MAGIC && hd->h.k == k && hd->h.t == t && hd->h.N == N && hd->h.K == K);
    fast_gemm(k, t, t, &d, x, NULL, NULL, bias, y, (const uint32_t *)(const void *)((const char *)packed + sizeof *hd));
}
