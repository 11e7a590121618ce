/*
 * amprt/complex.h - part of amprt.h (include that, not this): complex
 * tensors and the kernels that make, transform and take them apart: the
 * torch.fft transforms, stft, polar, view_as_complex and view_as_real,
 * real, imag, abs, angle and conj, and linalg.eig / eigvals.
 *
 * Storage: a complex element is two interleaved reals, (re, im), as
 * PyTorch's complex64 (amp_c64, float pairs) and complex128 (amp_c128,
 * double pairs); an array of n of them is 2n reals, so a [..., 2] real
 * array and a [...] complex one share their bytes.
 *
 * Kernel names carry the complex dtype of their precision: *_c64 kernels
 * take and give f32 reals (RT = float) and amp_c64, *_c128 ones f64 reals
 * (double) and amp_c128.  Every kernel computes in double and rounds each
 * output once (for c64, one rounding of each part to float); outputs are
 * contiguous.
 *
 *  fft          the transform d describes (amp_fft_desc below), x -> y:
 *               the n-point DFT  Y[k] = s * sum_j X[j] e^(-+2 pi i j k / n)
 *               along each of d->dims in turn, sign - for a forward
 *               transform (fft, rfft, hfft) and + for an inverse one.  The
 *               input is zero-padded or trimmed to the signal length along
 *               each transformed dim first (for a c2r dim, to n/2 + 1).
 *               c2c: complex to complex (a real x reads as imaginary 0).
 *               r2c: real x, the last transformed dim first, keeping bins
 *               0..n/2 (n/2 + 1 of them), then c2c along the others.
 *               c2r: c2c along all but the last dim, then the last from
 *               its n/2 + 1 bins as a Hermitian spectrum (the imaginary
 *               parts of bin 0 and, for even n, bin n/2 are ignored, as
 *               pocketfft and so PyTorch do) to n reals.
 *               s by norm: BACKWARD 1 forward, 1/N inverse; ORTHO 1/sqrt(N);
 *               FORWARD 1/N forward, 1 inverse; N the product of the lengths.
 *               Every length is exact: a direct DFT in double for lengths
 *               with a prime factor above 7, mixed-radix otherwise (both
 *               with exact twiddles, cos/sin of 2 pi (jk mod n) / n).
 *               work: amp_fft_work_doubles(d) doubles.
 *  stft         x [batch, len] real -> y [batch, n_freq, n_frames]: frame
 *               t is x_padded[t hop .. t hop + n_fft) times the window
 *               (win_length long, NULL meaning ones, centred in n_fft with
 *               zeros), DFT'd (forward); x_padded is x with n_fft/2 on each
 *               side when center (pad_mode AMP_PAD_CONSTANT zeros,
 *               AMP_PAD_REFLECT, AMP_PAD_REPLICATE or AMP_STFT_PAD_CIRCULAR),
 *               else x.  n_freq is
 *               n_fft/2 + 1 (onesided) or n_fft; n_frames 1 + (padded -
 *               n_fft) / hop.  normalized scales by 1/sqrt(n_fft).  work:
 *               AMP_STFT_WORK_DOUBLES(len, n_fft) doubles.
 *  polar        y = abs (cos angle + i sin angle), broadcasting as the
 *               _bcast kernels (shape of y, element strides of each input).
 *  view_as_complex, view_as_real   copies between [..., 2] reals and
 *               complex (n complex elements).
 *  real, imag, abs, angle, conj    elementwise, n elements: abs is hypot
 *               (no overflow for large parts), angle atan2(im, re).
 *  angle_T for T in f64, f32, bf16, f16: the real form, 0 for x >= +0
 *               and pi for x <= -0, NaN kept, as PyTorch's angle (abs of
 *               a real tensor is amprt/elementwise.h's amp_abs_T).
 *  eig          for each of batch real [n, n] matrices a: the eigenvalues
 *               (values [n]) and right eigenvectors (vectors [n, n], the
 *               k-th in column k; NULL: values only), as LAPACK's geev:
 *               Householder reduction to Hessenberg form, Francis
 *               double-shift QR to real Schur form, eigenvectors by back
 *               substitution, each normalized to unit 2-norm with its
 *               largest component real; a complex pair appears as (re + i
 *               im, re - i im) with im > 0, in the Schur form's order.
 *               Returns AMP_ERR_NO_CONVERGENCE, writing nothing for that
 *               matrix and the ones after, if the QR iteration does not
 *               converge in 30 n sweeps.  work: AMP_EIG_WORK_DOUBLES(n).
 */
#ifndef AMPRT_COMPLEX_H
#define AMPRT_COMPLEX_H

typedef struct { float re, im; } amp_c64;
typedef struct { double re, im; } amp_c128;

enum { AMP_FFT_C2C = 0, AMP_FFT_R2C = 1, AMP_FFT_C2R = 2 };
enum { AMP_FFT_NORM_BACKWARD = 0, AMP_FFT_NORM_ORTHO = 1, AMP_FFT_NORM_FORWARD = 2 };
/* stft's pad modes: amp_pad_mode's (amprt/elementwise.h), and circular */
enum { AMP_STFT_PAD_CIRCULAR = 3 };

/* One torch.fft call.  x has in_shape (reals when in_real, else complex),
 * y out_shape (reals for c2r, else complex); both have ndim (1 to 16)
 * dims.  The transformed dims are dims[0..ndims), distinct, each with its
 * signal length n in lens[] (y's length along it, except the last dim of
 * r2c, where y has n/2 + 1). */
typedef struct amp_fft_desc {
    int ndim;
    const int64_t *in_shape, *out_shape;
    int ndims;
    const int *dims;
    const int64_t *lens;
    int kind;    /* AMP_FFT_C2C, _R2C, _C2R */
    int inverse; /* the + sign, and the inverse's scale */
    int norm;    /* AMP_FFT_NORM_* */
    int in_real; /* x holds reals */
} amp_fft_desc;

/* The work an fft needs, in doubles (two complex copies of the largest
 * intermediate tensor and two of the longest line). */
size_t amp_fft_work_doubles(const amp_fft_desc *d);

#define AMP_STFT_WORK_DOUBLES(len, n_fft) ((size_t)(len) + 10 * (size_t)(n_fft))
#define AMP_EIG_WORK_DOUBLES(n) (5 * (size_t)(n) * (size_t)(n) + 8 * (size_t)(n))

#define AMP_COMPLEX_OF_CTYPE(X, T, CT, RT)                                               \
    X(fft, T, void, (const amp_fft_desc *d, const void *x, void *y, double *work),      \
      (d, x, y, work))                                                                   \
    X(stft, T, void,                                                                     \
      (int64_t batch, int64_t len, int64_t n_fft, int64_t hop, int64_t win_length,       \
       const RT *window, int center, int pad_mode, int normalized, int onesided,         \
       const RT *x, CT *y, double *work),                                                \
      (batch, len, n_fft, hop, win_length, window, center, pad_mode, normalized,         \
       onesided, x, y, work))                                                            \
    X(polar, T, void,                                                                    \
      (int ndim, const int64_t *shape, const RT *abs, const int64_t *abs_stride,         \
       const RT *angle, const int64_t *angle_stride, CT *y),                             \
      (ndim, shape, abs, abs_stride, angle, angle_stride, y))                            \
    X(view_as_complex, T, void, (size_t n, const RT *x, CT *y), (n, x, y))               \
    X(view_as_real, T, void, (size_t n, const CT *x, RT *y), (n, x, y))                  \
    X(real, T, void, (size_t n, const CT *x, RT *y), (n, x, y))                          \
    X(imag, T, void, (size_t n, const CT *x, RT *y), (n, x, y))                          \
    X(abs, T, void, (size_t n, const CT *x, RT *y), (n, x, y))                           \
    X(angle, T, void, (size_t n, const CT *x, RT *y), (n, x, y))                         \
    X(conj, T, void, (size_t n, const CT *x, CT *y), (n, x, y))                          \
    X(eig, T, int,                                                                       \
      (int64_t batch, int64_t n, const RT *a, CT *values, CT *vectors, double *work),    \
      (batch, n, a, values, vectors, work))

/* angle of real tensors, every float dtype (their abs is amprt/elementwise.h's) */
#define AMP_COMPLEX_REAL_OF_CTYPE(X, T, CT)                                              \
    X(angle, T, void, (size_t n, const CT *x, CT *y), (n, x, y))

#define AMP_COMPLEX_KERNELS(X)                                                           \
    AMP_COMPLEX_OF_CTYPE(X, c64, amp_c64, float)                                         \
    AMP_COMPLEX_OF_CTYPE(X, c128, amp_c128, double)                                      \
    AMP_COMPLEX_REAL_OF_CTYPE(X, f64, double)                                            \
    AMP_COMPLEX_REAL_OF_CTYPE(X, f32, float)                                             \
    AMP_COMPLEX_REAL_OF_CTYPE(X, bf16, amp_bf16)                                         \
    AMP_COMPLEX_REAL_OF_CTYPE(X, f16, amp_f16)

#endif /* AMPRT_COMPLEX_H */
