/* emit_rules.h: the emitters and gradient rules that ops.def's emit and
 * grad columns name, by op family.
 *
 * emit_ops.c expands emit_rules[] and emit_grad.c grad_rules[] from those
 * columns, so each function named there is declared here.  An emitter
 * writes the kernel calls computing node n into y (its result's C name);
 * a gradient rule writes those of GRAD node b's input gradients.  Family
 * f's emitters are in emit_f.c and its rules in grad_f.c, with the middle
 * end's family names (src/middle/types_f.c); a family with nothing in a
 * layer has no file there.
 */
#ifndef AMPC_EMIT_RULES_H
#define AMPC_EMIT_RULES_H

/* Included by emit.h, for the Emitter. */

/* casts (emit_c.c), and GRAD nodes (emit_ops.c: the rule of the forward
 * op, through emit_grad) */
void emit_cast(Emitter *e, Node *n, const char *y);
void emit_grad_node(Emitter *e, Node *n, const char *y);

/* elementwise: emit_elementwise.c, grad_elementwise.c */
void emit_arith(Emitter *e, Node *n, const char *y);
void emit_unary(Emitter *e, Node *n, const char *y);
void emit_unary_param(Emitter *e, Node *n, const char *y);
void emit_prelu(Emitter *e, Node *n, const char *y);
void emit_pow(Emitter *e, Node *n, const char *y);
void emit_binary_tensors(Emitter *e, Node *n, const char *y);
void emit_add_relu_backward(Emitter *e, Node *n, const char *y);
void emit_binary_or_number(Emitter *e, Node *n, const char *y);
void emit_glu(Emitter *e, Node *n, const char *y);
void emit_lerp(Emitter *e, Node *n, const char *y);
void emit_addc(Emitter *e, Node *n, const char *y);
void emit_masked_fill(Emitter *e, Node *n, const char *y);
void emit_tri(Emitter *e, Node *n, const char *y);
void emit_where(Emitter *e, Node *n, const char *y);
void emit_dropout(Emitter *e, Node *n, const char *y);

/* comparisons and the logic of bools: emit_compare.c */
void emit_compare(Emitter *e, Node *n, const char *y);
void emit_logic(Emitter *e, Node *n, const char *y);
void grad_arith(Emitter *e, Node *b);
void grad_unary(Emitter *e, Node *b);
void grad_prelu(Emitter *e, Node *b);
void grad_pow(Emitter *e, Node *b);
void grad_binary_kernel(Emitter *e, Node *b);
void grad_binary_or_number(Emitter *e, Node *b);
void grad_glu(Emitter *e, Node *b);
void grad_lerp(Emitter *e, Node *b);
void grad_addc(Emitter *e, Node *b);
void grad_masked_fill(Emitter *e, Node *b);
void grad_tri(Emitter *e, Node *b);
void grad_where(Emitter *e, Node *b);
void grad_dropout(Emitter *e, Node *b);

/* reduce: emit_reduce.c, grad_reduce.c */
void emit_softmax(Emitter *e, Node *n, const char *y);
void emit_sort(Emitter *e, Node *n, const char *y);
void emit_reduce(Emitter *e, Node *n, const char *y);
void emit_index_reduce(Emitter *e, Node *n, const char *y);
double variance_correction(Node *n);
void emit_scan(Emitter *e, Node *n, const char *y);
void emit_trace(Emitter *e, Node *n, const char *y);
void emit_renorm(Emitter *e, Node *n, const char *y);
void emit_quantile(Emitter *e, Node *n, const char *y);
void grad_softmax(Emitter *e, Node *b);
void grad_sort(Emitter *e, Node *b);
void grad_reduce(Emitter *e, Node *b);
void grad_prod(Emitter *e, Node *b);
void grad_cumsum(Emitter *e, Node *b);
void grad_cumprod(Emitter *e, Node *b);
void grad_norm_reduce(Emitter *e, Node *b);
void grad_extremum(Emitter *e, Node *b);
void grad_trace(Emitter *e, Node *b);
void grad_renorm(Emitter *e, Node *b);
void grad_quantile(Emitter *e, Node *b);

/* norm: emit_norm.c, grad_norm.c */
void emit_norm_layer(Emitter *e, Node *n, const char *y);
void grad_norm(Emitter *e, Node *b);

/* loss: emit_loss.c, grad_loss.c */
void emit_nll_loss(Emitter *e, Node *n, const char *y);
void emit_class_loss(Emitter *e, Node *n, const char *y);
void emit_cross_entropy_with_grad(Emitter *e, Node *n, const char *y);
const char *batchmean_divisor(Emitter *e, Node *n);
const char *loss_reduction_c(Node *n);
void emit_pointwise_loss(Emitter *e, Node *n, const char *y);
void emit_margin_loss(Emitter *e, Node *n, const char *y);
void emit_ctc_loss(Emitter *e, Node *n, const char *y);
void grad_class_loss(Emitter *e, Node *b);
void grad_pointwise_loss(Emitter *e, Node *b);
void grad_class_margin(Emitter *e, Node *b);
void grad_row_loss(Emitter *e, Node *b);
void grad_margin_ranking(Emitter *e, Node *b);
void grad_ctc_loss(Emitter *e, Node *b);

/* constructors: emit_construct.c */
void emit_construct(Emitter *e, Node *n, const char *y);

/* rearranging: emit_rearrange.c, grad_rearrange.c */
void emit_rearrange(Emitter *e, Node *n, const char *y);
void grad_rearrange(Emitter *e, Node *b);

/* spatial: emit_spatial.c, grad_spatial.c */
void emit_conv(Emitter *e, Node *n, const char *y);
void emit_conv_epilogue(Emitter *e, Node *n, const char *y);
void emit_conv_tbc(Emitter *e, Node *n, const char *y);
void emit_pool(Emitter *e, Node *n, const char *y);
void emit_upsample(Emitter *e, Node *n, const char *y);
void emit_pad(Emitter *e, Node *n, const char *y);
void emit_grid_sampler(Emitter *e, Node *n, const char *y);
void emit_max_unpool(Emitter *e, Node *n, const char *y);
void grad_conv(Emitter *e, Node *b);
void grad_conv_transpose(Emitter *e, Node *b);
void grad_conv_tbc(Emitter *e, Node *b);
void grad_pool(Emitter *e, Node *b);
void grad_upsample(Emitter *e, Node *b);
void grad_pad(Emitter *e, Node *b);
void grad_grid_sampler(Emitter *e, Node *b);
void grad_max_unpool(Emitter *e, Node *b);
void grad_convolution(Emitter *e, Node *b);

/* shape: emit_shape.c, grad_shape.c */
void emit_index(Emitter *e, Node *n, const char *y);
void emit_copy(Emitter *e, Node *n, const char *y);
void emit_permute(Emitter *e, Node *n, const char *y);
void emit_expand(Emitter *e, Node *n, const char *y);
void emit_slice(Emitter *e, Node *n, const char *y);
void emit_cat(Emitter *e, Node *n, const char *y);
void emit_index_put(Emitter *e, Node *n, const char *y);
void grad_embedding(Emitter *e, Node *b);
void grad_view(Emitter *e, Node *b);
void grad_permute(Emitter *e, Node *b);
void grad_expand(Emitter *e, Node *b);
void grad_slice(Emitter *e, Node *b);
void grad_cat(Emitter *e, Node *b);
void grad_index_copy(Emitter *e, Node *b);
void grad_gather(Emitter *e, Node *b);
void grad_scatter_add(Emitter *e, Node *b);
void grad_index_select(Emitter *e, Node *b);
void grad_index_put(Emitter *e, Node *b);

/* linalg: emit_linalg.c, grad_linalg.c */
void emit_linear(Emitter *e, Node *n, const char *y);
void emit_matmul(Emitter *e, Node *n, const char *y);
void emit_svd_op(Emitter *e, Node *n, const char *y);
void emit_mm(Emitter *e, Node *n, const char *y);
void emit_multi_dot(Emitter *e, Node *n, const char *y);
void emit_tensordot(Emitter *e, Node *n, const char *y);
void emit_bilinear(Emitter *e, Node *n, const char *y);
void emit_linear_relu(Emitter *e, Node *n, const char *y);
void emit_linalg(Emitter *e, Node *n, const char *y);
void emit_einsum(Emitter *e, Node *n, const char *y);
void emit_linalg_solve(Emitter *e, Node *n, const char *y);
void grad_linear(Emitter *e, Node *b);
void grad_matmul(Emitter *e, Node *bn);
void grad_linalg(Emitter *e, Node *b);
void grad_gemm(Emitter *e, Node *bn);
void grad_cross(Emitter *e, Node *b);
void grad_tensordot(Emitter *e, Node *b);
void grad_bilinear(Emitter *e, Node *b);
void grad_einsum(Emitter *e, Node *b);

/* rnn: emit_rnn.c, grad_rnn.c */
void emit_rnn_cell(Emitter *e, Node *n, const char *y);
void grad_rnn_cell(Emitter *e, Node *b);

/* attention: emit_attention.c, grad_attention.c */
void emit_sdpa(Emitter *e, Node *n, const char *y);
void grad_sdpa(Emitter *e, Node *b);

/* distance: emit_distance.c, grad_distance.c */
void emit_pair_dim(Emitter *e, Node *n, const char *y);
void emit_distance(Emitter *e, Node *n, const char *y);
void emit_vecdot(Emitter *e, Node *n, const char *y);
void grad_cosine_similarity(Emitter *e, Node *b);
void grad_dist(Emitter *e, Node *b);
void grad_distance(Emitter *e, Node *b);
void grad_vecdot(Emitter *e, Node *b);

/* complex: emit_complex.c */
void emit_complex(Emitter *e, Node *n, const char *y);

#endif
