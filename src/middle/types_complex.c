/* types_complex.c: the type rules of the complex-valued ops.
 *
 * Part of typecheck (the infer_* rules named by ops.def, see types.h) and
 * of autocast (which operand dtype each kernel takes).  c64 and c128 are PyTorch's
 * complex64 and complex128: their own promotion category above the
 * floating types (dtype.c), never eligible for autocast (autocast.c), and
 * taken only by the ops of this file; every other op rejects them here,
 * at the argument, rather than in a kernel that has no complex form.
 *
 * The ops: the 14 torch.fft transforms, stft, polar, view_as_complex,
 * view_as_real, real, imag, abs, angle, conj, linalg_eig and
 * linalg_eigvals.  Their errors are PyTorch 1.13's where it raises, in its
 * words.  Every rule here reads only its arguments' current types, as
 * autocast calls them again after casting.
 *
 * Integer lists: the language has no list literals yet, so an int[]
 * argument (s=, dim= of the n-dimensional transforms) is one int, which
 * PyTorch's int[1] schema type reads as a one-element list.
 */
#include "call_args.h"
#include "types.h"

#include <string.h>

/* PyTorch's names for dtypes in its messages. */
static const char *torch_scalar_name(DType t)
{
    switch (t) {
    case DT_BOOL: return "Bool";
    case DT_I32: return "Int";
    case DT_I64: return "Long";
    case DT_BF16: return "BFloat16";
    case DT_F16: return "Half";
    case DT_F32: return "Float";
    case DT_F64: return "Double";
    case DT_C64: return "ComplexFloat";
    case DT_C128: return "ComplexDouble";
    case DT_NONE: break;
    }
    return "None";
}

bool op_takes_complex(OpId id)
{
    switch (id) {
    case OP_FFT_FFT: case OP_FFT_IFFT: case OP_FFT_FFT2: case OP_FFT_IFFT2: case OP_FFT_FFTN: case OP_FFT_IFFTN:
    case OP_FFT_RFFT: case OP_FFT_IRFFT: case OP_FFT_RFFT2: case OP_FFT_IRFFT2: case OP_FFT_RFFTN:
    case OP_FFT_IRFFTN: case OP_FFT_HFFT: case OP_FFT_IHFFT: case OP_STFT: case OP_POLAR:
    case OP_VIEW_AS_COMPLEX: case OP_VIEW_AS_REAL: case OP_REAL: case OP_IMAG: case OP_ABS: case OP_ANGLE:
    case OP_CONJ: case OP_LINALG_EIG: case OP_LINALG_EIGVALS:
        return true;
    default:
        return false;
    }
}

/* Called before every op's own rule: a complex operand reaching an op
 * without complex kernels is an error at that operand.  PyTorch itself
 * rejects many of these (relu: "clamp is not supported for complex
 * types"); for the rest ampc has no complex kernel. */
bool complex_operands_ok(Ctx *c, Expr *call)
{
    if (op_takes_complex(call->op->id) || call->op->id == OP_CAST)
        return true;
    for (int i = 0; i < call->op->nparams; i++) {
        Expr *a = call->bound[i];
        if (a && dtype_is_complex(a->type.dtype)) {
            error_at(c, a->loc, "%s() does not take complex tensors, but this is %s; take real(), imag(), abs() "
                     "or angle() first (ampc's complex ops are the torch.fft transforms, stft, polar, "
                     "view_as_complex, view_as_real, real, imag, abs, angle, conj, linalg_eig and linalg_eigvals)",
                     call->op->name, type_to_string(c, &a->type));
            return false;
        }
    }
    return true;
}

/* ---- reading arguments ---------------------------------------------------
 * typecheck.c's arg_* readers report a malformed argument and return the
 * default; a change in the error count tells the rule to stop. */

static bool read_int(Ctx *c, Expr *call, const char *name, int64_t dflt, int64_t *out)
{
    int before = c->nerrors;
    *out = arg_int(c, call, name, dflt);
    return c->nerrors == before;
}

static bool read_bool(Ctx *c, Expr *call, const char *name, bool dflt, bool *out)
{
    int before = c->nerrors;
    *out = arg_bool(c, call, name, dflt);
    return c->nerrors == before;
}

static bool read_str(Ctx *c, Expr *call, const char *name, const char *dflt, const char **out)
{
    int before = c->nerrors;
    *out = arg_str(c, call, name, dflt);
    return c->nerrors == before;
}

static Expr *tensor(Ctx *c, Expr *call, int i)
{
    Expr *a = call->bound[i];
    if (a && a->type.dtype != DT_NONE)
        return a;
    if (a)
        error_at(c, a->loc, "argument '%s' of %s() must be a tensor", call->op->params[i].name, call->op->name);
    return NULL;
}

/* dim in [-ndim, ndim) (PyTorch wraps a 0-dim tensor's dims as if it had one). */
static bool wrap_dim(Ctx *c, Expr *call, const char *name, int64_t d, int ndim, int *out)
{
    int n = ndim > 0 ? ndim : 1;
    if (d < -n || d >= n) {
        Expr *e = arg_named(call, name);
        error_at(c, e ? e->loc : call->loc, "Dimension out of range (expected to be in range of [%d, %d], but got %lld)",
                 -n, n - 1, (long long)d);
        return false;
    }
    *out = (int)(d < 0 ? d + n : d);
    return true;
}

static bool known(Ctx *c, Expr *call, const Poly *p, const char *what, int64_t *v)
{
    if (poly_is_const(p, v))
        return true;
    error_at(c, call->loc, "%s(): %s must be known at compile time, but it is %s", call->op->name, what,
             poly_to_c(c, p, c->sym_names));
    return false;
}

/* f32 and f64 (and the complex forms for the ops that take them): PyTorch's
 * CPU kernels have no f16/bf16 form.  Inside an enabled autocast region the
 * check waits for autocast, whose fp32 rows cast half inputs first. */
static bool precision_ok(Ctx *c, Expr *call, Expr *x, const char *fmt)
{
    DType t = dtype_to_real(x->type.dtype);
    if (t != DT_BF16 && t != DT_F16)
        return true;
    if (call->autocast_on && !c->autocast_ran)
        return true;
    error_at(c, x->loc, arena_printf(c->arena, "%s (PyTorch's CPU kernel takes f32 and f64: cast it, or use "
                                          "autocast on cpu, whose fp32 list casts it)", fmt),
             torch_scalar_name(x->type.dtype));
    return false;
}

/* ---- torch.fft -------------------------------------------------------------- */

FftKind fft_kind(OpId id)
{
    switch (id) {
    case OP_FFT_RFFT: case OP_FFT_RFFT2: case OP_FFT_RFFTN: case OP_FFT_IHFFT:
        return FFT_R2C;
    case OP_FFT_IRFFT: case OP_FFT_IRFFT2: case OP_FFT_IRFFTN: case OP_FFT_HFFT:
        return FFT_C2R;
    default:
        return FFT_C2C;
    }
}

static bool fft_one_dim(OpId id)
{
    return id == OP_FFT_FFT || id == OP_FFT_IFFT || id == OP_FFT_RFFT || id == OP_FFT_IRFFT || id == OP_FFT_HFFT ||
           id == OP_FFT_IHFFT;
}

static bool fft_two_dim(OpId id)
{
    return id == OP_FFT_FFT2 || id == OP_FFT_IFFT2 || id == OP_FFT_RFFT2 || id == OP_FFT_IRFFT2;
}

int fft_norm_code(const char *s)
{
    if (strcmp(s, "backward") == 0)
        return 0;
    if (strcmp(s, "ortho") == 0)
        return 1;
    if (strcmp(s, "forward") == 0)
        return 2;
    return -1;
}

/* The transformed dims of a torch.fft call, in order, and the length n of
 * each (-1: the input's own, or 2*(m-1) for the last dim of a c2r
 * transform).  Returns the count, or -1 after an error. */
int fft_plan_dims(Ctx *c, Expr *call, int ndim, int *dims, int64_t *lens)
{
    OpId id = call->op->id;
    if (fft_one_dim(id)) {
        int64_t n, d;
        if (!read_int(c, call, "n", -1, &n) || !read_int(c, call, "dim", -1, &d) ||
            !wrap_dim(c, call, "dim", d, ndim, &dims[0]))
            return -1;
        if (arg_named(call, "n") && n < 1) {
            error_at(c, arg_named(call, "n")->loc, "Invalid number of data points (%lld) specified", (long long)n);
            return -1;
        }
        lens[0] = arg_named(call, "n") ? n : -1;
        return 1;
    }
    /* s and dim: one int (a one-element list, PyTorch's int[1]) or a list */
    Expr *s_arg = arg_named(call, "s"), *dim_arg = arg_named(call, "dim");
    int64_t s[MAX_DIMS], d[MAX_DIMS];
    int ns = int_list_param(c, call, "s", s, MAX_DIMS), nd = int_list_param(c, call, "dim", d, MAX_DIMS);
    if (ns < 0 || nd < 0)
        return -1;
    int count;
    if (dim_arg) {
        count = nd;
        for (int i = 0; i < nd; i++)
            if (!wrap_dim(c, call, "dim", d[i], ndim, &dims[i]))
                return -1;
    } else if (fft_two_dim(id)) {
        count = 2;
        if (ndim < 2) {
            error_at(c, call->bound[0]->loc, "Dimension out of range (expected to be in range of [%d, %d], but got -2)",
                     -(ndim > 0 ? ndim : 1), (ndim > 0 ? ndim : 1) - 1);
            return -1;
        }
        dims[0] = ndim - 2;
        dims[1] = ndim - 1;
    } else if (s_arg) {
        count = ns; /* s alone: the last len(s) dims */
        if (ns > ndim) {
            error_at(c, s_arg->loc, "Got shape with %d values but input tensor only has %d dimensions.", ns, ndim);
            return -1;
        }
        for (int i = 0; i < ns; i++)
            dims[i] = ndim - ns + i;
    } else {
        count = ndim > 0 ? ndim : 1;
        for (int i = 0; i < count; i++)
            dims[i] = i;
    }
    if (s_arg && count != ns) {
        error_at(c, s_arg->loc, "When given, dim and shape arguments must have the same length");
        return -1;
    }
    for (int i = 0; i < count; i++) {
        lens[i] = s_arg ? s[i] : -1;
        if (s_arg && s[i] < 1 && s[i] != -1) {
            error_at(c, s_arg->loc, "Invalid number of data points (%lld) specified", (long long)s[i]);
            return -1;
        }
    }
    return count;
}

bool infer_fft(Ctx *c, Expr *call)
{
    Expr *x = tensor(c, call, 0);
    if (!x)
        return false;
    OpId id = call->op->id;
    FftKind kind = fft_kind(id);
    DType t = x->type.dtype;
    if (kind == FFT_R2C && dtype_is_complex(t)) {
        bool n_dim = id == OP_FFT_RFFT2 || id == OP_FFT_RFFTN;
        error_at(c, x->loc, n_dim ? "rfftn expects a real-valued input tensor, but got %s"
                                  : "%s expects a real input tensor, but got %s",
                 n_dim ? torch_scalar_name(t) : call->op->name + 4, torch_scalar_name(t));
        return false;
    }
    if (!precision_ok(c, call, x, "Unsupported dtype %s"))
        return false;
    const char *norm;
    if (!read_str(c, call, "norm", "backward", &norm))
        return false;
    if (fft_norm_code(norm) < 0) {
        error_at(c, arg_named(call, "norm")->loc, "Invalid normalization mode: \"%s\"", norm);
        return false;
    }
    const Shape *xs = &x->type.shape;
    int dims[MAX_DIMS];
    int64_t lens[MAX_DIMS];
    int count = fft_plan_dims(c, call, xs->ndim, dims, lens);
    if (count < 0)
        return false;
    for (int i = 0; i < count; i++)
        for (int j = 0; j < i; j++)
            if (dims[i] == dims[j]) {
                error_at(c, call->loc, "FFT dims must be unique");
                return false;
            }
    /* integer and bool inputs compute in the default float, as PyTorch's */
    DType real = dtype_is_float(t) || dtype_is_complex(t) ? dtype_to_real(t) : DT_F32;
    if (real == DT_BF16 || real == DT_F16)
        real = DT_F32; /* only before autocast has cast it (precision_ok) */
    Type r = {.dtype = kind == FFT_C2R ? real : dtype_to_complex(real), .shape = *xs};
    if (xs->ndim == 0) {
        error_at(c, x->loc, "%s() needs at least one dimension to transform, but this is %s", call->op->name,
                 type_to_string(c, &x->type));
        return false;
    }
    for (int i = 0; i < count; i++) {
        bool last = i == count - 1;
        Poly *m = xs->dims[dims[i]];
        Poly *n = lens[i] > 0 ? poly_const(c, lens[i]) : m;
        if (last && kind == FFT_C2R && lens[i] < 0) {
            /* the default length of a c2r transform: 2*(m-1) */
            n = poly_mul(c, poly_sub(c, m, poly_const(c, 1)), poly_const(c, 2));
            int64_t v;
            if (n && poly_is_const(n, &v) && v < 1) {
                error_at(c, call->loc, "Invalid number of data points (%lld) specified", (long long)v);
                return false;
            }
        }
        if (last && kind == FFT_R2C) {
            int64_t v;
            if (!known(c, call, n, "the length of the last transformed dim", &v))
                return false;
            n = poly_const(c, v / 2 + 1);
        }
        if (!n) {
            error_at(c, call->loc, "%s(): the output length overflows 64-bit integers", call->op->name);
            return false;
        }
        r.shape.dims[dims[i]] = n;
    }
    call->type = r;
    return true;
}

/* ---- stft ------------------------------------------------------------------- */

int stft_pad_mode_code(const char *s)
{
    static const char *const modes[] = {"constant", "reflect", "replicate", "circular"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, modes[i]) == 0)
            return i;
    return -1;
}

/* The lengths of one stft call, checked: n_fft, hop, win_length, the
 * signal's length after centring, and whether the result is one-sided. */
bool stft_params(Ctx *c, Expr *call, int64_t *n_fft, int64_t *hop, int64_t *win, int64_t *padded, bool *onesided)
{
    Expr *x = call->bound[0];
    const Shape *xs = &x->type.shape;
    int64_t len;
    bool center;
    const char *pad_mode;
    if (!read_int(c, call, "n_fft", 0, n_fft) || !read_bool(c, call, "center", true, &center) ||
        !read_str(c, call, "pad_mode", "reflect", &pad_mode) || !read_bool(c, call, "onesided", true, onesided))
        return false;
    if (xs->ndim != 1 && xs->ndim != 2) {
        error_at(c, x->loc, "stft: expected a 1D or 2D tensor, but this is %s", type_to_string(c, &x->type));
        return false;
    }
    if (!known(c, call, xs->dims[xs->ndim - 1], "the signal's length", &len))
        return false;
    if (!read_int(c, call, "hop_length", *n_fft / 4, hop) || !read_int(c, call, "win_length", *n_fft, win))
        return false;
    if (stft_pad_mode_code(pad_mode) < 0) {
        error_at(c, arg_named(call, "pad_mode")->loc, "stft: pad_mode takes \"constant\", \"reflect\", \"replicate\" "
                 "or \"circular\", not \"%s\"", pad_mode);
        return false;
    }
    *padded = len;
    if (center) {
        int64_t pad = *n_fft / 2;
        if (stft_pad_mode_code(pad_mode) == 1 && pad >= len && *n_fft > 0) {
            error_at(c, call->loc, "Argument #4: Padding size should be less than the corresponding input dimension, "
                     "but got: padding (%lld, %lld) at dimension %d of input %s", (long long)pad, (long long)pad,
                     xs->ndim, shape_to_string(c, xs, c->sym_names));
            return false;
        }
        *padded = len + 2 * pad;
    }
    if (*n_fft <= 0 || *n_fft > *padded) {
        error_at(c, call->loc, "stft: expected 0 < n_fft < %lld, but got n_fft=%lld", (long long)*padded,
                 (long long)*n_fft);
        return false;
    }
    if (*hop <= 0) {
        error_at(c, call->loc, "stft: expected hop_length > 0, but got hop_length=%lld", (long long)*hop);
        return false;
    }
    if (*win <= 0 || *win > *n_fft) {
        error_at(c, call->loc, "stft: expected 0 < win_length <= n_fft, but got win_length=%lld", (long long)*win);
        return false;
    }
    return true;
}

bool infer_stft(Ctx *c, Expr *call)
{
    Expr *x = tensor(c, call, 0);
    if (!x)
        return false;
    DType t = x->type.dtype;
    if (dtype_is_complex(t)) {
        error_at(c, x->loc, "stft(): ampc transforms real signals only, but this is %s", type_to_string(c, &x->type));
        return false;
    }
    if (!dtype_is_float(t)) {
        /* the centring pad is PyTorch's reflection_pad1d, which has no integer form */
        error_at(c, x->loc, "\"reflection_pad1d\" not implemented for '%s'", torch_scalar_name(t));
        return false;
    }
    if (!precision_ok(c, call, x, "stft: \"fft_r2c\" is not implemented for '%s'"))
        return false;
    Expr *rc = arg_named(call, "return_complex");
    bool ret_complex;
    if (!read_bool(c, call, "return_complex", false, &ret_complex))
        return false;
    if (!rc || !ret_complex) {
        error_at(c, rc ? rc->loc : call->loc, "stft requires return_complex=true: ampc gives the complex result only "
                 "(PyTorch deprecates the real form; view_as_real() gives its layout)");
        return false;
    }
    int64_t n_fft, hop, win, padded;
    bool onesided;
    if (!stft_params(c, call, &n_fft, &hop, &win, &padded, &onesided))
        return false;
    Expr *w = call->bound[op_param_index(call->op, "window")];
    if (w) {
        int64_t wl;
        if (w->type.dtype == DT_NONE || w->type.shape.ndim != 1 || !poly_is_const(w->type.shape.dims[0], &wl) ||
            wl != win) {
            error_at(c, w->loc, "stft: expected a 1D window tensor of size equal to win_length=%lld, but got %s",
                     (long long)win, w->type.dtype == DT_NONE ? "a non-tensor" : type_to_string(c, &w->type));
            return false;
        }
        if (w->type.dtype != t && !(call->autocast_on && !c->autocast_ran)) {
            error_at(c, w->loc, "stft: expected the window to have the input's dtype %s, but it is %s", dtype_name(t),
                     dtype_name(w->type.dtype));
            return false;
        }
    }
    DType real = dtype_to_real(t) == DT_F64 ? DT_F64 : DT_F32;
    Type r = {.dtype = dtype_to_complex(real)};
    if (x->type.shape.ndim == 2)
        r.shape.dims[r.shape.ndim++] = x->type.shape.dims[0];
    r.shape.dims[r.shape.ndim++] = poly_const(c, onesided ? n_fft / 2 + 1 : n_fft);
    r.shape.dims[r.shape.ndim++] = poly_const(c, 1 + (padded - n_fft) / hop);
    call->type = r;
    return true;
}

/* ---- polar, view_as_complex, view_as_real, real, imag, abs, angle, conj ---- */

bool infer_polar(Ctx *c, Expr *call)
{
    Expr *a = tensor(c, call, 0), *b = a ? tensor(c, call, 1) : NULL;
    if (!a || !b)
        return false;
    DType ta = a->type.dtype, tb = b->type.dtype;
    bool deferred = call->autocast_on && !c->autocast_ran;
    if (!(dtype_is_float(ta) && dtype_is_float(tb))) {
        error_at(c, call->loc, "Expected both inputs to be Half, Float or Double tensors but got %s and %s",
                 torch_scalar_name(ta), torch_scalar_name(tb));
        return false;
    }
    if (ta != tb && !deferred) {
        error_at(c, b->loc, "Expected object of scalar type %s but got scalar type %s for second argument",
                 torch_scalar_name(ta), torch_scalar_name(tb));
        return false;
    }
    if (!precision_ok(c, call, a, "\"polar_cpu\" not implemented for '%s'"))
        return false;
    Shape s;
    if (!broadcast_shapes(c, call, &a->type.shape, &b->type.shape, &s))
        return false;
    call->type.shape = s;
    call->type.dtype = dtype_to_complex(dtype_promote(ta, tb) == DT_F64 ? DT_F64 : DT_F32);
    return true;
}

bool infer_complex_view(Ctx *c, Expr *call)
{
    Expr *x = tensor(c, call, 0);
    if (!x)
        return false;
    DType t = x->type.dtype;
    const Shape *xs = &x->type.shape;
    if (call->op->id == OP_VIEW_AS_COMPLEX) {
        if (t != DT_F32 && t != DT_F64 && !((t == DT_BF16 || t == DT_F16) && call->autocast_on && !c->autocast_ran)) {
            error_at(c, x->loc, t == DT_F16 ? "view_as_complex(): a Half tensor gives complex32, which ampc does "
                                              "not have; cast it to f32 first"
                                            : "view_as_complex is only supported for float and double tensors, but "
                                              "got a tensor of scalar type: %s", torch_scalar_name(t));
            return false;
        }
        int64_t two;
        if (xs->ndim == 0) {
            error_at(c, x->loc, "Input tensor must have one or more dimensions");
            return false;
        }
        if (!poly_is_const(xs->dims[xs->ndim - 1], &two) || two != 2) {
            error_at(c, x->loc, "Tensor must have a last dimension of size 2, but this is %s",
                     type_to_string(c, &x->type));
            return false;
        }
        call->type.dtype = dtype_to_complex(t == DT_F64 ? DT_F64 : DT_F32);
        call->type.shape = *xs;
        call->type.shape.ndim--;
        return true;
    }
    /* view_as_real */
    if (!dtype_is_complex(t)) {
        error_at(c, x->loc, "view_as_real is only supported for complex tensors, but this is %s",
                 type_to_string(c, &x->type));
        return false;
    }
    if (xs->ndim == MAX_DIMS) {
        error_at(c, call->loc, "a tensor can have at most %d dimensions", MAX_DIMS);
        return false;
    }
    call->type.dtype = dtype_to_real(t);
    call->type.shape = *xs;
    call->type.shape.dims[call->type.shape.ndim++] = poly_const(c, 2);
    return true;
}

/* real, imag, abs, angle, conj: elementwise; complex in, its real dtype
 * out (conj stays complex).  Real inputs follow PyTorch: real and conj
 * return them, imag raises, abs keeps the dtype, angle gives the default
 * float for integers. */
bool infer_complex_part(Ctx *c, Expr *call)
{
    Expr *x = tensor(c, call, 0);
    if (!x)
        return false;
    DType t = x->type.dtype;
    OpId id = call->op->id;
    call->type.shape = x->type.shape;
    if (dtype_is_complex(t)) {
        call->type.dtype = id == OP_CONJ ? t : dtype_to_real(t);
        return true;
    }
    switch (id) {
    case OP_IMAG:
        error_at(c, x->loc, "imag is not implemented for tensors with non-complex dtypes (this is %s)",
                 type_to_string(c, &x->type));
        return false;
    case OP_ABS:
        if (t == DT_BOOL) {
            error_at(c, x->loc, "\"abs_cpu\" not implemented for 'Bool'");
            return false;
        }
        call->type.dtype = t;
        return true;
    case OP_ANGLE:
        call->type.dtype = dtype_is_float(t) ? t : DT_F32;
        return true;
    default: /* real, conj: the tensor itself */
        call->type.dtype = t;
        return true;
    }
}

/* ---- linalg.eig and linalg.eigvals -------------------------------------------- */

bool infer_linalg_eig(Ctx *c, Expr *call)
{
    Expr *x = tensor(c, call, 0);
    if (!x)
        return false;
    DType t = x->type.dtype;
    const char *name = call->op->id == OP_LINALG_EIG ? "linalg.eig" : "linalg.eigvals";
    if (dtype_is_complex(t)) {
        error_at(c, x->loc, "%s(): ampc's kernel takes real matrices only, but this is %s", call->op->name,
                 type_to_string(c, &x->type));
        return false;
    }
    if (!dtype_is_float(t)) {
        error_at(c, x->loc, "%s: Expected a floating point or complex tensor as input. Got %s", name,
                 torch_scalar_name(t));
        return false;
    }
    if (!precision_ok(c, call, x, "\"linalg_eig_out_cpu\" not implemented for '%s'"))
        return false;
    const Shape *xs = &x->type.shape;
    if (xs->ndim < 2) {
        error_at(c, x->loc, "%s: The input tensor A must have at least 2 dimensions.", name);
        return false;
    }
    Poly *m = xs->dims[xs->ndim - 2], *n = xs->dims[xs->ndim - 1];
    if (!poly_equal(m, n)) {
        error_at(c, x->loc, "%s: A must be batches of square matrices, but they are %s by %s matrices", name,
                 poly_to_c(c, m, c->sym_names), poly_to_c(c, n, c->sym_names));
        return false;
    }
    DType ct = dtype_to_complex(t == DT_F64 ? DT_F64 : DT_F32);
    Type values = {.dtype = ct, .shape = *xs};
    values.shape.ndim--;
    call->type = values;
    if (call->op->id == OP_LINALG_EIG) {
        Type vectors = {.dtype = ct, .shape = *xs};
        call->more_types = arena_alloc(c->arena, sizeof(Type));
        call->more_types[0] = vectors;
        call->nmore = 1;
    }
    return true;
}

/* ---- autocast: the dtype each operand is given to the kernel in ------------
 * A kernel here computes at the precision of its result (f32 for c64 and
 * f32 results, f64 for c128 and f64); each operand keeps its kind, real or
 * complex, at that precision, so a real input to fft_fft stays real (the
 * kernel reads it as real) and an integer one becomes f32. */
DType complex_operand_dtype(const Expr *call, int i, DType result)
{
    const Expr *a = call->bound[i];
    if (!op_takes_complex(call->op->id) || !a)
        return result;
    DType precision = dtype_to_real(result);
    if (call->op->id == OP_ABS || call->op->id == OP_REAL || call->op->id == OP_CONJ || call->op->id == OP_ANGLE) {
        /* on real inputs these keep the input's own dtype (abs of an i64 is an i64) */
        if (!dtype_is_complex(a->type.dtype))
            return call->op->id == OP_ANGLE ? result : a->type.dtype;
    }
    return dtype_is_complex(a->type.dtype) ? dtype_to_complex(precision) : precision;
}
