/* emit.h: what the C code generator's files share.
 *
 * emit_c.c writes the files (header, entry points, the forward
 * function's frame), emit_weights.c the weights' loading and saving, and
 * emit_train.c the training step; emit_c.c and emit_train.c call emit_op
 * for a node's kernel calls and emit_grad for a GRAD node's.
 * emit_ops.c and emit_grad.c dispatch through tables expanded from
 * ops.def: an op's emitter is the function its row's emit column names
 * (EMIT(emit_unary)), its gradient rule the one its grad column names
 * (GRAD(grad_unary)), declared in emit_rules.h and defined in
 * emit_<family>.c and grad_<family>.c, with the middle end's family names
 * (src/middle/types_<family>.c).  This header holds the Emitter, the
 * helpers of emit_c.c, emit_ops.c and emit_grad.c every family uses, and
 * the helpers a family's emitters share with its gradient rules.
 */
#ifndef AMPC_EMIT_H
#define AMPC_EMIT_H

#include "back.h"

typedef struct Emitter {
    Ctx *c;
    Graph *g;           /* the graph being written: inference, or the training step's */
    struct Emitter *train; /* the training step's emitter, when the model trains */
    Buf *out;
    const char *prefix; /* mlp */
    const char *PREFIX; /* MLP */
    StrMap *used;       /* C names taken in the function being emitted */
    /* the policy sources the rules in this file name, said once in its
     * provenance header and left out of each op's comment */
    const char **rule_sources;
    int nrule_sources;
    StrMap *next_suffix;/* base name -> the next _N to try for it */
    const char **cname; /* per value id: its C expression (a local's name) */
    const char **member; /* per value id: its member in the params/inputs/outputs
                            structs (the local's name but where a training-step
                            local took it) */
    const char *dim_params; /* "B, T" for macros, "" with no dims */
    const char *macro_names[MAX_SYMS]; /* "(B)": dims as macro arguments */
    bool uses_rc;       /* some kernel returns a status the forward checks */
    /* Called by emit_body right after each node's code, when set: lets the
     * training step act on a value as soon as it is final (emit_train.c
     * adds each parameter's gradient there and pushes it to the
     * all-reduce, overlapping the reduction with the rest of the backward). */
    void (*after_node)(struct Emitter *e, Node *n);
    void *after_node_data;
    /* Per value id: a bf16/f16 -> f32 cast of a parameter's gradient that
     * emit_node leaves to the training step's gradient sink, which adds
     * the cast's input into the state's gradient in one call
     * (amp_grad_accumulate_<S>, emit_train.c); NULL: none. */
    const bool *grad_cast_in_sink;
    /* Per value id, grad_in_state: the low-dtype input of such a cast is
     * a convolution's weight gradient nothing else reads, which its call
     * writes widened straight into the state's gradient, grad_state_member
     * ("s->grad.<member>"), adding when grad_live
     * (amp_conv_backward_weight_to_f32_<S>): its slot is never declared
     * or written, and the sink has only the all-reduce left to do.  NULL outside the training
     * step. */
    const char **grad_state_member;
    const bool *grad_in_state;
    /* Weights prepared once by <prefix>_prepare (emit_c.c): per value id,
     * the prepared block's entry holding the value (a parameter's cast, by
     * the cast's result) or a convolution's or linear's packed weights (by
     * its result); -1: none.  NULL in the training step, whose weights
     * change every step. */
    int *prep_cast, *prep_packed;
    Node **prep_node;   /* per entry: the convolution, linear or cast it holds */
    int nprep;
    uint64_t prep_magic; /* written first in the block: whose it is */
} Emitter;

/* emit_c.c */
void emit_node(Emitter *e, Node *n);
/* The parameter (or buffer) whose values node n's weights (its input 1)
 * are, when <prefix>_prepare can pack them: the weights themselves in
 * n's dtype, or a cast of an f32 one; NULL otherwise. */
Value *preparable_weight_source(const Node *n);
/* The packed weights of node n (a convolution or linear) in the prepared
 * block, as C ("NULL" when its weights are not prepared). */
const char *prepared_weights_c(Emitter *e, const Node *n);
void emit_body(Emitter *e, Buf *o, const char *params, const char *arena_bytes_fn);
const char *arena_expr(Emitter *e, const char *const *names);
void emit_arena_bytes_fn(Emitter *e, Buf *o, const char *fn, const char *macro);
int64_t const_bytes_padded(Emitter *e, const Value *v);
bool weights_loadable(Emitter *e);
/* emit_weights.c: <prefix>_load_weights, _save_weights, --embed-weights */
void emit_weights_decls(Emitter *e, Buf *h);
void emit_weights_source(Emitter *e, Buf *o);
void emit_embedded_decl(Emitter *e, Buf *h);
bool emit_embedded_weights(Emitter *e, Buf *o);
const char *c_ident(Emitter *e, const char *base);
const char *poly_c(Emitter *e, const Poly *p);
const char *numel_c(Emitter *e, const Shape *s);
const char *type_comment(Emitter *e, const Type *t);
const char *dims_product(Emitter *e, const Shape *s, int from, int to);
const char *base_name(const char *path);
const char *kernel(Emitter *e, const char *op, DType t);
const char *scalar_c(Emitter *e, Node *n);

/* emit_train.c: the training step's declarations (in the header, beside
 * the inference ones of `fwd`) and its functions */
void emit_train_decls(Emitter *e, Emitter *fwd, Buf *h);
void emit_train_source(Emitter *e, Emitter *fwd, Buf *o);

/* ---- emit_ops.c: the dispatch and the pieces every emitter uses ---------- */

/* The call(s) computing node n into y (its output's C name), by the emit
 * rule its ops.def row names.  Reports (and emits nothing) for an op or
 * dtype without a kernel. */
void emit_op(Emitter *e, Node *n, const char *y);
/* Whether the forward needs `int rc` for node n's kernel status. */
bool op_returns_status(const Node *n);
const char *in_c(Emitter *e, Node *n, int k);
const Shape *in_shape(Node *n, int k);
DType in_dtype(Node *n, int k);
const Shape *out_shape(Node *n);
const char *more_out_c(Emitter *e, Node *n, int k);
DType compute_dtype(DType t);
bool is_kernel_float(DType t);
bool in_train_step(Emitter *e);
const char *double_c(Emitter *e, double v);
const char *i64_c(Emitter *e, int64_t v);
const char *c_array(Emitter *e, const char *const *items, int n);
const char *shape_array(Emitter *e, const Shape *s);
const char *i64_array(Emitter *e, const int64_t *v, int n);
void contiguous_strides(Emitter *e, const Shape *s, const char **out);
void broadcast_strides(Emitter *e, const Shape *in, const Shape *out, const char **st);
const char *bcast_array(Emitter *e, const Shape *in, const Shape *out);
Shape bcast_full(Emitter *e, const Shape *const *ops, int nops);
int64_t norm_dim(int64_t d, int nd);
void axis_split(Emitter *e, const Shape *s, int64_t d, const char **outer, const char **len, const char **inner);
const char *double_scratch(Emitter *e, Node *n);
void open_block(Emitter *e);
void close_block(Emitter *e);
void emit_checked(Emitter *e, const char *indent, const char *call);
bool unsupported(Emitter *e, Node *n, const char *why);
bool operands_ok(Emitter *e, Node *n, DType t);

/* ---- emit_grad.c: the gradient dispatch and the pieces of a GRAD node ---- */

/* The kernel calls of a GRAD node (autodiff.c): the loss's seed, or its
 * forward op's gradient rule. */
void emit_grad(Emitter *e, Node *n);
/* grad_of: the gradient of forward input k (NULL when it needs none);
 * dy_of: the gradient of the forward's result; x_of, y_of: the forward's
 * input k and result; xs_of, ys_of: their shapes. */
const char *grad_of(Emitter *e, Node *b, int k);
const char *dy_of(Emitter *e, Node *b);
const char *x_of(Emitter *e, Node *b, int k);
const char *y_of(Emitter *e, Node *b);
const Shape *xs_of(Node *b, int k);
const Shape *ys_of(Node *b);
void grad_copy(Emitter *e, const char *dst, const char *src, const Shape *s);
/* dst (shape `to`) = src (shape `from`) summed over the broadcast dims */
void sum_to(Emitter *e, DType t, const char *src, const Shape *from, const char *dst, const Shape *to);
/* buffer `index` of the forward output's size in dtype t, from b's scratch */
const char *scratch_buffer(Emitter *e, Node *b, DType t, int index);
/* b's scratch at byte_offset, as a `ctype *` */
const char *scratch_as(Emitter *e, Node *b, const char *ctype, const char *byte_offset);
const char *full_grad(Emitter *e, Node *b, int k, const Shape *full, const char *work);
void full_grads_down(Emitter *e, Node *b, int nops, const Shape *full, const char *work);
void zero_fill(Emitter *e, DType t, const char *dst, const Shape *s);
void gemm(Emitter *e, DType t, const char *batch, const char *M, const char *N, const char *K, const char *A,
          const char *a0, const char *a1, const char *a2, const char *B, const char *b0, const char *b1,
          const char *b2, bool sum_batch, const char *y);
const char *mul_c(Emitter *e, const char *a, const char *b);
/* s, or "NULL" */
const char *or_null(const char *s);

/* ---- the families' shared pieces (emit_<family>.c, grad_<family>.c) ------ */

/* elementwise */
const char *unary_kernel_name(Node *n);
const char *unary_params(Node *n, double *p0, double *p1);
/* dropout in training mode: the call applying f's mask to x into y in the
 * training step (false, and nothing written, where dropout is the identity
 * or dropout_draws says it draws none) */
bool emit_dropout_draw(Emitter *e, Node *f, const char *x, const char *y);

/* spatial */
int spatial_dims_of(OpId id);
const char *spatial_array(Emitter *e, const Shape *s, int ns);
const char *batch_of(Emitter *e, const Shape *s, int ns);
const char *planes_of(Emitter *e, const Shape *s, int ns);
bool emit_conv_desc(Emitter *e, Node *n);
void emit_conv_adjoint_desc(Emitter *e, Node *n);
/* Whether a convolution's weights can be packed once by <prefix>_prepare:
 * a forward convolution in f32, bf16 or f16 whose weight is a parameter
 * (or buffer) of its dtype or a cast of an f32 one, with constant channel
 * and kernel sizes; *src is then that parameter */
bool conv_weights_preparable(const Node *n, Value **src);
/* The same for a linear (or _linear_relu) with a 2-d weight of constant
 * sizes (emit_linalg.c) */
bool linear_weights_preparable(const Node *n, Value **src);
/* The desc fields <prefix>_prepare needs (channels, groups, kernel) in a
 * block-local `amp_conv_desc d` */
void emit_conv_weight_desc(Emitter *e, const Node *n);
void emit_pool_desc(Emitter *e, Node *n);
/* emit_rearrange.c: a rearranging op as strided copies, each walking
 * shape once, reading x at x_off + xs . i and writing y at y_off + ys . i
 * (element offsets and strides as C expressions); repeated marks the dims
 * repeat reads with stride 0 (its gradient sums over them) */
typedef struct Piece {
    int ndim;
    const char *shape[2 * MAX_DIMS], *xs[2 * MAX_DIMS], *ys[2 * MAX_DIMS];
    bool repeated[2 * MAX_DIMS];
    const char *x_off, *y_off;
} Piece;
int rearrange_plan(Emitter *e, Node *f, const Shape *sx, const Shape *so, Piece ***pieces);
void emit_piece_copy(Emitter *e, const Piece *p, const char *elem, const char *src, const char *const *src_stride,
                     const char *src_off, const char *dst, const char *const *dst_stride, const char *dst_off);
/* Opens a block declaring `amp_upsample_desc d` for upsample or
 * interpolate node f, from x's shape sx to the result's so. */
void emit_upsample_desc(Emitter *e, Node *f, const Shape *sx, const Shape *so);
int normalized_count(const Node *n); /* layer_norm's normalised dims */
int pad_sides(const Node *f, int nd, int64_t *before, int64_t *after); /* the pad mode */
bool conv_weight_grad_to_f32(const Value *v);

/* norm */
const char *param_dtype_c(Node *n, int first, int last);

/* loss */
extern const char *const reduction_enum[];
bool loss_params(Emitter *e, Node *n, double *p, int *kweight);
void class_split(Emitter *e, const Shape *s, const char **N, const char **C, const char **inner);

/* linalg: one gemm, y[b] = alpha A_b B_b + beta C_b, strides given as C
 * text; and the forward and backward contractions (einsum, tensordot,
 * bilinear, and the distance family's linalg_vecdot) */
typedef struct Gemm {
    const char *batch, *M, *N, *K;
    const char *a[3], *b[3], *cs[3];
    const char *A, *B, *C;
    double alpha, beta;
    bool sum_batch;
    const char *relu_y; /* gemm_relu_backward: the relu's output masking the product (NULL: a plain gemm) */
} Gemm;
void emit_gemm_call(Emitter *e, DType t, const Gemm *g, const char *y);

/* amp_contract_desc's limits (amprt/linalg.h) */
#define MAX_CONTRACT_INDEX 16

/* einsum, tensordot, bilinear, chain_matmul/multi_dot, linalg_vecdot: one
 * contraction over an index space (amp_contract). */
typedef struct Contraction {
    int n_index, n_out, n_ops;
    const char *size[MAX_CONTRACT_INDEX];
    const char *stride[4][MAX_CONTRACT_INDEX];
    const char *operand[4];
} Contraction;

/* A forward contraction as index lists: y (contiguous over indices
 * 0..n_out-1) = the sum over the others of the product of the operands;
 * operand o (forward input input[o]) is contiguous over its dims, dim d
 * walking index idx[o][d] with dsize[o][d] elements (a repeated index
 * walks a diagonal). */
#define GRAD_CONTRACT_MAX 16
typedef struct GradContract {
    int n_index, n_out, n_ops;
    const char *size[GRAD_CONTRACT_MAX];
    int input[4], nd[4];
    int idx[4][MAX_DIMS];
    const char *dsize[4][MAX_DIMS];
} GradContract;
int add_index(Contraction *k, const char *size, bool out);
void emit_contract_call(Emitter *e, DType t, Contraction *k, const char *y);
int contract_index(GradContract *k, const char *size);
void contract_dim(GradContract *k, int o, int index, const char *size);
void grad_contraction(Emitter *e, Node *b, GradContract *k);

#include "emit_rules.h"

/* emit_comment.c: the op comments' origin and rule, and the rules' sources */
void collect_rule_sources(Emitter *e, const Graph *g);
const char *comment_where(Emitter *e, const Node *n);
const char *comment_rule(Emitter *e, const char *why);
const char *comment_safe(Ctx *c, const char *text);

#endif
