/* emit_complex.c: the kernel calls of the complex ops (amprt/complex.h).
 *
 * The emitter of the complex family (types_complex.c), named by its ops'
 * rows in ops.def.  The kernels are named by the precision's complex dtype (amp_fft_c64 takes
 * f32 reals and amp_c64 values; amp_*_c128 f64 and amp_c128), except the
 * angle of a real tensor, which is amp_angle_<T>, and the parts of real
 * tensors (real, conj: the tensor itself; abs: amp_abs_<T>).  Each fills
 * its kernel's arguments from the node's proven shapes and the call's
 * arguments, which typecheck validated; their work arrays are the nodes'
 * scratch, sized by scratch.c.
 */
#include "emit.h"

#include <amprt.h>

/* the kernel family of a value's precision: c64 for f32 and c64, c128 for f64 and c128 */
static DType family(DType t) { return dtype_to_complex(dtype_to_real(t)); }

/* ---- the calls ------------------------------------------------------------------ */

static const char *work_of(Emitter *e, Node *n)
{
    return n->scratch ? arena_printf(e->c->arena, "((double *)(void *)%s)", e->cname[n->scratch->id]) : "NULL";
}

static void emit_fft(Emitter *e, Node *n, const char *y)
{
    Ctx *c = e->c;
    const Shape *si = in_shape(n, 0), *so = out_shape(n);
    int dims[MAX_DIMS];
    Poly *lens[MAX_DIMS];
    int count = fft_dims(c, n, dims, lens);
    FftKind kind = fft_kind(n->op->id);
    OpId id = n->op->id;
    /* inverse: the + sign and the inverse's scale (ihfft is an inverse r2c, hfft a forward c2r) */
    bool inverse = id == OP_FFT_IFFT || id == OP_FFT_IFFT2 || id == OP_FFT_IFFTN || id == OP_FFT_IRFFT ||
                   id == OP_FFT_IRFFT2 || id == OP_FFT_IRFFTN || id == OP_FFT_IHFFT;
    const char *dim_items[MAX_DIMS], *len_items[MAX_DIMS];
    for (int i = 0; i < count; i++) {
        dim_items[i] = arena_printf(c->arena, "%d", dims[i]);
        len_items[i] = poly_c(e, lens[i]);
    }
    DType t = n->out->type.dtype;
    open_block(e);
    buf_printf(e->out, "        const int dims[] = %s;\n", c_array(e, dim_items, count));
    buf_printf(e->out, "        const int64_t in_shape[] = %s, out_shape[] = %s, lens[] = %s;\n", shape_array(e, si),
               shape_array(e, so), c_array(e, len_items, count));
    buf_printf(e->out, "        const amp_fft_desc d = {\n"
                       "            .ndim = %d, .in_shape = in_shape, .out_shape = out_shape,\n"
                       "            .ndims = %d, .dims = dims, .lens = lens,\n"
                       "            .kind = %s, .inverse = %d, .norm = %s, .in_real = %d,\n        };\n",
               si->ndim, count, kind == FFT_C2C ? "AMP_FFT_C2C" : kind == FFT_R2C ? "AMP_FFT_R2C" : "AMP_FFT_C2R",
               inverse, fft_norm_code(attr_str(n, "norm", "backward")) == 1   ? "AMP_FFT_NORM_ORTHO"
                        : fft_norm_code(attr_str(n, "norm", "backward")) == 2 ? "AMP_FFT_NORM_FORWARD"
                                                                                     : "AMP_FFT_NORM_BACKWARD",
               !dtype_is_complex(in_dtype(n, 0)));
    buf_printf(e->out, "        %s(&d, %s, %s, %s);\n", kernel(e, "fft", family(t)), in_c(e, n, 0), y, work_of(e, n));
    close_block(e);
}

static void emit_stft(Emitter *e, Node *n, const char *y)
{
    /* the frames lowering worked out (stft_params) */
    int64_t n_fft = attr_int(n, "n_fft", 0), hop = attr_int(n, "frame_hop", 0), win = attr_int(n, "frame_len", 0);
    bool onesided = attr_bool(n, "onesided", true);
    const Shape *si = in_shape(n, 0);
    int w = op_param_index(n->op, "window");
    buf_printf(e->out, "    %s(%s, %s, %s, %s, %s, %s, %d, %d, %d, %d, %s, %s, %s);\n", kernel(e, "stft", n->out->type.dtype),
               si->ndim == 2 ? poly_c(e, si->dims[0]) : "1", poly_c(e, si->dims[si->ndim - 1]), i64_c(e, n_fft),
               i64_c(e, hop), i64_c(e, win), in_c(e, n, w), attr_bool(n, "center", true),
               stft_pad_mode_code(attr_str(n, "pad_mode", "reflect")), attr_bool(n, "normalized", false),
               onesided, in_c(e, n, 0), y, work_of(e, n));
}

static void emit_eig(Emitter *e, Node *n, const char *y)
{
    const Shape *si = in_shape(n, 0);
    const char *vectors = n->op->id == OP_LINALG_EIG && n->nmore ? e->cname[n->more_out[0]->id] : "NULL";
    e->uses_rc = true;
    emit_checked(e, "    ", arena_printf(e->c->arena, "%s(%s, %s, %s, %s, %s, %s)", kernel(e, "eig", n->out->type.dtype),
                                         dims_product(e, si, 0, si->ndim - 2), poly_c(e, si->dims[si->ndim - 1]),
                                         in_c(e, n, 0), y, vectors, work_of(e, n)));
}

void emit_complex(Emitter *e, Node *n, const char *y)
{
    OpId id = n->op->id;
    DType t = n->out->type.dtype, x = in_dtype(n, 0);
    const char *count = numel_c(e, out_shape(n));
    switch (id) {
    case OP_FFT_FFT: case OP_FFT_IFFT: case OP_FFT_FFT2: case OP_FFT_IFFT2: case OP_FFT_FFTN: case OP_FFT_IFFTN:
    case OP_FFT_RFFT: case OP_FFT_IRFFT: case OP_FFT_RFFT2: case OP_FFT_IRFFT2: case OP_FFT_RFFTN:
    case OP_FFT_IRFFTN: case OP_FFT_HFFT: case OP_FFT_IHFFT:
        emit_fft(e, n, y);
        return;
    case OP_STFT:
        emit_stft(e, n, y);
        return;
    case OP_LINALG_EIG: case OP_LINALG_EIGVALS:
        emit_eig(e, n, y);
        return;
    case OP_POLAR: {
        const Shape *so = out_shape(n);
        open_block(e);
        buf_printf(e->out, "        const int64_t shape[] = %s, abs_stride[] = %s, angle_stride[] = %s;\n",
                   shape_array(e, so), bcast_array(e, in_shape(n, 0), so), bcast_array(e, in_shape(n, 1), so));
        buf_printf(e->out, "        %s(%d, shape, %s, abs_stride, %s, angle_stride, %s);\n", kernel(e, "polar", t),
                   so->ndim, in_c(e, n, 0), in_c(e, n, 1), y);
        close_block(e);
        return;
    }
    case OP_VIEW_AS_COMPLEX:
        buf_printf(e->out, "    %s((size_t)(%s), %s, %s);\n", kernel(e, "view_as_complex", t), count, in_c(e, n, 0), y);
        return;
    case OP_VIEW_AS_REAL:
        buf_printf(e->out, "    %s((size_t)(%s), %s, %s);\n", kernel(e, "view_as_real", x), numel_c(e, in_shape(n, 0)),
                   in_c(e, n, 0), y);
        return;
    default:
        break;
    }
    /* real, imag, abs, angle, conj */
    if (dtype_is_complex(x)) {
        buf_printf(e->out, "    %s((size_t)(%s), %s, %s);\n", kernel(e, n->op->name, x), count, in_c(e, n, 0), y);
        return;
    }
    bool float_kernel = t == DT_F64 || t == DT_F32 || t == DT_BF16 || t == DT_F16;
    if (id == OP_REAL || id == OP_CONJ) {
        /* of a real tensor: the tensor itself */
        buf_printf(e->out, "    memcpy(%s, %s, (size_t)(%s) * sizeof *%s);\n", y, in_c(e, n, 0), count, y);
        return;
    }
    if (!float_kernel || x != t) {
        unsupported(e, n, arena_printf(e->c->arena, "no runtime kernel for %s of %s tensors", n->op->name,
                                       dtype_name(x)));
        return;
    }
    buf_printf(e->out, "    %s((size_t)(%s), %s, %s);\n", kernel(e, n->op->name, t), count, in_c(e, n, 0), y);
}
