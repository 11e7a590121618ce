/*
 * ref_complex.c - reference kernels of amprt/complex.h other than the
 * transforms: polar, view_as_complex/view_as_real, real, imag, abs, angle,
 * conj (complex, and abs/angle of the real dtypes), and eig.
 *
 * Each computes in double and rounds every output once.  eig is the
 * classic dense nonsymmetric eigensolver, written for this runtime:
 * Householder reduction to upper Hessenberg form, Francis double-shift QR
 * iterations (with the customary exceptional shifts after 10 and 20
 * fruitless sweeps) to a real quasi-triangular Schur form T = Z^T A Z,
 * then each eigenvector solved from T by back substitution in complex
 * arithmetic and carried back by Z.
 *
 * Its kernels are hand-written: each definition is the kernel's body.
 */
#include <float.h>
#include <math.h>

#include "amprt_internal.h"

/* after amprt.h: <complex.h>'s macro I would rename the kernels' parameters named I */
#include <complex.h>

/* ---- elementwise ----------------------------------------------------------------- */

#define COMPLEX_ELEMENTWISE(T, CT, RT)                                                               \
    void amp_ref_view_as_complex_##T(size_t n, const RT *x, CT *y)                                   \
    {                                                                                                \
        for (size_t i = 0; i < n; i++) {                                                             \
            y[i].re = x[2 * i];                                                                      \
            y[i].im = x[2 * i + 1];                                                                  \
        }                                                                                            \
    }                                                                                                \
    void amp_ref_view_as_real_##T(size_t n, const CT *x, RT *y)                                      \
    {                                                                                                \
        for (size_t i = 0; i < n; i++) {                                                             \
            y[2 * i] = x[i].re;                                                                      \
            y[2 * i + 1] = x[i].im;                                                                  \
        }                                                                                            \
    }                                                                                                \
    void amp_ref_real_##T(size_t n, const CT *x, RT *y)                                              \
    {                                                                                                \
        for (size_t i = 0; i < n; i++)                                                               \
            y[i] = x[i].re;                                                                          \
    }                                                                                                \
    void amp_ref_imag_##T(size_t n, const CT *x, RT *y)                                              \
    {                                                                                                \
        for (size_t i = 0; i < n; i++)                                                               \
            y[i] = x[i].im;                                                                          \
    }                                                                                                \
    void amp_ref_abs_##T(size_t n, const CT *x, RT *y)                                               \
    {                                                                                                \
        for (size_t i = 0; i < n; i++)                                                               \
            y[i] = (RT)hypot((double)x[i].re, (double)x[i].im);                                      \
    }                                                                                                \
    void amp_ref_angle_##T(size_t n, const CT *x, RT *y)                                             \
    {                                                                                                \
        for (size_t i = 0; i < n; i++)                                                               \
            y[i] = (RT)atan2((double)x[i].im, (double)x[i].re);                                      \
    }                                                                                                \
    void amp_ref_conj_##T(size_t n, const CT *x, CT *y)                                              \
    {                                                                                                \
        for (size_t i = 0; i < n; i++) {                                                             \
            y[i].re = x[i].re;                                                                       \
            y[i].im = -x[i].im;                                                                      \
        }                                                                                            \
    }                                                                                                \
    void amp_ref_polar_##T(int ndim, const int64_t *shape, const RT *abs, const int64_t *abs_stride, \
                           const RT *angle, const int64_t *angle_stride, CT *y)                      \
    {                                                                                                \
        int64_t total = 1;                                                                           \
        for (int k = 0; k < ndim; k++)                                                               \
            total *= shape[k];                                                                       \
        for (int64_t e = 0; e < total; e++) {                                                        \
            int64_t rem = e, ia = 0, ib = 0;                                                         \
            for (int k = ndim - 1; k >= 0; k--) {                                                    \
                int64_t idx = rem % shape[k];                                                        \
                rem /= shape[k];                                                                     \
                ia += idx * abs_stride[k];                                                           \
                ib += idx * angle_stride[k];                                                         \
            }                                                                                        \
            double r = abs[ia], t = angle[ib];                                                       \
            y[e].re = (RT)(r * cos(t));                                                              \
            y[e].im = (RT)(r * sin(t));                                                              \
        }                                                                                            \
    }

COMPLEX_ELEMENTWISE(c64, amp_c64, float)
COMPLEX_ELEMENTWISE(c128, amp_c128, double)

/* angle of real tensors, PyTorch's: pi for negative numbers and -0, 0
 * otherwise, NaN kept; through f32 for the narrow types */
static AMP_ALWAYS_INLINE double real_angle(double v) { return isnan(v) ? v : signbit(v) ? 3.14159265358979323846 : 0; }

#define REAL_PARTS(T)                                                                                \
    void amp_ref_angle_##T(size_t n, const AMP_CTYPE_##T *x, AMP_CTYPE_##T *y)                       \
    {                                                                                                \
        for (size_t i = 0; i < n; i++)                                                               \
            amp_st(AMP_DTYPE_##T, y, (int64_t)i, (float)real_angle(amp_ld(AMP_DTYPE_##T, x, (int64_t)i))); \
    }
AMP_FOR_EACH_KERNEL_DTYPE(REAL_PARTS)

void amp_ref_angle_f64(size_t n, const double *x, double *y)
{
    for (size_t i = 0; i < n; i++)
        y[i] = real_angle(x[i]);
}

/* ---- eig ------------------------------------------------------------------------- */

#define H_(i, j) h[(i) * n + (j)]
#define Z_(i, j) z[(i) * n + (j)]

/* A = Q H Q^T, H upper Hessenberg, by Householder reflections; z = Q. */
static void hessenberg(int64_t n, double *h, double *z, double *v)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++)
            Z_(i, j) = i == j;
    for (int64_t k = 0; k + 2 < n; k++) {
        double norm = 0;
        for (int64_t i = k + 1; i < n; i++)
            norm = hypot(norm, H_(i, k));
        if (norm == 0)
            continue;
        double alpha = H_(k + 1, k) > 0 ? -norm : norm;
        for (int64_t i = k + 1; i < n; i++)
            v[i] = H_(i, k);
        v[k + 1] -= alpha;
        double vv = 0;
        for (int64_t i = k + 1; i < n; i++)
            vv += v[i] * v[i];
        if (vv == 0)
            continue;
        /* H = P H P, P = I - 2 v v^T / (v^T v), rows then columns */
        for (int64_t j = 0; j < n; j++) {
            double s = 0;
            for (int64_t i = k + 1; i < n; i++)
                s += v[i] * H_(i, j);
            s = 2 * s / vv;
            for (int64_t i = k + 1; i < n; i++)
                H_(i, j) -= s * v[i];
        }
        for (int64_t i = 0; i < n; i++) {
            double s = 0, t = 0;
            for (int64_t j = k + 1; j < n; j++) {
                s += H_(i, j) * v[j];
                t += Z_(i, j) * v[j];
            }
            s = 2 * s / vv;
            t = 2 * t / vv;
            for (int64_t j = k + 1; j < n; j++) {
                H_(i, j) -= s * v[j];
                Z_(i, j) -= t * v[j];
            }
        }
        for (int64_t i = k + 2; i < n; i++)
            H_(i, k) = 0;
    }
}

/* Apply the reflector I - 2 u u^T / (u^T u), u of length nr (2 or 3) from
 * row/column r, to rows r.. of h (columns c0..n) and columns r.. of h
 * (rows 0..r1) and of z. */
static void reflect(int64_t n, double *h, double *z, int64_t r, int nr, const double *u, int64_t c0, int64_t r1)
{
    double uu = 0;
    for (int i = 0; i < nr; i++)
        uu += u[i] * u[i];
    if (uu == 0)
        return;
    for (int64_t j = c0; j < n; j++) {
        double s = 0;
        for (int i = 0; i < nr; i++)
            s += u[i] * H_(r + i, j);
        s = 2 * s / uu;
        for (int i = 0; i < nr; i++)
            H_(r + i, j) -= s * u[i];
    }
    for (int64_t i = 0; i <= r1; i++) {
        double s = 0;
        for (int k = 0; k < nr; k++)
            s += H_(i, r + k) * u[k];
        s = 2 * s / uu;
        for (int k = 0; k < nr; k++)
            H_(i, r + k) -= s * u[k];
    }
    for (int64_t i = 0; i < n; i++) {
        double s = 0;
        for (int k = 0; k < nr; k++)
            s += Z_(i, r + k) * u[k];
        s = 2 * s / uu;
        for (int k = 0; k < nr; k++)
            Z_(i, r + k) -= s * u[k];
    }
}

/* A Householder vector u with (I - 2uu^T/u^Tu) x = (beta, 0, ...). */
static void house(const double *x, int nr, double *u)
{
    double norm = 0;
    for (int i = 0; i < nr; i++)
        norm = hypot(norm, x[i]);
    for (int i = 0; i < nr; i++)
        u[i] = x[i];
    if (norm == 0)
        return;
    u[0] += x[0] >= 0 ? norm : -norm;
}

/* Francis double-shift QR on Hessenberg h to quasi-triangular form, z
 * accumulating the transformations.  Returns 0 on success. */
static int schur(int64_t n, double *h, double *z)
{
    int64_t hi = n - 1, its = 0, limit = 30 * (n > 1 ? n : 1);
    double anorm = 0;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = i > 0 ? i - 1 : 0; j < n; j++)
            anorm += fabs(H_(i, j));
    while (hi >= 0) {
        /* deflate: the lowest negligible subdiagonal entry at or above hi */
        int64_t lo = hi;
        while (lo > 0) {
            double s = fabs(H_(lo - 1, lo - 1)) + fabs(H_(lo, lo));
            if (s == 0)
                s = anorm;
            if (fabs(H_(lo, lo - 1)) <= DBL_EPSILON * s) {
                H_(lo, lo - 1) = 0;
                break;
            }
            lo--;
        }
        if (lo == hi) { /* one eigenvalue */
            hi--;
            its = 0;
            continue;
        }
        if (lo == hi - 1) { /* a 2x2 block: left as is, solved in eig_one */
            hi -= 2;
            its = 0;
            continue;
        }
        if (limit-- <= 0)
            return 1;
        /* the shifts: the trailing 2x2 block's eigenvalues, or an
         * exceptional pair after 10 and 20 sweeps without deflation */
        double s, t;
        if (its == 10 || its == 20) {
            double e = fabs(H_(hi, hi - 1)) + fabs(H_(hi - 1, hi - 2));
            s = 1.5 * e + H_(hi, hi);
            t = e * e;
        } else {
            double a = H_(hi - 1, hi - 1), b = H_(hi - 1, hi), c = H_(hi, hi - 1), d = H_(hi, hi);
            s = a + d;
            t = a * d - b * c;
        }
        its++;
        /* the first column of (H - s1)(H - s2) = H^2 - s H + t, from lo */
        double x[3];
        x[0] = H_(lo, lo) * H_(lo, lo) + H_(lo, lo + 1) * H_(lo + 1, lo) - s * H_(lo, lo) + t;
        x[1] = H_(lo + 1, lo) * (H_(lo, lo) + H_(lo + 1, lo + 1) - s);
        x[2] = H_(lo + 1, lo) * H_(lo + 2, lo + 1);
        for (int64_t k = lo; k <= hi - 2; k++) {
            double u[3];
            if (k > lo) {
                x[0] = H_(k, k - 1);
                x[1] = H_(k + 1, k - 1);
                x[2] = H_(k + 2, k - 1);
            }
            house(x, 3, u);
            reflect(n, h, z, k, 3, u, k > lo ? k - 1 : lo, k + 3 < hi ? k + 3 : hi);
            if (k > lo) {
                H_(k + 1, k - 1) = 0;
                H_(k + 2, k - 1) = 0;
            }
        }
        {
            double u[2];
            x[0] = H_(hi - 1, hi - 2);
            x[1] = H_(hi, hi - 2);
            house(x, 2, u);
            reflect(n, h, z, hi - 1, 2, u, hi - 2, hi);
            H_(hi, hi - 2) = 0;
        }
    }
    return 0;
}

/* The eigenvalues of the 2x2 block at k, in LAPACK's order: a real pair
 * as mean + sign(p) r then mean - sign(p) r (p = (a - d) / 2), a complex
 * pair with the positive imaginary part first. */
static void block_values(const double *h, int64_t n, int64_t k, double complex *l0, double complex *l1)
{
    double a = H_(k, k), b = H_(k, k + 1), c = H_(k + 1, k), d = H_(k + 1, k + 1);
    double p = (a - d) / 2, mean = (a + d) / 2, disc = p * p + b * c;
    if (disc >= 0) {
        double r = sqrt(disc);
        *l0 = p >= 0 ? mean + r : mean - r;
        *l1 = p >= 0 ? mean - r : mean + r;
    } else {
        double im = sqrt(-disc);
        *l0 = mean + im * I;
        *l1 = mean - im * I;
    }
}

/* x with T x = lambda x, T quasi-triangular (h), x[j] = 0 below the block
 * holding lambda at rows [k0, k1]. */
static void schur_vector(const double *h, int64_t n, int64_t k0, int64_t k1, double complex lambda, double complex *x,
                         double smin)
{
    for (int64_t i = 0; i < n; i++)
        x[i] = 0;
    if (k0 == k1) {
        x[k0] = 1;
    } else {
        /* (a - l) x0 + b x1 = 0, with the better-conditioned row */
        double a = H_(k0, k0), b = H_(k0, k1), c = H_(k1, k0), d = H_(k1, k1);
        if (fabs(b) >= fabs(c)) {
            x[k0] = b;
            x[k1] = lambda - a;
        } else {
            x[k0] = lambda - d;
            x[k1] = c;
        }
    }
    for (int64_t i = k0 - 1; i >= 0; i--) {
        if (i > 0 && H_(i, i - 1) != 0) {
            /* a 2x2 block at rows i-1, i */
            int64_t j0 = i - 1;
            double complex r0 = 0, r1 = 0;
            for (int64_t j = i + 1; j <= k1; j++) {
                r0 += H_(j0, j) * x[j];
                r1 += H_(i, j) * x[j];
            }
            double complex a = H_(j0, j0) - lambda, b = H_(j0, i), c = H_(i, j0), d = H_(i, i) - lambda;
            double complex det = a * d - b * c;
            if (cabs(det) < smin)
                det = smin;
            x[j0] = (-r0 * d + b * r1) / det;
            x[i] = (-a * r1 + c * r0) / det;
            i--;
        } else {
            double complex r = 0;
            for (int64_t j = i + 1; j <= k1; j++)
                r += H_(i, j) * x[j];
            double complex den = H_(i, i) - lambda;
            if (cabs(den) < smin)
                den = smin; /* a repeated eigenvalue: perturbed, as LAPACK's trevc */
            x[i] = -r / den;
        }
    }
}

static int eig_one(int64_t n, const double *a, double complex *vals, double complex *vecs, double *work)
{
    double *h = work, *z = h + n * n, *v = z + n * n;
    double complex *x = (double complex *)(void *)(v + n), *y = x + n;
    for (int64_t i = 0; i < n * n; i++)
        h[i] = a[i];
    hessenberg(n, h, z, v);
    if (schur(n, h, z))
        return 1;
    double norm = 0;
    for (int64_t i = 0; i < n * n; i++)
        norm = fmax(norm, fabs(h[i]));
    double smin = fmax(DBL_EPSILON * norm, DBL_MIN);
    for (int64_t k = 0; k < n;) {
        int two = k + 1 < n && H_(k + 1, k) != 0;
        double complex l[2];
        if (two)
            block_values(h, n, k, &l[0], &l[1]);
        else
            l[0] = H_(k, k);
        for (int m = 0; m <= two; m++) {
            int64_t col = k + m;
            vals[col] = l[m];
            if (!vecs)
                continue;
            schur_vector(h, n, k, k + two, l[m], x, smin);
            /* back to A's basis, then unit 2-norm with the largest component real */
            double nrm = 0, big = -1;
            int64_t at = 0;
            for (int64_t i = 0; i < n; i++) {
                double complex s = 0;
                for (int64_t j = 0; j <= k + two; j++)
                    s += Z_(i, j) * x[j];
                y[i] = s;
                nrm = hypot(nrm, cabs(s));
                if (cabs(s) > big) {
                    big = cabs(s);
                    at = i;
                }
            }
            double complex phase = cimag(l[m]) != 0 && big > 0 ? conj(y[at]) / cabs(y[at]) : 1;
            for (int64_t i = 0; i < n; i++)
                vecs[i * n + col] = nrm > 0 ? y[i] * phase / nrm : y[i];
        }
        k += two ? 2 : 1;
    }
    return 0;
}

#define EIG_KERNEL(T, CT, RT)                                                                        \
    int amp_ref_eig_##T(int64_t batch, int64_t n, const RT *a, CT *values, CT *vectors, double *work) \
    {                                                                                                \
        double *m = work;                                                                            \
        double complex *vals = (double complex *)(void *)(m + n * n);                                \
        double complex *vecs = vals + n;                                                             \
        double *rest = (double *)(void *)(vecs + n * n);                                             \
        for (int64_t b = 0; b < batch; b++) {                                                        \
            for (int64_t i = 0; i < n * n; i++)                                                      \
                m[i] = a[b * n * n + i];                                                             \
            if (eig_one(n, m, vals, vectors ? vecs : NULL, rest))                                    \
                return AMP_ERR_NO_CONVERGENCE;                                                       \
            for (int64_t i = 0; i < n; i++) {                                                        \
                values[b * n + i].re = (RT)creal(vals[i]);                                           \
                values[b * n + i].im = (RT)cimag(vals[i]);                                           \
            }                                                                                        \
            for (int64_t i = 0; vectors && i < n * n; i++) {                                         \
                vectors[b * n * n + i].re = (RT)creal(vecs[i]);                                      \
                vectors[b * n * n + i].im = (RT)cimag(vecs[i]);                                      \
            }                                                                                        \
        }                                                                                            \
        return AMP_OK;                                                                               \
    }
EIG_KERNEL(c64, amp_c64, float)
EIG_KERNEL(c128, amp_c128, double)
