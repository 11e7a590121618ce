/*
 * winograd_form.h - the hot half of frame/conv_winograd.c, compiled once
 * per instruction set it includes this with: the transforms (over LANES
 * lanes, loops that vectorize), the weights' task, the input's and the
 * output's work of a block of tiles.  The includer defines WINO(name)
 * (the instance's names) and WINO_TARGET (its function attribute), and
 * the types and helpers of conv_winograd.c come before.  No include
 * guard: it is meant to be included more than once.
 */

/* B' d over LANES lanes: the six rows of lanes d0 .. d5 into six of v
 * (vld apart).  The rows are pointers, not a stride: the column pass
 * reads rows of h, the row pass a tile's taps from the column phases. */
static AMP_ALWAYS_INLINE WINO_TARGET void WINO(input_1d)(const float *r0, const float *r1, const float *r2,
                                                          const float *r3, const float *r4, const float *r5, float *v,
                                                          int64_t vld)
{
    LANE_LOOP
    for (int l = 0; l < LANES; l++) {
        const float d0 = r0[l], d1 = r1[l], d2 = r2[l], d3 = r3[l], d4 = r4[l], d5 = r5[l];
        v[l] = 4 * d0 - 5 * d2 + d4;
        v[vld + l] = -4 * d1 - 4 * d2 + d3 + d4;
        v[2 * vld + l] = 4 * d1 - 4 * d2 - d3 + d4;
        v[3 * vld + l] = -2 * d1 - d2 + 2 * d3 + d4;
        v[4 * vld + l] = 2 * d1 - d2 - 2 * d3 + d4;
        v[5 * vld + l] = 4 * d1 - 5 * d3 + d5;
    }
}

/* A' m over LANES lanes: six rows of m (ld apart) into four of o (old apart). */
static AMP_ALWAYS_INLINE WINO_TARGET void WINO(output_1d)(const float *m, int64_t ld, float *o, int64_t old)
{
    LANE_LOOP
    for (int l = 0; l < LANES; l++) {
        const float m0 = m[l], m1 = m[ld + l], m2 = m[2 * ld + l], m3 = m[3 * ld + l], m4 = m[4 * ld + l],
                    m5 = m[5 * ld + l];
        const float s12 = m1 + m2, d12 = m1 - m2, s34 = m3 + m4, d34 = m3 - m4;
        o[l] = m0 + s12 + s34;
        o[old + l] = d12 + 2 * d34;
        o[2 * old + l] = s12 + 4 * s34;
        o[3 * old + l] = d12 + 8 * d34 + m5;
    }
}

/* G g over ROWS lanes: three rows of lanes into six (rows `step` apart). */
static AMP_ALWAYS_INLINE WINO_TARGET void WINO(kernel_1d)(const float *g0, const float *g1, const float *g2,
                                                           float *u, int64_t step)
{
    for (int i = 0; i < ROWS; i++) {
        const float a = g0[i], b = g1[i], c = g2[i];
        u[i] = a * 0.25f;
        u[step + i] = (a + b + c) * (-1.0f / 6);
        u[2 * step + i] = (a - b + c) * (-1.0f / 6);
        u[3 * step + i] = a * (1.0f / 24) + b * (1.0f / 12) + c * (1.0f / 6);
        u[4 * step + i] = a * (1.0f / 24) - b * (1.0f / 12) + c * (1.0f / 6);
        u[5 * step + i] = c;
    }
}

/* U's row panel pm: every input channel's 36 points, unit ci of point
 * xi's k block at [ci within the block][row] (amp_pack_f32_generic's
 * layout, which every kpair-1 micro-kernel reads), built WEIGHT_CHANNELS
 * channels at a time and stored point by point in runs. */
static WINO_TARGET void WINO(weights_task)(void *ctx, int64_t pm, int slot)
{
    const wino_job *wj = ctx;
    const int64_t mr = wj->k->mr;
    float g[WEIGHT_CHANNELS * 9][ROWS], h[18][ROWS];
    /* the slot's work buffer, free until the blocks' tasks */
    float(*u)[WEIGHT_CHANNELS][ROWS] = (float(*)[WEIGHT_CHANNELS][ROWS])(wj->work + (size_t)slot * wj->work_floats);
    for (int64_t kb = 0; kb < wj->nkb; kb++) {
        const int64_t kc = min64(wj->kcu, wj->cin - kb * wj->kcu);
        float *panel = wj->u + kb * wj->kcu * wj->mpanels * mr + pm * kc * mr;
        for (int64_t c0 = 0; c0 < kc; c0 += WEIGHT_CHANNELS) {
            const int64_t n = min64(WEIGHT_CHANNELS, kc - c0);
            panel_taps(wj, pm, kb * wj->kcu + c0, n, g);
            for (int64_t c = 0; c < n; c++) {
                float(*gc)[ROWS] = g + c * 9;
                float ut[POINTS][ROWS];
                /* G g (down each kernel column), then (G g) G' (along the rows) */
                for (int col = 0; col < 3; col++)
                    WINO(kernel_1d)(gc[col], gc[3 + col], gc[6 + col], h[col], 3 * ROWS);
                for (int r = 0; r < BLOCK; r++)
                    WINO(kernel_1d)(h[3 * r], h[3 * r + 1], h[3 * r + 2], ut[BLOCK * r], ROWS);
                for (int xi = 0; xi < POINTS; xi++)
                    memcpy(u[xi][c], ut[xi], sizeof ut[xi]);
            }
            for (int xi = 0; xi < POINTS; xi++)
                for (int64_t c = 0; c < n; c++)
                    memcpy(panel + xi * wj->u_point + (c0 + c) * mr, u[xi][c], (size_t)mr * sizeof(float));
        }
    }
}

/* Row r of x's channel plane xc (dtype t), columns [c0, c0 + n) with zeros
 * outside [0, in_w), widened and split by column phase: column c0 + c to
 * ph[(c % 4) ps + c / 4], so that each tile's taps are four runs. */
static WINO_TARGET void WINO(input_row)(const wino_job *wj, const char *xc, int64_t r, int64_t c0, int64_t n,
                                        float *ph, int64_t ps)
{
    const amp_dtype t = wj->j->t;
    int64_t c = 0;
    if (r < 0 || r >= wj->in_h) {
        for (int s = 0; s < TILE; s++)
            memset(ph + s * ps, 0, (size_t)((n + TILE - 1) / TILE) * sizeof *ph);
        return;
    }
    const uint16_t *row = (const uint16_t *)(const void *)xc + r * wj->in_w;
    for (; c < n && c0 + c < 0; c++)
        ph[c % TILE * ps + c / TILE] = 0;
    const int64_t end = min64(n, wj->in_w - c0);
    if (t == AMP_BF16) {
        /* whole groups of four columns (one tile's phases) in one loop
         * that vectorizes, the rest one by one */
        uint32_t *p = (uint32_t *)(void *)ph;
        const uint16_t *x = row + c0;
        for (; c < end && c % TILE != 0; c++)
            p[c % TILE * ps + c / TILE] = (uint32_t)x[c] << 16;
        const int64_t q_end = end / TILE;
        int64_t q = c / TILE;
        for (; q + 8 <= q_end; q += 8) {
            uint32_t *p0 = p + q, *p1 = p0 + ps, *p2 = p1 + ps, *p3 = p2 + ps;
            const uint16_t *xq = x + TILE * q;
            LANE_LOOP
            for (int i = 0; i < 8; i++) {
                p0[i] = (uint32_t)xq[TILE * i] << 16;
                p1[i] = (uint32_t)xq[TILE * i + 1] << 16;
                p2[i] = (uint32_t)xq[TILE * i + 2] << 16;
                p3[i] = (uint32_t)xq[TILE * i + 3] << 16;
            }
        }
        for (c = c > TILE * q ? c : TILE * q; c < end; c++)
            p[c % TILE * ps + c / TILE] = (uint32_t)x[c] << 16;
    } else {
        for (; c < end; c++)
            ph[c % TILE * ps + c / TILE] = amp_f16_to_f32((amp_f16){ row[c0 + c] });
    }
    for (; c < n; c++)
        ph[c % TILE * ps + c / TILE] = 0;
}

/* V of the block's tiles: for every input channel, each run's 6 input
 * rows widened (padding as zeros) and B' along each row per tile into
 * lanes (h[r][b][lane]), then B' down the rows over the lanes, the 36
 * points stored straight into the block's B panels as unit ci (point
 * xi's panels first, nr lanes each).  Lanes past the block's tiles stay
 * zero. */
static WINO_TARGET void WINO(transform_input)(const wino_job *wj, const tile_run *runs, int64_t nruns,
                                              int64_t lanes, float *v, float *scratch)
{
    const int64_t nr = wj->k->nr, np = wj->tb / nr, ps = WINO_PHASE_LEN(wj->tw);
    const int64_t tb = wj->tb, hs = tb + LANES; /* h's rows: lanes, and a chunk's overrun */
    float *ph = scratch;              /* a row's 4 column phases, ps apart */
    float *h = ph + TILE * ps;        /* [BLOCK][BLOCK][hs] */
    const conv_job *j = wj->j;
    /* the phases' tails, which the chunks read past a run's last tile */
    memset(ph, 0, (size_t)(TILE * ps) * sizeof *ph);
    for (int64_t l = lanes; l < tb; l++)
        for (int e = 0; e < POINTS; e++)
            h[e * hs + l] = 0;
    for (int64_t ci = 0; ci < wj->cin; ci++) {
        for (int64_t ri = 0; ri < nruns; ri++) {
            const tile_run *run = &runs[ri];
            const char *xc = j->x + (size_t)((run->n * wj->cin + ci) * wj->in_h * wj->in_w) * j->es;
            const int64_t c0 = run->tx0 * TILE - wj->pad_w, n = TILE * run->len + 2;
            for (int r = 0; r < BLOCK; r++) {
                float *o = h + r * BLOCK * hs + run->lane;
                WINO(input_row)(wj, xc, run->ty * TILE - wj->pad_h + r, c0, n, ph, ps);
                /* B' along the row per tile q (its taps: phases 0-3 at q,
                 * phases 0-1 at q + 1), in chunks of LANES tiles.  A chunk
                 * reaching past the run writes lanes that the next run
                 * then overwrites, or lanes past the block's tiles: columns
                 * of the products that no output reads. */
                for (int64_t q0 = 0; q0 < run->len; q0 += LANES, o += LANES) {
                    const float *p0 = ph + q0, *p1 = p0 + ps, *p2 = p1 + ps, *p3 = p2 + ps;
                    WINO(input_1d)(p0, p1, p2, p3, p0 + 1, p1 + 1, o, hs);
                }
            }
        }
        /* point xi = 6 a + b: B' down the rows r of h[r][b] */
        for (int64_t l0 = 0; l0 < tb; l0 += LANES) {
            float *vp = v + ((l0 / nr) * wj->cin + ci) * nr + l0 % nr;
            for (int b = 0; b < BLOCK; b++) {
                const float *hb = h + b * hs + l0;
                const int64_t ld = BLOCK * hs;
                WINO(input_1d)(hb, hb + ld, hb + 2 * ld, hb + 3 * ld, hb + 4 * ld, hb + 5 * ld,
                               vp + (size_t)(b * np * wj->cin * nr), BLOCK * np * wj->cin * nr);
            }
        }
    }
}

/* Output channels [co0, co0 + rows) of the block: the 36 products into m
 * ([POINTS][mb][tb]), then per channel A' down the rows over the lanes,
 * and per tile and output row A' along it plus the bias, each run's
 * output rows assembled in f32 and rounded to t by epi. */
static WINO_TARGET void WINO(products_and_output)(const wino_job *wj, const tile_run *runs, int64_t nruns,
                                                  const float *v, int64_t co0, int64_t rows, float *m,
                                                  float *scratch)
{
    const amp_gemm_kernel *k = wj->k;
    const conv_job *j = wj->j;
    const int64_t mr = k->mr, nr = k->nr, tb = wj->tb, np = tb / nr, mb = wj->mb;
    const int64_t pm0 = co0 / mr, pms = cdiv(rows, mr);
    float *h = scratch;                /* [TILE][BLOCK][tb] */
    float *o = h + TILE * BLOCK * tb;  /* [TILE][TILE][tb] */
    float *orow = o + TILE * TILE * tb; /* one output row of a run */
    for (int xi = 0; xi < POINTS; xi++)
        for (int64_t kb = 0; kb < wj->nkb; kb++) {
            const int64_t kc = min64(wj->kcu, wj->cin - kb * wj->kcu);
            const float *ub = wj->u + xi * wj->u_point + kb * wj->kcu * wj->mpanels * mr;
            for (int64_t pm = 0; pm < pms; pm++) {
                const float *pa = ub + (pm0 + pm) * kc * mr;
                for (int64_t pn = 0; pn < np; pn++)
                    k->micro(kc, pa, v + ((xi * np + pn) * wj->cin + kb * wj->kcu) * nr,
                             m + (xi * mb + pm * mr) * tb + pn * nr, tb, kb > 0);
            }
        }
    for (int64_t r = 0; r < rows; r++) {
        const int64_t co = co0 + r;
        const float bias = j->bias != NULL ? amp_ld(j->t, j->bias, co) : 0.0f;
        /* h[a][b] = A' down the rows of point xi = 6 a' + b */
        for (int64_t l0 = 0; l0 < tb; l0 += LANES)
            for (int b = 0; b < BLOCK; b++)
                WINO(output_1d)(m + (b * mb + r) * tb + l0, BLOCK * mb * tb, h + b * tb + l0, BLOCK * tb);
        /* o[a][b] = A' along the rows of h, every lane */
        for (int64_t l0 = 0; l0 < tb; l0 += LANES)
            for (int a = 0; a < TILE; a++)
                WINO(output_1d)(h + a * BLOCK * tb + l0, tb, o + a * TILE * tb + l0, tb);
        for (int64_t ri = 0; ri < nruns; ri++) {
            const tile_run *run = &runs[ri];
            const int64_t ox0 = run->tx0 * TILE, n = min64(TILE * run->len, wj->out_w - ox0);
            for (int a = 0; a < TILE; a++) {
                const int64_t oy = run->ty * TILE + a;
                const float *o0 = o + a * TILE * tb + run->lane, *o1 = o0 + tb, *o2 = o1 + tb, *o3 = o2 + tb;
                if (oy >= wj->out_h)
                    break;
                /* the tiles' columns side by side, plus the bias */
                for (int64_t q = 0; q < run->len; q++) {
                    orow[TILE * q] = o0[q] + bias;
                    orow[TILE * q + 1] = o1[q] + bias;
                    orow[TILE * q + 2] = o2[q] + bias;
                    orow[TILE * q + 3] = o3[q] + bias;
                }
                k->epi(j->t, n, orow, 1.0f, 0.0f, NULL, 0, NULL,
                       j->out + (size_t)(((run->n * wj->cout + co) * wj->out_h + oy) * wj->out_w + ox0) * j->es);
            }
        }
    }
}

static WINO_TARGET void WINO(block_task)(void *ctx, int64_t task, int slot)
{
    const wino_job *wj = ctx;
    const int64_t blk = task / wj->co_chunks, chunk = task % wj->co_chunks;
    const int64_t t0 = blk * wj->tb, lanes = min64(wj->tb, wj->tiles - t0);
    const int64_t co_begin = chunk * wj->co_chunk, co_end = min64(wj->cout, co_begin + wj->co_chunk);
    float *v = wj->work + (size_t)slot * wj->work_floats;
    float *m = v + (size_t)POINTS * (size_t)wj->cin * (size_t)wj->tb;
    float *scratch = m + (size_t)POINTS * (size_t)wj->mb * (size_t)wj->tb;
    tile_run runs[LANES_MAX];
    const int64_t nruns = tile_runs(wj, t0, lanes, runs);
    WINO(transform_input)(wj, runs, nruns, lanes, v, scratch);
    for (int64_t co0 = co_begin; co0 < co_end; co0 += wj->mb)
        WINO(products_and_output)(wj, runs, nruns, v, co0, min64(wj->mb, co_end - co0), m, scratch);
}

