/*
 * amprt/spatial.h - part of amprt.h (include that, not this): convolution,
 * pooling, upsampling, and the index-driven ops (embedding, gather, ...).
 *
 * Conventions are amprt.h's.  Tensors are contiguous, channels first
 * ([N, C, spatial...]); nspatial is 1, 2 or 3, and arrays in the
 * descriptors use their first nspatial entries.  The code generator fills
 * the descriptors from the op's arguments and its proven shapes, so the
 * kernels trust them (out_size is what PyTorch's formula gives).
 *
 *  conv            y[n, co, o...] = bias[co] + sum over ci in co's group and
 *                  the kernel window of x[n, ci, o*stride - padding + k*dilation]
 *                  w[co, ci - group start, k...]; positions outside x are 0.
 *                  w is [out_channels, in_channels/groups, kernel...], bias
 *                  [out_channels] or NULL.
 *  conv_transpose  the adjoint: w is [in_channels, out_channels/groups,
 *                  kernel...]; output_padding only widens out_size.
 *  conv_tbc        x [time, batch, in], w [kernel, in, out], bias [out]:
 *                  y [time + 2 pad - kernel + 1, batch, out].
 *  max_pool        NaN propagates (a NaN in the window gives NaN); indices
 *                  (may be NULL) receive the flat index into each input
 *                  plane of the chosen element, as return_indices gives.
 *                  Padding is -infinity.
 *  avg_pool        divisor: the window's size counting padding when
 *                  count_include_pad (clipped to the padded input), else
 *                  the elements inside the input; divisor_override when > 0.
 *  adaptive_avg_pool  PyTorch's windows: start floor(o*in/out), end
 *                  ceil((o+1)*in/out).
 *  adaptive_max_pool  the largest element of each of those windows, as
 *                  max_pool chooses it (ties keep the first, NaN wins);
 *                  indices (may be NULL) as max_pool's.
 *  upsample        mode nearest (PyTorch's "nearest": src = floor(dst *
 *                  scale)), linear (linear/bilinear/trilinear by nspatial),
 *                  cubic (bicubic, A = -0.75, border clamped); scale[d] is
 *                  the user's scale factor (in/out ratio is 1/scale) or 0
 *                  to derive it from the sizes; align_corners as PyTorch.
 *  embedding       y[i, :] = weight[index[i], :]                  (-> int)
 *  index_select    y[o, i, r] = x[o, index[i], r], x [outer, dim_size, inner]
 *  index_copy      y[o, index[i], r] = source[o, i, r]; y already holds input
 *  gather          y[i] = x[i with dim replaced by index[i]]: index has
 *                  shape index_shape, x has x_shape (both ndim dims)
 *  scatter_add     y[i with dim replaced by index[i]] += src[i] over
 *                  index_shape; y (y_shape) already holds input
 * The index kernels return AMP_OK, or AMP_ERR_TARGET_OUT_OF_RANGE for an
 * index outside [0, size) (PyTorch raises for a negative index in these
 * ops too), in which case y's contents are unspecified.
 *
 *  index_put    y already holds input, x_dim0 rows of `inner` elements.
 *               The index positions are shape[0..index_ndim) (index is
 *               contiguous over them), each selecting row index[j] (negative
 *               counts from the end); shape[index_ndim..ndim) are the row's
 *               dims (their product is inner).  values are read with
 *               v_stride over shape.  accumulate: y[row] += values, a row
 *               selected several times summing all its values in the
 *               compute type (one rounding); otherwise the last write wins.
 *               Returns AMP_ERR_TARGET_OUT_OF_RANGE (writing nothing) for
 *               an index outside [-x_dim0, x_dim0).
 *  index_put_mask  the same with a bool mask over the first mask_ndim dims
 *               of x (x_shape[0..ndim)): every position whose mask is 1 gets
 *               values, read with v_stride over the trailing dims
 *               x_shape[mask_ndim..ndim) (v_stride[0..mask_ndim) unused).
 *  grid_sampler x [N, C, in_size...], grid [N, out_size..., nspatial] (x, y
 *               and z coordinates in [-1, 1], x the last dim of x), y [N, C,
 *               out_size...]; nspatial 2 or 3.  mode 0 bilinear/trilinear,
 *               1 nearest (round half to even); padding 0 zeros, 1 border,
 *               2 reflection; align_corners as PyTorch.
 *  max_unpool   x and indices [planes, in_plane]; y [planes, out_plane] is
 *               zero but y[p, indices[p, i]] = x[p, i] (for equal indices the
 *               last in order wins).  Returns AMP_ERR_TARGET_OUT_OF_RANGE,
 *               writing nothing, for an index outside [0, out_plane).
 */
typedef struct amp_conv_desc {
    int nspatial;
    int64_t batch, in_channels, out_channels, groups;
    int64_t in_size[3], out_size[3], kernel[3];
    int64_t stride[3], padding[3], dilation[3], output_padding[3];
} amp_conv_desc;

/* conv_ex: a convolution with its weights packed once (at model load) and
 * the eval-mode batch_norm, residual add, relu and clamp that follow it
 * fused into its epilogue.
 *
 *  conv_packed_bytes   bytes conv_pack_weights writes for desc d under the
 *                  active kernel set: it depends only on groups, in and out
 *                  channels and the kernel (not on batch or spatial sizes).
 *                  The reference set's layout is the weight tensor itself
 *                  in T (out_channels x in_channels/groups x kernel
 *                  elements); an optimized set's is its GEMM micro-kernel's
 *                  panels behind a 64-byte header, valid only in the process
 *                  (and kernel set) that packed it.
 *  conv_pack_weights   packs w ([out_channels, in_channels/groups,
 *                  kernel...], dtype src: T itself, or f32, which is rounded
 *                  to T element for element exactly as amp_cast_f32_T
 *                  rounds) into packed (conv_packed_bytes bytes, 64-byte
 *                  aligned).
 *  conv_ex         y = post(conv(x, w_T) + bias): exactly (bit for bit) what
 *                  amp_conv_T(d, x, w_T, bias, y), then, when post is not
 *                  NULL, amp_batch_norm_T(batch, out_channels, out_plane, y,
 *                  post->bn_dtype, bn_mean, bn_var, bn_weight, bn_bias,
 *                  bn_eps, y) if bn_mean is not NULL, amp_add_T(n, y,
 *                  residual, y) if residual is not NULL, amp_relu_T(n, y,
 *                  y) if relu and amp_clamp_T(n, y, clamp_lo, clamp_hi, y)
 *                  if clamp, give, on any thread count.  packed != NULL:
 *                  the weights are packed's (from conv_pack_weights_T with
 *                  the same groups, channels and kernel; w_T is the packed
 *                  source rounded to T) and w is ignored (may be NULL);
 *                  packed == NULL: w as amp_conv_T takes it.  residual has
 *                  y's shape and dtype and must not overlap y.  post->raw,
 *                  when not NULL, also receives amp_conv_T's result (y's
 *                  shape and dtype, overlapping neither y nor residual). */
typedef struct amp_conv_post {
    const void *bn_mean, *bn_var;    /* eval-mode batch_norm over the output channels; bn_mean NULL: none */
    const void *bn_weight, *bn_bias; /* either may be NULL (as amp_batch_norm_T) */
    amp_dtype bn_dtype;              /* dtype of those four arrays (f32 in practice) */
    double bn_eps;
    const void *residual;            /* NULL: none; else dtype T, same shape as y: y = y + residual */
    int relu;                        /* nonzero: y = relu(y) */
    void *raw;                       /* NULL: none; else T, y's shape: conv(x, w) + bias before the post-ops
                                      * (what a training step's batch_norm gradient reads) */
    int clamp;                       /* nonzero: y = clamp(y, clamp_lo, clamp_hi) as amp_clamp_T, after the
                                      * relu (relu6 is clamp 0, 6; hardtanh and clamp_min/max likewise) */
    double clamp_lo, clamp_hi;
} amp_conv_post;

typedef struct amp_pool_desc {
    int nspatial;
    int64_t planes; /* N * C */
    int64_t in_size[3], out_size[3], kernel[3];
    int64_t stride[3], padding[3], dilation[3];
    int count_include_pad;
    int64_t divisor_override; /* 0: none */
} amp_pool_desc;

typedef enum { AMP_UPSAMPLE_NEAREST = 0, AMP_UPSAMPLE_LINEAR = 1, AMP_UPSAMPLE_CUBIC = 2 } amp_upsample_mode;

typedef struct amp_upsample_desc {
    int nspatial;
    int64_t planes;
    int64_t in_size[3], out_size[3];
    double scale[3];
    int mode; /* amp_upsample_mode */
    int align_corners;
} amp_upsample_desc;

#define AMP_SPATIAL_OF_CTYPE(X, T, CT)                                                   \
    X(conv, T, void, (const amp_conv_desc *d, const CT *x, const CT *w, const CT *bias, CT *y),  \
      (d, x, w, bias, y))                                                                \
    X(conv_packed_bytes, T, size_t, (const amp_conv_desc *d), (d))                       \
    X(conv_pack_weights, T, void,                                                        \
      (const amp_conv_desc *d, amp_dtype src, const void *w, void *packed),              \
      (d, src, w, packed))                                                               \
    X(conv_ex, T, void,                                                                  \
      (const amp_conv_desc *d, const CT *x, const CT *w, const void *packed, const CT *bias, \
       const amp_conv_post *post, CT *y),                                                \
      (d, x, w, packed, bias, post, y))                                                  \
    X(conv_transpose, T, void,                                                           \
      (const amp_conv_desc *d, const CT *x, const CT *w, const CT *bias, CT *y),         \
      (d, x, w, bias, y))                                                                \
    X(conv_tbc, T, void,                                                                 \
      (int64_t time, int64_t batch, int64_t in, int64_t kernel, int64_t out, int64_t pad, \
       const CT *x, const CT *w, const CT *bias, CT *y),                                 \
      (time, batch, in, kernel, out, pad, x, w, bias, y))                                \
    X(max_pool, T, void, (const amp_pool_desc *d, const CT *x, CT *y, int64_t *indices),  \
      (d, x, y, indices))                                                                \
    X(avg_pool, T, void, (const amp_pool_desc *d, const CT *x, CT *y), (d, x, y))        \
    X(adaptive_avg_pool, T, void,                                                        \
      (int nspatial, int64_t planes, const int64_t *in_size, const int64_t *out_size,    \
       const CT *x, CT *y),                                                              \
      (nspatial, planes, in_size, out_size, x, y))                                       \
    X(adaptive_max_pool, T, void,                                                        \
      (int nspatial, int64_t planes, const int64_t *in_size, const int64_t *out_size,    \
       const CT *x, CT *y, int64_t *indices),                                            \
      (nspatial, planes, in_size, out_size, x, y, indices))                              \
    X(upsample, T, void, (const amp_upsample_desc *d, const CT *x, CT *y), (d, x, y))    \
    X(embedding, T, int,                                                                 \
      (int64_t n_index, int64_t num_embeddings, int64_t dim, const CT *weight,           \
       const int64_t *index, CT *y),                                                     \
      (n_index, num_embeddings, dim, weight, index, y))                                  \
    X(index_select, T, int,                                                              \
      (int64_t outer, int64_t dim_size, int64_t inner, int64_t n_index, const CT *x,     \
       const int64_t *index, CT *y),                                                     \
      (outer, dim_size, inner, n_index, x, index, y))                                    \
    X(index_copy, T, int,                                                                \
      (int64_t outer, int64_t dim_size, int64_t inner, int64_t n_index,                  \
       const int64_t *index, const CT *source, CT *y),                                   \
      (outer, dim_size, inner, n_index, index, source, y))                               \
    X(gather, T, int,                                                                    \
      (int ndim, const int64_t *index_shape, int dim, const CT *x, const int64_t *x_shape, \
       const int64_t *index, CT *y),                                                     \
      (ndim, index_shape, dim, x, x_shape, index, y))                                    \
    X(scatter_add, T, int,                                                               \
      (int ndim, const int64_t *index_shape, int dim, const int64_t *index, const CT *src, \
       const int64_t *y_shape, CT *y),                                                   \
      (ndim, index_shape, dim, index, src, y_shape, y))                                  \
    X(index_put, T, int,                                                                 \
      (int ndim, const int64_t *shape, int index_ndim, const int64_t *index,             \
       int64_t x_dim0, const CT *values, const int64_t *v_stride, int accumulate, CT *y), \
      (ndim, shape, index_ndim, index, x_dim0, values, v_stride, accumulate, y))         \
    X(index_put_mask, T, void,                                                           \
      (int ndim, const int64_t *x_shape, int mask_ndim, const uint8_t *mask,             \
       const CT *values, const int64_t *v_stride, int accumulate, CT *y),                \
      (ndim, x_shape, mask_ndim, mask, values, v_stride, accumulate, y))                 \
    X(grid_sampler, T, void,                                                             \
      (int nspatial, int64_t N, int64_t C, const int64_t *in_size,                       \
       const int64_t *out_size, int mode, int padding, int align_corners, const CT *x,   \
       const CT *grid, CT *y),                                                           \
      (nspatial, N, C, in_size, out_size, mode, padding, align_corners, x, grid, y))     \
    X(max_unpool, T, int,                                                                \
      (int64_t planes, int64_t in_plane, int64_t out_plane, const CT *x,                 \
       const int64_t *indices, CT *y),                                                   \
      (planes, in_plane, out_plane, x, indices, y))
