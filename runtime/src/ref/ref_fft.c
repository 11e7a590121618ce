/*
 * ref_fft.c - reference kernels of amprt/complex.h's transforms: fft (every
 * torch.fft op: c2c, r2c, c2r over any set of dims) and stft.
 *
 * Everything computes in double: the input is widened into a complex
 * double working tensor, each transformed dim is done as independent 1-D
 * DFTs of its lines, and the result is scaled and rounded once into y.
 * A 1-D DFT of length n is mixed-radix decimation in time over the prime
 * factors 2, 3, 5 and 7 (recursing on the smallest), and a direct O(n^2)
 * sum for a remaining factor above 7; every twiddle is cos/sin of
 * 2 pi (e mod n) / n computed afresh, so no error accumulates along a
 * recurrence and every length is as exact as its summation.
 *
 * Its kernels are hand-written: each passes its precision to one body.
 */
#include <math.h>

#include "amprt_internal.h"

static const double two_pi = 6.283185307179586476925286766559;

static int64_t smallest_factor(int64_t n)
{
    for (int64_t p = 2; p * p <= n; p++)
        if (n % p == 0)
            return p;
    return n;
}

/* w^e for w = e^(sign 2 pi i / n), reduced mod n so the angle stays small */
static void twiddle(int64_t e, int64_t n, int sign, double *re, double *im)
{
    double a = two_pi * (double)(e % n) / (double)n;
    *re = cos(a);
    *im = sign * sin(a);
}

/* y[k] = sum_j x[j s] w^(j k), k < n, x and y interleaved complex; y does
 * not alias x.  scratch: 4 n doubles. */
static void dft(const double *x, int64_t s, int64_t n, int sign, double *y, double *scratch)
{
    if (n == 1) {
        y[0] = x[0];
        y[1] = x[1];
        return;
    }
    int64_t p = smallest_factor(n);
    if (p > 7) {
        /* direct: a prime factor above 7 (the whole length, since p is the smallest) */
        for (int64_t k = 0; k < n; k++) {
            double sr = 0, si = 0;
            for (int64_t j = 0; j < n; j++) {
                double wr, wi;
                twiddle((j * k) % n, n, sign, &wr, &wi);
                double xr = x[2 * j * s], xi = x[2 * j * s + 1];
                sr += xr * wr - xi * wi;
                si += xr * wi + xi * wr;
            }
            y[2 * k] = sr;
            y[2 * k + 1] = si;
        }
        return;
    }
    /* p sub-DFTs of length m over x[r::p], then butterflies of radix p */
    int64_t m = n / p;
    double *sub = scratch;
    for (int64_t r = 0; r < p; r++)
        dft(x + 2 * r * s, s * p, m, sign, sub + 2 * r * m, scratch + 2 * n);
    for (int64_t k = 0; k < n; k++) {
        double sr = 0, si = 0;
        for (int64_t r = 0; r < p; r++) {
            double wr, wi;
            twiddle((r * k) % n, n, sign, &wr, &wi);
            const double *z = sub + 2 * (r * m + k % m);
            sr += z[0] * wr - z[1] * wi;
            si += z[0] * wi + z[1] * wr;
        }
        y[2 * k] = sr;
        y[2 * k + 1] = si;
    }
}

/* ---- fft ---------------------------------------------------------------------- */

static int64_t max3(int64_t a, int64_t b, int64_t c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

/* A bound for one dim over every stage: its input, output and working lengths. */
static int64_t dim_bound(const amp_fft_desc *d, int k, int64_t *line)
{
    int64_t b = d->in_shape[k] > d->out_shape[k] ? d->in_shape[k] : d->out_shape[k];
    for (int i = 0; i < d->ndims; i++) {
        if (d->dims[i] != k)
            continue;
        int64_t n = d->lens[i];
        b = max3(b, n, n / 2 + 1);
        *line = max3(*line, b, n);
    }
    return b;
}

size_t amp_fft_work_doubles(const amp_fft_desc *d)
{
    size_t m = 1;
    int64_t line = 1;
    for (int k = 0; k < d->ndim; k++)
        m *= (size_t)dim_bound(d, k, &line);
    /* two complex tensors, and a line's input, output and dft scratch */
    return 4 * m + 8 * (size_t)line;
}

static int64_t prod(const int64_t *s, int from, int to)
{
    int64_t p = 1;
    for (int i = from; i < to; i++)
        p *= s[i];
    return p;
}

/* One stage: along dim k of a (shape cur), lines of length cur[k] become
 * lines of length out_len in b.  mode: 0 c2c, 1 r2c (keep n/2 + 1 bins),
 * 2 c2r (a Hermitian half to n points, real parts kept as complex with
 * imaginary 0). */
static void stage(int ndim, int64_t *cur, int k, int64_t n, int mode, int sign, const double *a, double *b,
                  double *line_in, double *line_out, double *scratch)
{
    int64_t outer = prod(cur, 0, k), inner = prod(cur, k + 1, ndim), len = cur[k];
    int64_t out_len = mode == 1 ? n / 2 + 1 : n;
    for (int64_t o = 0; o < outer; o++) {
        for (int64_t i = 0; i < inner; i++) {
            /* the n-point input line: the lines are n long (c2c, r2c), or
             * n/2 + 1 bins extended by Hermitian symmetry (c2r) */
            for (int64_t j = 0; j < n; j++) {
                const double *z;
                double re = 0, im = 0;
                if (mode == 2) {
                    int64_t h = n / 2 + 1;
                    int conj = j >= h;
                    int64_t src = conj ? n - j : j;
                    z = a + 2 * ((o * len + src) * inner + i);
                    re = z[0];
                    im = conj ? -z[1] : z[1];
                    if (j == 0 || (n % 2 == 0 && j == n / 2))
                        im = 0; /* bin 0 and the Nyquist bin are real in a Hermitian spectrum */
                } else {
                    z = a + 2 * ((o * len + j) * inner + i);
                    re = z[0];
                    im = z[1];
                }
                line_in[2 * j] = re;
                line_in[2 * j + 1] = im;
            }
            dft(line_in, 1, n, sign, line_out, scratch);
            for (int64_t j = 0; j < out_len; j++) {
                double *z = b + 2 * ((o * out_len + j) * inner + i);
                z[0] = line_out[2 * j];
                z[1] = mode == 2 ? 0 : line_out[2 * j + 1];
            }
        }
    }
    cur[k] = out_len;
}

static void fft_body(const amp_fft_desc *d, const void *x, void *y, double *work, int f64)
{
    int ndim = d->ndim;
    size_t m = 1;
    int64_t line = 1;
    for (int k = 0; k < ndim; k++)
        m *= (size_t)dim_bound(d, k, &line);
    double *a = work, *b = work + 2 * m, *line_in = b + 2 * m, *line_out = line_in + 2 * line,
           *scratch = line_out + 2 * line;

    /* the working input: x resized along each transformed dim (zero-padded
     * or trimmed) to its signal length, or n/2 + 1 for the c2r dim */
    int64_t cur[16];
    for (int k = 0; k < ndim; k++)
        cur[k] = d->in_shape[k];
    int last = d->dims[d->ndims - 1];
    for (int i = 0; i < d->ndims; i++)
        cur[d->dims[i]] = d->kind == AMP_FFT_C2R && d->dims[i] == last ? d->lens[i] / 2 + 1 : d->lens[i];
    int64_t total = prod(cur, 0, ndim);
    for (int64_t e = 0; e < total; e++) {
        int64_t rem = e, src = 0, stride = 1;
        int inside = 1;
        for (int k = ndim - 1; k >= 0; k--) {
            int64_t idx = rem % cur[k];
            rem /= cur[k];
            if (idx >= d->in_shape[k])
                inside = 0;
            src += idx * stride;
            stride *= d->in_shape[k];
        }
        double re = 0, im = 0;
        if (inside) {
            if (d->in_real) {
                re = f64 ? ((const double *)x)[src] : (double)((const float *)x)[src];
            } else if (f64) {
                re = ((const amp_c128 *)x)[src].re;
                im = ((const amp_c128 *)x)[src].im;
            } else {
                re = ((const amp_c64 *)x)[src].re;
                im = ((const amp_c64 *)x)[src].im;
            }
        }
        a[2 * e] = re;
        a[2 * e + 1] = im;
    }

    /* the stages: r2c's real dim first, c2r's last */
    int sign = d->inverse ? 1 : -1;
    double scale_n = 1;
    for (int s = 0; s < d->ndims; s++) {
        int i = d->kind == AMP_FFT_R2C ? (s == 0 ? d->ndims - 1 : s - 1) : s;
        int k = d->dims[i];
        int mode = k != last ? 0 : d->kind == AMP_FFT_R2C ? 1 : d->kind == AMP_FFT_C2R ? 2 : 0;
        stage(ndim, cur, k, d->lens[i], mode, sign, a, b, line_in, line_out, scratch);
        double *t = a;
        a = b;
        b = t;
        scale_n *= (double)d->lens[i];
    }
    double scale = 1;
    if (d->norm == AMP_FFT_NORM_ORTHO)
        scale = 1 / sqrt(scale_n);
    else if ((d->norm == AMP_FFT_NORM_BACKWARD) == (d->inverse != 0))
        scale = 1 / scale_n;

    total = prod(d->out_shape, 0, ndim);
    for (int64_t e = 0; e < total; e++) {
        double re = a[2 * e] * scale, im = a[2 * e + 1] * scale;
        if (d->kind == AMP_FFT_C2R) {
            if (f64)
                ((double *)y)[e] = re;
            else
                ((float *)y)[e] = (float)re;
        } else if (f64) {
            ((amp_c128 *)y)[e].re = re;
            ((amp_c128 *)y)[e].im = im;
        } else {
            ((amp_c64 *)y)[e].re = (float)re;
            ((amp_c64 *)y)[e].im = (float)im;
        }
    }
}

void amp_ref_fft_c64(const amp_fft_desc *d, const void *x, void *y, double *work) { fft_body(d, x, y, work, 0); }
void amp_ref_fft_c128(const amp_fft_desc *d, const void *x, void *y, double *work) { fft_body(d, x, y, work, 1); }

/* ---- stft ---------------------------------------------------------------------- */

/* x extended past its ends by pad_mode, for an index in [-len, 2 len) */
static int64_t padded_index(int64_t i, int64_t len, int mode)
{
    if (i >= 0 && i < len)
        return i;
    switch (mode) {
    case AMP_PAD_REFLECT: return i < 0 ? -i : 2 * (len - 1) - i;
    case AMP_PAD_REPLICATE: return i < 0 ? 0 : len - 1;
    case AMP_STFT_PAD_CIRCULAR: return i < 0 ? i + len : i - len;
    default: return -1;
    }
}

static void stft_body(int64_t batch, int64_t len, int64_t n_fft, int64_t hop, int64_t win_length, const void *window,
                      int center, int pad_mode, int normalized, int onesided, const void *x, void *y, double *work,
                      int f64)
{
    int64_t pad = center ? n_fft / 2 : 0, plen = len + 2 * pad;
    int64_t frames = 1 + (plen - n_fft) / hop, freqs = onesided ? n_fft / 2 + 1 : n_fft;
    int64_t left = (n_fft - win_length) / 2;
    double *sig = work, *win = sig + plen, *in = win + n_fft, *out = in + 2 * n_fft, *scratch = out + 2 * n_fft;
    for (int64_t j = 0; j < n_fft; j++) {
        int64_t w = j - left;
        double v = 0;
        if (w >= 0 && w < win_length)
            v = !window ? 1 : f64 ? ((const double *)window)[w] : (double)((const float *)window)[w];
        win[j] = v;
    }
    double scale = normalized ? 1 / sqrt((double)n_fft) : 1;
    for (int64_t bi = 0; bi < batch; bi++) {
        for (int64_t i = 0; i < plen; i++) {
            int64_t src = padded_index(i - pad, len, pad_mode);
            sig[i] = src < 0 ? 0 : f64 ? ((const double *)x)[bi * len + src] : (double)((const float *)x)[bi * len + src];
        }
        for (int64_t t = 0; t < frames; t++) {
            for (int64_t j = 0; j < n_fft; j++) {
                in[2 * j] = sig[t * hop + j] * win[j];
                in[2 * j + 1] = 0;
            }
            dft(in, 1, n_fft, -1, out, scratch);
            for (int64_t f = 0; f < freqs; f++) {
                int64_t e = (bi * freqs + f) * frames + t;
                if (f64) {
                    ((amp_c128 *)y)[e].re = out[2 * f] * scale;
                    ((amp_c128 *)y)[e].im = out[2 * f + 1] * scale;
                } else {
                    ((amp_c64 *)y)[e].re = (float)(out[2 * f] * scale);
                    ((amp_c64 *)y)[e].im = (float)(out[2 * f + 1] * scale);
                }
            }
        }
    }
}

void amp_ref_stft_c64(int64_t batch, int64_t len, int64_t n_fft, int64_t hop, int64_t win_length, const float *window,
                      int center, int pad_mode, int normalized, int onesided, const float *x, amp_c64 *y, double *work)
{
    stft_body(batch, len, n_fft, hop, win_length, window, center, pad_mode, normalized, onesided, x, y, work, 0);
}

void amp_ref_stft_c128(int64_t batch, int64_t len, int64_t n_fft, int64_t hop, int64_t win_length,
                       const double *window, int center, int pad_mode, int normalized, int onesided, const double *x,
                       amp_c128 *y, double *work)
{
    stft_body(batch, len, n_fft, hop, win_length, window, center, pad_mode, normalized, onesided, x, y, work, 1);
}
