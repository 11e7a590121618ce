/*
 * avx2_small.c - the avx2 set's small products in one pass: operands
 * packed to f32 once per call, 6 x 16 tiles summed in registers, and the
 * epilogue (alpha, beta C, bias, the rounding to the output dtype, and a
 * fused relu or relu_backward) applied to each tile's sums while they are
 * in L1, and stored.  11 KB of code (the epilogue one row loop for every
 * kind: inlined into each tile, per kind, it was 54 KB and no faster).
 *
 * A model's small layers (the digits MLP: a 64-row batch through 64 ->
 * 128 -> 10, forward and backward) spent more in the blocked driver's
 * bookkeeping than in its FMAs: the generic strided packing of the
 * transposed operands (a linear's weight, A read k-contiguous, 38% of the
 * digits step), the per-row epilogue reading the f32 block back, and the
 * separate relu and relu_backward passes.  Here the operands are widened
 * to f32 at most once per call (B into 16-column panels [k][16], with 8 x 8 register
 * transposes where it is k-contiguous: a linear's weight), and each
 * output element is the same chain of FMAs in k order from zero as
 * kernel_f32's micro-kernel sums per k block of 256 (K <= 512: a second
 * block's chain added to the first's sums, as the driver adds it to W),
 * followed by epi's arithmetic in its order: the output is bit for bit the blocked
 * driver's, and the fused relu and relu_backward are the set's relu and
 * relu_backward on the stored bits (relu32 and avx2_relu_bw32 on the f32
 * bits a bf16 value widens to test the same lanes as their 16-bit forms).
 * Larger products (from 4 MFLOP, frame/gemm.c's parallel threshold), K
 * over 512, f16 storage, summed batches and a strided C go to
 * amp_fast_gemm.  A is read in place when it is f32 with a unit stride
 * along k or m, else widened in a straight pass (rows as they run in
 * memory), in row blocks of up to 32 KB; B one 16-column panel at a time
 * (32 KB at most); only B is transposed.
 *
 * From 0.125 MFLOP (AVX2_SMALL_SPLIT_FLOPS) a product may run on two
 * threads, each half of the columns (whole panels) where packing all of
 * A costs less than packing all of B, else half of the rows (whole
 * tiles), each packing what it reads; whether it does is measured per
 * shape, as for avx512bf16's small path (frame/small_split.c), and the
 * bits are the same either way.  On a Zen 4 (2 vCPUs, the set forced)
 * the digits MLP's training step went from 46.1 to 33.6 us (median of
 * 5000 calls, 4 rounds alternating); at 0.75 MFLOP and up alone (its two
 * 1 MFLOP products), 36.9: its three 0.16 MFLOP products (N or K 10) gain
 * from the split too, at 8-lane FMAs a product takes about 2 us.
 */

#include <limits.h>

#include "frame/small_split.h"

#include "x86/avx2_conv.h"
#include "x86/avx2_small.h"
#include "x86/avx2_store.h"

#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>
#include <x86intrin.h> /* __rdtsc */

#define TARGET AVX2_TARGET

#define SMALL_MAX_FLOPS AMP_AVX2_SMALL_MAX_FLOPS
#define AVX2_SMALL_SPLIT_FLOPS (128.0 * 1024) /* and up: on two threads where that measures cheaper */
#define SMALL_KB 256                        /* kernel_f32's k block (kcu 256, kpair 1) */
#define SMALL_K_MAX 512                     /* a B panel in 32 KB of stack */
#define SMALL_A_FLOATS 8192                 /* packed A rows: 32 KB */
#define MR 6
#define NR 16

/* ---- packing ---------------------------------------------------------------------- */

/* dst[r][c] = src[r sr + c sc] widened to f32 (as kernel_f32's packing
 * widens it) for r < rows, c < cols, and 0 for c in [cols, ld); ld a
 * multiple of 8.  Straight runs (sc == 1) are read 8 at a time; runs
 * along r (sr == 1: a linear's weight as B) pack_2d hands to
 * x86/avx2_conv_pack.c's packer, 8 x 8 blocks transposed in registers. */
TARGET static AMP_ALWAYS_INLINE void pack_body(amp_dtype t, const char *src, int64_t sr, int64_t sc, int64_t rows,
                                               int64_t cols, float *dst, int64_t ld)
{
    const size_t es = avx2_size_of(t);
    const int64_t c8 = (cols + 7) / 8 * 8;
    if (sc == 1) {
        /* a row's last values (fewer than 8) read whole where the 8 stay
         * inside the operand's span, its first element to its last */
        const int64_t span = (rows - 1) * sr + cols;
        for (int64_t r = 0; r < rows; r++) {
            const char *row = src + (size_t)(r * sr) * es;
            float *o = dst + r * ld;
            int64_t c = 0;
            for (; c + 8 <= cols; c += 8)
                _mm256_storeu_ps(o + c, avx2_load8(t, row + (size_t)c * es));
            if (c < cols)
                _mm256_storeu_ps(o + c, avx2_load8_within(t, row + (size_t)c * es, (size_t)(cols - c),
                                                          span - (r * sr + c)));
        }
    } else {
        for (int64_t r = 0; r < rows; r++)
            for (int64_t c = 0; c < c8; c++)
                dst[r * ld + c] = c < cols ? amp_ld(t, src, r * sr + c * sc) : 0.0f;
    }
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = c8; c < ld; c += 8)
            _mm256_storeu_ps(dst + r * ld + c, _mm256_setzero_ps());
}

TARGET static void pack_2d(amp_dtype t, const char *src, int64_t sr, int64_t sc, int64_t rows, int64_t cols,
                           float *dst, int64_t ld)
{
    if (sr == 1 && sc != 1 && ld <= INT_MAX) { /* element (r, c) at src + c sc + r: the panel packer's layout */
        amp_avx2_pack_along_k(t, src, sc, (int)cols, rows, dst, (int)ld);
        return;
    }
    if (t == AMP_BF16)
        pack_body(AMP_BF16, src, sr, sc, rows, cols, dst, ld);
    else
        pack_body(AMP_F32, src, sr, sc, rows, cols, dst, ld);
}

/* ---- the tiles -------------------------------------------------------------------- */

typedef struct {
    amp_dtype t;
    char *y;            /* the tile's first output element */
    size_t y_rs;        /* bytes between output rows (also the mask's) */
    const char *c;      /* C's element at y's (NULL: no C term) */
    size_t c_rs;
    const char *bias;   /* bias at y's column (NULL: none) */
    const char *mask;   /* relu_backward: the relu's output at y's element */
    float alpha, beta;
    int cols;           /* columns of the tile, 1 to 16 */
} tile_epi;

/* relu on f32 bits (the avx2 relu kernel's test: +0 where the sign is
 * set and the magnitude is in (0, inf]; NaN and -0 kept); on a bf16
 * value's bits widened, the lanes its 16-bit form picks. */
TARGET static AMP_ALWAYS_INLINE __m256i relu32(__m256i v)
{
    const __m256i mag = _mm256_and_si256(v, _mm256_set1_epi32(0x7fffffff));
    const __m256i keep = _mm256_or_si256(_mm256_cmpgt_epi32(mag, _mm256_set1_epi32(0x7f800000)),
                                         _mm256_cmpeq_epi32(mag, _mm256_setzero_si256()));
    return _mm256_andnot_si256(_mm256_andnot_si256(keep, _mm256_cmpgt_epi32(_mm256_setzero_si256(), v)), v);
}

/* epi's arithmetic on row i's columns [8 v, 8 v + 8) held in acc: alpha,
 * beta C, the bias (bv, loaded once per tile). */
TARGET static AMP_ALWAYS_INLINE __m256 epi_vec(const tile_epi *e, int i, int v, __m256 acc, __m256 bv)
{
    const size_t es = e->t == AMP_F32 ? 4 : 2;
    const int n = e->cols - 8 * v;
    if (n <= 0) /* columns past the tile's: never stored */
        return acc;
    if (e->alpha != 1.0f)
        acc = _mm256_mul_ps(_mm256_set1_ps(e->alpha), acc);
    if (e->c != NULL) {
        const char *p = e->c + (size_t)i * e->c_rs + (size_t)v * 8 * es;
        const __m256 cv = n >= 8 ? avx2_load8(e->t, p) : avx2_load8_n(e->t, p, (size_t)n);
        acc = _mm256_add_ps(acc, _mm256_mul_ps(_mm256_set1_ps(e->beta), cv));
    }
    if (e->bias != NULL)
        acc = _mm256_add_ps(acc, bv);
    return acc;
}

/* relu on 16 bf16 values' bits, as the avx2 relu kernel's relu16 (+0
 * where the sign is set and the magnitude is in (0, inf]); the rounded
 * values it sees are never signalling NaNs. */
TARGET static AMP_ALWAYS_INLINE __m256i relu_bf16x16(__m256i v)
{
    const __m256i mag = _mm256_and_si256(v, _mm256_set1_epi16(0x7fff));
    const __m256i keep = _mm256_or_si256(_mm256_cmpgt_epi16(mag, _mm256_set1_epi16(0x7f80)),
                                         _mm256_cmpeq_epi16(mag, _mm256_setzero_si256()));
    return _mm256_andnot_si256(_mm256_andnot_si256(keep, _mm256_cmpgt_epi16(_mm256_setzero_si256(), v)), v);
}

/* Row i of a tile after epi_vec (a0: columns 0-7, a1: 8-15): rounded to
 * e->t, the kind's relu or relu_backward on the bits, stored.  A full bf16
 * row as 16 words at once (one pack, the 16-bit tests, one store);
 * otherwise per vector, on the f32 bits a bf16 value widens to (relu32 and
 * avx2_relu_bw32 pick the same lanes as the 16-bit tests). */
TARGET static AMP_ALWAYS_INLINE void store_row(const tile_epi *e, int i, __m256 a0, __m256 a1, int kind)
{
    const amp_dtype t = e->t;
    const size_t es = t == AMP_F32 ? 4 : 2;
    char *y = e->y + (size_t)i * e->y_rs;
    if (t == AMP_BF16 && e->cols == NR) {
        __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(avx2_bf16_words_of(a0), avx2_bf16_words_of(a1)),
                                             0xd8);
        if (kind == AVX2_SMALL_RELU)
            w = relu_bf16x16(w);
        else if (kind == AVX2_SMALL_RELU_BACKWARD)
            w = avx2_relu_bw16(_mm256_loadu_si256((const __m256i *)(const void *)(e->mask + (size_t)i * e->y_rs)), w,
                               0x7f80, 0x0040);
        _mm256_storeu_si256((__m256i *)(void *)y, w);
        return;
    }
    for (int v = 0; v < 2 && 8 * v < e->cols; v++) {
        const int n = e->cols - 8 * v;
        const size_t off = (size_t)v * 8 * es;
        const __m256 acc = v ? a1 : a0;
        __m256i bits = t == AMP_F32 ? _mm256_castps_si256(acc) : _mm256_slli_epi32(avx2_bf16_words_of(acc), 16);
        if (kind == AVX2_SMALL_RELU) {
            bits = relu32(bits);
        } else if (kind == AVX2_SMALL_RELU_BACKWARD) {
            const char *p = e->mask + (size_t)i * e->y_rs + off;
            const __m256 m = n >= 8 ? avx2_load8(t, p) : avx2_load8_n(t, p, (size_t)n);
            bits = avx2_relu_bw32(_mm256_castps_si256(m), bits);
        }
        if (t == AMP_F32) {
            if (n >= 8)
                _mm256_storeu_si256((__m256i *)(void *)(y + off), bits);
            else
                avx2_store8_n(AMP_F32, y + off, (size_t)n, _mm256_castsi256_ps(bits));
            continue;
        }
        const __m128i words = avx2_pack_words(_mm256_srli_epi32(bits, 16));
        if (n >= 8) {
            _mm_storeu_si128((__m128i *)(void *)(y + off), words);
        } else {
            uint16_t buf[8];
            _mm_storeu_si128((__m128i *)(void *)buf, words);
            memcpy(y + off, buf, (size_t)n * 2);
        }
    }
}

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5)
#define T_ROW(i) const float *a##i = pa + (i < rows ? i : 0) * ars;
#define T_ZERO(i) __m256 c##i##a = _mm256_setzero_ps(), c##i##b = _mm256_setzero_ps();
#define T_STEP(i)                                                                                 \
    av = _mm256_broadcast_ss(a##i + ak);                                                          \
    c##i##a = _mm256_fmadd_ps(av, b0, c##i##a);                                                   \
    c##i##b = _mm256_fmadd_ps(av, b1, c##i##b);
#define T_SAVE(i)                                                                                 \
    _mm256_store_ps(sums + i * NR, c##i##a);                                                      \
    _mm256_store_ps(sums + i * NR + 8, c##i##b);
#define T_FOLD(i)                                                                                 \
    _mm256_store_ps(sums + i * NR, _mm256_add_ps(_mm256_load_ps(sums + i * NR), c##i##a));        \
    _mm256_store_ps(sums + i * NR + 8, _mm256_add_ps(_mm256_load_ps(sums + i * NR + 8), c##i##b));

/* A 6 x 16 tile's sums into sums[6][16]: A's element (i, k) at pa[i ars +
 * k aks] (f32: packed, or the operand itself), B's panel [k][16].  The
 * rows past `rows` sum row 0 again (never stored).  K over one k block
 * (two at most, K <= 512): each block's sums from zero, the second's
 * added to the first's in sums, in the blocked driver's order (W +
 * sums); the first block's left in sums rather than in registers, which
 * the loop's twelve accumulators leave too few of. */
TARGET static void tile_sums(int64_t K, const float *pa, int64_t ars, int64_t aks, const float *pb, int rows,
                             float *sums)
{
    ROWS(T_ROW)
    for (int64_t k0 = 0; k0 < K; k0 += SMALL_KB) {
        const int64_t k1 = K - k0 < SMALL_KB ? K : k0 + SMALL_KB;
        ROWS(T_ZERO)
        for (int64_t k = k0, ak = k0 * aks; k < k1; k++, ak += aks) {
            const __m256 b0 = _mm256_load_ps(pb), b1 = _mm256_load_ps(pb + 8);
            __m256 av;
            ROWS(T_STEP)
            pb += NR;
        }
        if (k0 == 0) {
            ROWS(T_SAVE)
        } else {
            ROWS(T_FOLD)
        }
    }
}

/* The epilogue of a tile's first `rows` rows from its sums (in L1: the
 * tile's registers stored once, so that one compact row loop serves every
 * tile and kind).  The epilogue's fields are copied to a local first,
 * which the stores cannot alias, so they are read once. */
TARGET static void tile_epilogue(const tile_epi *e, const float *sums, int rows, int kind)
{
    const tile_epi E = *e;
    const size_t bes = E.t == AMP_F32 ? 4 : 2;
    __m256 bias0 = _mm256_setzero_ps(), bias1 = bias0;
    if (E.bias != NULL) {
        bias0 = E.cols >= 8 ? avx2_load8(E.t, E.bias) : avx2_load8_n(E.t, E.bias, (size_t)E.cols);
        if (E.cols > 8)
            bias1 = E.cols == NR ? avx2_load8(E.t, E.bias + 8 * bes)
                                 : avx2_load8_n(E.t, E.bias + 8 * bes, (size_t)(E.cols - 8));
    }
    for (int i = 0; i < rows; i++)
        store_row(&E, i, epi_vec(&E, i, 0, _mm256_load_ps(sums + i * NR), bias0),
                  epi_vec(&E, i, 1, _mm256_load_ps(sums + i * NR + 8), bias1), kind);
}


/* ---- the driver ------------------------------------------------------------------- */

typedef struct {
    amp_dtype t;
    size_t es;
    const amp_gemm_desc *d;
    const char *a, *b, *c, *bias, *mask;
    char *y;
    int kind;
    int add_c;
    int a_in_place; /* f32 A with a unit stride along k or m: read as it lies */
    int split_cols; /* split in two: by columns (else by rows) */
    int64_t ob;     /* the output batch a split's halves compute */
} small_job;

/* How the tiles read A (f32): in place (an f32 A with unit stride along
 * k or m), else widened once into pa, straight (its rows as they run:
 * [m][K] for a k-contiguous A, [k][M] for an m-contiguous one, so the
 * widening is a plain pass, no transposes), or element by element. */
typedef struct {
    const float *p;
    int64_t rs, ks; /* element (i, k) at p[i rs + k ks] */
} a_view;

/* A's rows [m0, m0 + M) of batch bi as the tiles read it (packed into pa,
 * SMALL_A_FLOATS, when they cannot read it in place). */
TARGET static a_view a_rows(const small_job *j, int64_t bi, int64_t m0, int64_t M, float *pa)
{
    const amp_gemm_desc *d = j->d;
    const int64_t K = d->K, s1 = d->a_stride[1], s2 = d->a_stride[2];
    const char *src = j->a + (size_t)(bi * d->a_stride[0] + m0 * s1) * j->es;
    a_view v;
    if (j->t == AMP_F32 && (s2 == 1 || s1 == 1)) {
        v.p = (const float *)(const void *)src;
        v.rs = s1;
        v.ks = s2;
    } else if (s1 == 1 && s2 != 1) {
        const int64_t ld = (M + 7) / 8 * 8;
        pack_2d(j->t, src, s2, 1, K, M, pa, ld);
        v.p = pa;
        v.rs = 1;
        v.ks = ld;
    } else {
        const int64_t ld = (K + 7) / 8 * 8;
        pack_2d(j->t, src, s1, s2, M, K, pa, ld);
        v.p = pa;
        v.rs = ld;
        v.ks = 1;
    }
    return v;
}

/* Output batch ob's rows [r0, r1) and columns [c0, c1) (r0 a multiple of
 * MR, c0 of NR): row blocks of A (as many rows as its packed form holds,
 * all of them when it is read in place), for each every B panel packed in
 * turn and its tiles (the panel stays in L1 while the block's rows stream
 * past it). */
TARGET static void small_part(const small_job *j, int64_t ob, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
    float pa[SMALL_A_FLOATS] __attribute__((aligned(32)));
    float pb[SMALL_K_MAX * NR] __attribute__((aligned(32)));
    float sums[MR * NR] __attribute__((aligned(32)));
    const amp_gemm_desc *d = j->d;
    const size_t es = j->es;
    const int64_t bi = d->sum_batch ? 0 : ob, cb = d->sum_batch ? 0 : ob, K = d->K, rows_all = r1 - r0;
    /* rows per block: all of the part's when both A's packed forms ([m][K8]
     * and [k][M8], K8 and M8 rounded up to 8) hold them, else a multiple
     * of 6 that they hold (at K 512, 12 rows) */
    const int64_t K8 = (K + 7) / 8 * 8, M8 = (rows_all + 7) / 8 * 8;
    const int64_t block = j->a_in_place || (M8 * K8 <= SMALL_A_FLOATS) ? rows_all : SMALL_A_FLOATS / K8 / 8 * 8 / MR * MR;

    for (int64_t m0 = r0; m0 < r1; m0 += block) {
        const int64_t M = r1 - m0 < block ? r1 - m0 : block;
        const a_view av = a_rows(j, bi, m0, M, pa);
        for (int64_t n0 = c0; n0 < c1; n0 += NR) {
            tile_epi e;
            e.t = j->t;
            e.y_rs = (size_t)d->N * es;
            e.c_rs = (size_t)d->c_stride[1] * es;
            e.alpha = (float)d->alpha;
            e.beta = (float)d->beta;
            e.cols = (int)(c1 - n0 < NR ? c1 - n0 : NR);
            e.bias = j->bias != NULL ? j->bias + (size_t)n0 * es : NULL;
            pack_2d(j->t, j->b + (size_t)(bi * d->b_stride[0] + n0 * d->b_stride[2]) * es, d->b_stride[1],
                    d->b_stride[2], K, e.cols, pb, NR);
            for (int64_t i0 = 0; i0 < M; i0 += MR) {
                const int64_t m = m0 + i0;
                const size_t yoff = (size_t)((ob * d->M + m) * d->N + n0) * es;
                e.y = j->y + yoff;
                e.mask = j->mask != NULL ? j->mask + yoff : NULL;
                e.c = j->add_c ? j->c + (size_t)(cb * d->c_stride[0] + m * d->c_stride[1] + n0) * es : NULL;
                const int rows = (int)(M - i0 < MR ? M - i0 : MR);
                tile_sums(K, av.p + i0 * av.rs, av.rs, av.ks, pb, rows, sums);
                tile_epilogue(&e, sums, rows, j->kind);
            }
        }
    }
}

/* Half `task` of a split product's output batch j->ob: its columns (whole
 * 16-column panels) where packing all of A costs less than packing all of
 * B, else its rows (whole 6-row tiles); each half packs what it reads. */
TARGET static void small_half_task(void *ctx, int64_t task, int slot)
{
    const small_job *j = ctx;
    const amp_gemm_desc *d = j->d;
    (void)slot;
    if (j->split_cols) {
        const int64_t mid = ((d->N + NR - 1) / NR + 1) / 2 * NR;
        small_part(j, j->ob, 0, d->M, task ? mid : 0, task ? d->N : mid);
    } else {
        const int64_t mid = ((d->M + MR - 1) / MR + 1) / 2 * MR;
        small_part(j, j->ob, task ? mid : 0, task ? d->M : mid, 0, d->N);
    }
}

int amp_avx2_small_gemm(amp_dtype t, const amp_gemm_desc *d, const void *a, const void *b, const void *c,
                        const void *bias, int kind, const void *mask, void *y)
{
    const int64_t out_batches = d->sum_batch ? 1 : d->batch;
    const int add_c = c != NULL && d->beta != 0.0;
    const double flops = 2.0 * (double)d->M * (double)d->N * (double)d->K * (double)d->batch;
    small_job j;

    if ((t != AMP_F32 && t != AMP_BF16) || d->M <= 0 || d->N <= 0 || out_batches <= 0 || d->K <= 0 ||
        d->K > SMALL_K_MAX || flops >= SMALL_MAX_FLOPS || (d->sum_batch && d->batch != 1) ||
        (add_c && d->c_stride[2] != 1))
        return 0;
    j.t = t;
    j.es = avx2_size_of(t);
    j.d = d;
    j.a = a;
    j.b = b;
    j.c = c;
    j.bias = bias;
    j.mask = mask;
    j.y = y;
    j.add_c = add_c;
    j.kind = kind;
    j.a_in_place = t == AMP_F32 && (d->a_stride[1] == 1 || d->a_stride[2] == 1);
    /* split by columns when A's packing (M K elements, none in place) is
     * the smaller, as each half packs all of the other operand */
    j.split_cols = (j.a_in_place || d->M < d->N) && d->N > NR;
    const int splittable = AMP_SMALL_SPLIT_BUILT && flops / (double)out_batches >= AVX2_SMALL_SPLIT_FLOPS &&
                           amp_get_threads() > 1 &&
                           (j.split_cols || d->M > MR);
    amp_split_stat *st = NULL;
    int split = 0, record = 0;
    uint64_t t0 = 0;
    if (splittable) {
        st = amp_split_stat_of((uint64_t)d->M | (uint64_t)d->N << 20 | (uint64_t)d->K << 40 |
                               (uint64_t)(t == AMP_F32) << 61 | (uint64_t)j.split_cols << 62 |
                               (uint64_t)(out_batches > 1) << 63);
        split = amp_split_choose(st, &record);
        t0 = __rdtsc();
    }
    for (int64_t ob = 0; ob < out_batches; ob++) {
        j.ob = ob;
        /* the pool busy with another of the program's threads: both
         * halves here rather than wait for it */
        if (split && amp_parallel_try_run(2, 2, small_half_task, &j))
            continue;
        small_part(&j, ob, 0, d->M, 0, d->N);
    }
    if (record)
        amp_split_record(st, split, __rdtsc() - t0);
    return 1;
}

#endif /* x86 */
