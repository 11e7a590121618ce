/* types.h: the type rules' own header, private to typecheck.c and the
 * types_*.c files (one per op family).
 *
 * Each rule, infer_<name>, is named in the infer column of its ops.def row
 * and called through typecheck.c's type_rules table: by typecheck, and
 * again by autocast after it wraps arguments in casts, so a rule looks
 * only at its arguments' current types.  It checks what PyTorch checks
 * before it runs (shapes, dtypes, argument ranges), with PyTorch's words
 * where they are clear, reports each failure with error_at and returns
 * false, and on success sets call->type (and more_types for further
 * results).  Dtype mismatches that autocast may still resolve are left to
 * it inside an enabled region (same_dtype and mixed_ok).  Integer
 * arguments are literals (a block's int parameters arrive as literals from
 * expand.c); int[] arguments take one int for all their entries, until the
 * language has list literals.
 */
#ifndef AMPC_TYPES_H
#define AMPC_TYPES_H

#include "middle.h"

static inline Expr *arg(Expr *call, int i) { return call->bound[i]; }
static inline bool is_tensor(Expr *e) { return e && e->type.dtype != DT_NONE; }
static inline bool dims_match(const Poly *a, const Poly *b) { return poly_equal(a, b); }
static inline bool const_dim(const Poly *p, int64_t *v) { return poly_is_const(p, v); }
static inline const char *dim_str(Ctx *c, const Poly *p) { return poly_to_c(c, p, c->sym_names); }
static inline const char *shape_str(Ctx *c, const Shape *s) { return shape_to_string(c, s, c->sym_names); }

/* typecheck.c: literals, promotion and broadcasting */
bool int_arg(Ctx *c, Expr *e, int64_t *out);
/* an integer literal, or a dimension of the model (a size argument) */
bool size_arg(Ctx *c, Expr *e, Poly **out);
DType promote_with_scalar(DType t, bool scalar_is_float);
DType promote_tensors(const Type *a, const Type *b);
bool broadcast(Ctx *c, Expr *call, const Shape *a, const Shape *b, Shape *out);

/* types_common.c: reading arguments (an argument left out reads as dflt) */
Expr *named(Expr *call, const char *name);
bool int_param(Ctx *c, Expr *call, const char *name, int64_t dflt, int64_t *out);
/* A convolution's or pool's int[] window parameter, one value per spatial
 * dim (ns of them): an int for every dim, or a list of ns (dflt[i]
 * where not written). */
bool spatial_param(Ctx *c, Expr *call, const char *name, const int64_t *dflt, int ns, int64_t *out);
bool bool_param(Ctx *c, Expr *call, const char *name, bool dflt, bool *out);
bool number_value(Ctx *c, Expr *e, double *out);
bool float_param(Ctx *c, Expr *call, const char *name, double dflt, double *out);
bool str_param(Ctx *c, Expr *call, const char *name, const char *dflt, const char **out);
int int_varargs(Ctx *c, Expr *call, const char *name, int64_t *out, Expr **where, bool *ok);
/* int_varargs of sizes: literals or dimensions of the model (size_arg) */
int size_varargs(Ctx *c, Expr *call, const char *name, Poly **out, Expr **where, bool *ok);
bool normalise_dim(Ctx *c, Expr *e, int ndim, int64_t *dim);
int int_list_param(Ctx *c, Expr *call, const char *name, int64_t *out, int max);
bool reduce_dims(Ctx *c, Expr *call, Expr *d, int ndim, int64_t *dim);
/* checking operands */
bool is_number(Expr *e);
bool require_tensor(Ctx *c, Expr *call, int i);
bool tensor_arg(Ctx *c, Expr *call, const char *name, Expr **out);
bool require_float(Ctx *c, Expr *call, Expr *a);
bool not_bool(Ctx *c, Expr *call, Expr *x);
bool same_dtype(Ctx *c, Expr *call, Expr *a, Expr *b);
bool per_channel(Ctx *c, Expr *call, Expr *p, const Poly *channels);
bool broadcasts_to(Ctx *c, Expr *call, Expr *e, const Shape *to, const char *what);
/* result shapes */
Shape reduced(Ctx *c, const Shape *s, int64_t d, bool keepdim);
Shape reduction_shape(Ctx *c, Expr *call, const Shape *s, int64_t dim, bool keepdim);
Shape leading(const Shape *s, int k);
bool push_dim(Ctx *c, Expr *call, Shape *s, Poly *d);
Poly *affine(Ctx *c, Expr *call, const Poly *a, int64_t k, int64_t off);
void more_results(Ctx *c, Expr *call, int n, const Type *types);

/* The rules, by family. */
/* types_elementwise.c */
bool infer_cast(Ctx *c, Expr *call);
bool infer_unary(Ctx *c, Expr *call);
bool infer_binary(Ctx *c, Expr *call);
bool infer_float_unary(Ctx *c, Expr *call);
bool infer_rounding(Ctx *c, Expr *call);
bool infer_activation(Ctx *c, Expr *call);
bool infer_prelu(Ctx *c, Expr *call);
bool infer_clamp(Ctx *c, Expr *call);
bool infer_pow(Ctx *c, Expr *call);
bool infer_maximum(Ctx *c, Expr *call);
bool infer_remainder(Ctx *c, Expr *call);
bool infer_glu(Ctx *c, Expr *call);
bool infer_lerp(Ctx *c, Expr *call);
bool infer_where(Ctx *c, Expr *call);
bool infer_masked_fill(Ctx *c, Expr *call);
bool infer_addc(Ctx *c, Expr *call);
bool infer_dropout(Ctx *c, Expr *call);
/* types_construct.c */
bool infer_construct(Ctx *c, Expr *call);
bool infer_arange(Ctx *c, Expr *call);
bool infer_linspace(Ctx *c, Expr *call);
bool infer_one_hot(Ctx *c, Expr *call);
bool infer_tri(Ctx *c, Expr *call);
/* types_rearrange.c */
bool infer_select(Ctx *c, Expr *call);
bool infer_flip(Ctx *c, Expr *call);
bool infer_roll(Ctx *c, Expr *call);
bool infer_repeat(Ctx *c, Expr *call);
bool infer_pixel_shuffle(Ctx *c, Expr *call);
/* types_reduce.c */
bool infer_reduce(Ctx *c, Expr *call);
bool infer_trace(Ctx *c, Expr *call);
bool infer_softmax(Ctx *c, Expr *call);
bool infer_sort(Ctx *c, Expr *call);
bool infer_quantile(Ctx *c, Expr *call);
bool infer_index_reduce(Ctx *c, Expr *call);
bool infer_variance(Ctx *c, Expr *call);
bool infer_norm_reduce(Ctx *c, Expr *call);
/* types_norm.c */
bool infer_norm(Ctx *c, Expr *call);
bool infer_local_response_norm(Ctx *c, Expr *call);
/* types_loss.c */
bool infer_nll_loss(Ctx *c, Expr *call);
bool infer_cross_entropy(Ctx *c, Expr *call);
bool infer_class_loss(Ctx *c, Expr *call);
bool infer_pointwise_loss(Ctx *c, Expr *call);
bool infer_pair_loss(Ctx *c, Expr *call);
bool infer_ctc_loss(Ctx *c, Expr *call);
/* types_spatial.c */
bool infer_conv(Ctx *c, Expr *call);
bool infer_conv_tbc(Ctx *c, Expr *call);
bool infer_pool(Ctx *c, Expr *call);
bool infer_max_unpool(Ctx *c, Expr *call);
bool infer_upsample(Ctx *c, Expr *call);
bool infer_pad(Ctx *c, Expr *call);
bool infer_grid_sampler(Ctx *c, Expr *call); /* through infer_index_put */
/* types_shape.c */
bool infer_flatten(Ctx *c, Expr *call);
bool infer_reshape(Ctx *c, Expr *call);
bool infer_permute(Ctx *c, Expr *call);
bool infer_squeeze(Ctx *c, Expr *call);
bool infer_expand(Ctx *c, Expr *call);
bool infer_cat(Ctx *c, Expr *call);
bool infer_narrow(Ctx *c, Expr *call);
bool infer_embedding(Ctx *c, Expr *call);
bool infer_gather(Ctx *c, Expr *call);
bool infer_index_copy(Ctx *c, Expr *call);
bool infer_index_put(Ctx *c, Expr *call);
/* types_index.c: subscripts, x.size(d), t, and the ops giving several tensors */
bool subscript(Ctx *c, Expr *e);        /* x[...]: e becomes the calls it means */
bool dim_of(Ctx *c, Expr *e);           /* x.size(d): e becomes the number */
void set_int_literal(Ctx *c, Expr *e, int64_t v); /* e becomes the literal v (or neg(-v)) */
bool infer_t(Ctx *c, Expr *call);
bool infer_pieces(Ctx *c, Expr *call);
bool split_assign(Ctx *c, Vec *stmts, int i); /* a, b = x.chunk(2): one assignment per name */
/* the pieces of those rewrites, shared with types_rnn.c: calls typed at
 * once (NULL when reported), fresh local names and references to them,
 * and the splice of stmts[i] into several statements */
Expr *int_expr(Ctx *c, int64_t v, Loc loc);
Expr *call_skeleton(Ctx *c, const OpInfo *op, const Expr *from, Loc name_loc, Expr *input);
Expr *make_call(Ctx *c, OpId id, Expr *from, Loc name_loc, Expr *x, int n, const char *const *names,
                const int64_t *values);
Expr *call1(Ctx *c, OpId id, Expr *from, Loc at, Expr *x, const char *name, int64_t v);
Stmt *assign_stmt(Ctx *c, Expr *target, Expr *value, Loc loc);
void splice(Ctx *c, Vec *stmts, int i, Vec *out);
Expr *local_name(Ctx *c, const char *text, Loc loc, const Type *t);
Expr *ref_of(Ctx *c, Expr *name);
/* types_compare.c */
bool infer_compare(Ctx *c, Expr *call);
bool infer_logic(Ctx *c, Expr *call);
/* types_linalg.c */
bool infer_linear(Ctx *c, Expr *call);
bool infer_matmul(Ctx *c, Expr *call);
bool infer_mm(Ctx *c, Expr *call);
bool infer_dot(Ctx *c, Expr *call);
bool infer_bilinear(Ctx *c, Expr *call);
bool infer_multi_dot(Ctx *c, Expr *call);
bool infer_einsum(Ctx *c, Expr *call);
bool infer_linalg(Ctx *c, Expr *call);
bool infer_linalg_solve(Ctx *c, Expr *call);
/* types_rnn.c */
bool infer_rnn_cell(Ctx *c, Expr *call);
bool infer_rnn_layer(Ctx *c, Expr *call);
bool is_rnn_layer(OpId id);
bool rnn_layer_assign(Ctx *c, Vec *stmts, int i); /* out, h_n, c_n = lstm(...): unrolled into cells */
/* types_composite.c: gru_cell, lstm_cell, bilinear as PyTorch's inner ops under autocast */
bool composite_expands(Ctx *c, const Expr *call);
bool composite_assign(Ctx *c, Vec *stmts, int i); /* stmts[i]'s value, which composite_expands */
bool hoist_composite(Ctx *c, Vec *stmts, int i);  /* one nested in stmts[i]'s value, to a statement before */
/* types_attention.c */
bool infer_sdpa(Ctx *c, Expr *call);
/* types_distance.c */
bool infer_cdist(Ctx *c, Expr *call);
bool infer_distance(Ctx *c, Expr *call);
/* types_complex.c: the complex-valued ops, and the gate that keeps complex
 * operands out of every other op (called by infer_call first) */
bool infer_fft(Ctx *c, Expr *call);
bool infer_stft(Ctx *c, Expr *call);
bool infer_polar(Ctx *c, Expr *call);
bool infer_complex_view(Ctx *c, Expr *call);
bool infer_complex_part(Ctx *c, Expr *call);
bool infer_linalg_eig(Ctx *c, Expr *call);
bool complex_operands_ok(Ctx *c, Expr *call);

#endif
