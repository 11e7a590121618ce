/* middle.h: the middle end: types, autocast, the graph IR and its passes.
 *
 *   typecheck  shapes and dtypes as PyTorch infers them   (typecheck.c, types_*.c)
 *   policy     the target's autocast policy               (policy.c)
 *   autocast   per-op decisions, explicit Cast nodes      (autocast.c)
 *   train      the train { } section's settings           (train.c)
 *   lower      AST -> graph IR in schedule order          (lower.c, ir.c)
 *   autodiff   the training step's backward nodes         (autodiff.c)
 *   optimize   cast CSE (weight cache), dead code         (optimize.c)
 *   fuse       kernel groups run as one call              (fuse.c)
 *   memplan    liveness, one static arena                 (memplan.c)
 *
 * It reads the front end's tree (front.h) up to lowering; the back end
 * (back.h) reads only the IR.
 */
#ifndef AMPC_MIDDLE_H
#define AMPC_MIDDLE_H

#include "front.h"

typedef enum {
    POL_NONE = 0,       /* not listed: follows its inputs */
    POL_LOWER,          /* lower_precision_fp: cast to the low dtype */
    POL_FP32,           /* cast to f32 */
    POL_FP32_SET_OPT_DTYPE,
    POL_FP32_APPEND_DTYPE,
    POL_PROMOTE,        /* widest eligible type */
    POL_BANNED,
} PolicyClass;

typedef struct PolicyRow {
    const char *op;
    PolicyClass cls;
    const char *source; /* provenance, shown by --explain and in comments */
    DType low;          /* --autocast-op NAME=bf16|f16: this dtype, not the region's; else DT_NONE */
} PolicyRow;

typedef struct Policy {
    const char *target;  /* "tpu" */
    DType low;           /* default low dtype */
    unsigned allowed;    /* bit per DType: the low dtypes dtype= may pick */
    Vec *rows;           /* PolicyRow, in file order */
    StrMap *by_op;       /* op name -> its row: looked up once per op */
    const char *builtin; /* the built-in policy's name ("cpu-torch1.13"); NULL: read from a file */
} Policy;

const char *policy_class_name(PolicyClass cls);
/* "built-in NAME policy", or the file --policy named */
const char *policy_display_name(Ctx *c);
const char *target_name(Target t);
bool target_from_name(const char *name, Target *t);
bool parse_policy(Ctx *c, const SourceFile *f, Policy *pol);
const PolicyRow *policy_find(const Policy *pol, const char *op);
/* Add a row, or replace the op's row (--autocast-op: the last word wins). */
void policy_put(Ctx *c, Policy *pol, PolicyRow *row);

/* The train { } section (train.c). */
typedef enum { OPTIMIZER_NONE, OPTIMIZER_SGD, OPTIMIZER_ADAM, OPTIMIZER_ADAMW } OptimizerKind;
typedef enum { SCALER_NONE, SCALER_STATIC, SCALER_DYNAMIC } ScalerKind;
typedef struct TrainConfig {
    Loc loc, loss_loc, scaler_loc;
    OptimizerKind optimizer;
    double lr, momentum, dampening, weight_decay, beta1, beta2, eps;
    bool nesterov, maximize, amsgrad;
    ScalerKind scaler;
    double init_scale, growth_factor, backoff_factor;
    int64_t growth_interval;
    int64_t accumulate;    /* micro-batches per update */
    double clip_grad_norm; /* 0: no clipping */
} TrainConfig;

bool typecheck(Ctx *c);                   /* typecheck.c */
bool load_policy(Ctx *c);                 /* policy.c */
bool autocast(Ctx *c);                    /* autocast.c */
bool read_training(Ctx *c);               /* train.c: c->train from the train { } section */
bool lower(Ctx *c);                       /* lower.c: sets c->graph */
bool autodiff(Ctx *c);                    /* autodiff.c: the backward nodes (training only) */
bool optimize(Ctx *c);                    /* optimize.c */
bool fuse(Ctx *c);                        /* fuse.c */
bool memplan(Ctx *c);                     /* memplan.c */

/* The type rule of a call, by its ops.def row (typecheck.c; shared by
 * typecheck and autocast).  The rules themselves, infer_*, are private to
 * typecheck.c and the types_*.c files (types.h). */
bool infer_call(Ctx *c, Expr *call);
int rnn_cell_gates(OpId id); /* types_rnn.c: 4 (lstm), 3 (gru), 1 (the plain cells) */
/* types_complex.c: which ops take complex operands, and in which dtype
 * each operand reaches the kernel */
bool op_takes_complex(OpId id);
DType complex_operand_dtype(const Expr *call, int i, DType result);
typedef enum { FFT_C2C, FFT_R2C, FFT_C2R } FftKind;
FftKind fft_kind(OpId id);
int fft_norm_code(const char *s); /* "backward" 0, "ortho" 1, "forward" 2, else -1 */
int stft_pad_mode_code(const char *s); /* constant 0, reflect 1, replicate 2, circular 3 */
/* numpy broadcasting of two shapes, reported at call (typecheck.c) */
bool broadcast_shapes(Ctx *c, Expr *call, const Shape *a, const Shape *b, Shape *out);
bool type_fits(Ctx *c, const Type *t, Loc loc);
const char *type_to_string(Ctx *c, const Type *t);
int reduction_code(const char *s); /* types_loss.c: "none" 0, "mean" 1, "sum" 2, else -1 */
/* " --autocast-op relu=f32 --force-dtype bf16": the options that changed the
 * decisions, for provenance headers (empty when none were given). */
const char *autocast_options_text(Ctx *c);
/* The policy key of a call: "__matmul__" for a @ b, "cross_entropy_loss" for
 * cross_entropy (PyTorch's aten name), else the op's name (autocast.c). */
const struct PolicyRow *policy_row_for(Ctx *c, const Expr *call);

/* ---- IR (ir.c) -------------------------------------------------------- */

typedef enum { V_INPUT, V_PARAM, V_BUFFER, V_TEMP } ValueKind;

typedef struct Node Node;

/* A GRAD node computes one gradient per forward operand that needs one:
 * of the six operands it reads (in[1..6]), and lstm_cell's seventh, b_hh
 * (autodiff.c), so every operand of an unrolled lstm step can train; cat
 * and stack, whose rule reads only dy, get one GRAD node per seven. */
#define MAX_NODE_GRADS 7

typedef struct Value {
    int id;
    ValueKind kind;
    Type type;
    const char *name; /* source name, or NULL for temporaries */
    Node *def;        /* V_TEMP: its defining node */
    int nuses;
    bool is_output;   /* written to the caller's output buffer */
    const char *output_name;
    int last_use;     /* memplan: schedule index of the last reader */
    int slot;         /* memplan: arena slot, -1 for caller memory */
    const char *cname; /* emit_c: the struct member naming caller memory */
    struct Value *grad; /* autodiff: a parameter's gradient (NULL: none) */
} Value;

/* A scalar argument kept exactly as written (a literal). */
typedef struct Scalar {
    const char *text; /* literal text; the emitter rounds it once */
    bool negate;
    Loc loc;          /* the literal, for warnings about its range */
} Scalar;

/* An op's non-tensor argument, or a fact typecheck worked out from the
 * call, owned by the node (lower.c fills them; ir.c reads them).  Passes
 * after lowering read a node's arguments here, never in the syntax tree. */
typedef enum {
    ATTR_NONE,     /* None written: the op's default behaviour */
    ATTR_INT,      /* an integer literal, possibly negated; also readable as a number */
    ATTR_BOOL,
    ATTR_STR,
    ATTR_NUMBER,   /* a number kept as its exact literal text and sign */
    ATTR_INT_LIST, /* the values of an int... vararg parameter (reshape's shape), in order */
    ATTR_DTYPE,
} AttrKind;

typedef struct Attr {
    const char *name;  /* the op parameter's name, or a derived fact's (ATTR_DERIVED) */
    AttrKind kind;
    bool derived;      /* set from typecheck's normalised facts, not written by the user */
    bool negate;       /* INT, NUMBER: written as -literal */
    bool is_float;     /* NUMBER: written with a dot or an exponent */
    const char *text;  /* INT, NUMBER: the literal text without the sign; STR: the string */
    int64_t i;         /* INT: the value, sign applied; BOOL: 0 or 1 */
    int64_t *list;     /* INT_LIST */
    int nlist;
    DType dtype;       /* DTYPE */
    Loc loc;           /* the argument, for diagnostics */
} Attr;

struct Node {
    int id;
    const OpInfo *op;
    Value **in;           /* by parameter position; NULL for non-tensor parameters;
                           * room for max(8, op->nparams) (ir_new_node) */
    int nin;
    Value *out;
    Value *more_out[MAX_NODE_GRADS - 1]; /* the results after the first, of ops with several
                                          * (a GRAD node's: one per operand needing a gradient) */
    int nmore;
    Value *scratch;       /* working memory the kernel needs, live during the node only */
    Node *fwd;            /* GRAD: the forward node differentiated (NULL: the loss seed) */
    int grad_input[MAX_NODE_GRADS]; /* GRAD: which of fwd's inputs out, more_out[0..] are gradients of */
    Value *dy_more[3];    /* GRAD: the gradients of fwd's more_out[0..] (NULL: none flows); in[0] may then be NULL */
    Scalar scalar;        /* an OPF_SCALAR_OPERAND op's number operand */
    bool scalar_first;    /* 2 - x: the scalar is the left operand */
    Attr *attrs;          /* its arguments and derived facts (lower.c), in parameter order */
    int nattrs;
    Loc loc;              /* the source expression */
    Loc name_loc;         /* a call's op name or operator token; else loc */
    Loc operand_loc;      /* a conversion written in the AST: its operand (file NULL: none) */
    const char *instance; /* inlined from a block: the module instance's path (layer2.0.conv1), else NULL */
    Loc instance_loc;     /* with instance: the model's `module` statement it descends from */
    const char *instance_root; /* with instance: the path that statement declares (layer2.0) */
    const char *why;      /* the dtype decision (Decision.rule), or cast reason */
    const struct PolicyRow *row; /* the policy row applied to the call (NULL: none) */
    DType forced_from;    /* --force-dtype changed the call from this dtype (DT_NONE: not) */
    bool autocast_on;     /* the call is inside an enabled autocast region */
    bool dead;
};

/* Every value a node reads, for the passes that walk them (liveness,
 * dead code, printers): in[0..nin), then a GRAD node's dy_more, which must
 * stay alive until it runs as much as its inputs.  Entries may be NULL. */

static inline int node_nreads(const Node *n) { return n->nin + 3; }
static inline Value *node_read(const Node *n, int k) { return k < n->nin ? n->in[k] : n->dy_more[k - n->nin]; }

/* A call of the model, lowered or not, for --explain's "not computed"
 * list: in source order (arguments before the call), with node the one
 * lowered from it (NULL: an expression statement nothing reads). */
typedef struct CallSite {
    const OpInfo *op;
    Loc name_loc;
    Type type;
    const char *rule; /* the dtype decision */
    Node *node;
} CallSite;

struct Graph {
    const char *name; /* the model's */
    Loc name_loc;     /* where the model's name is written */
    Vec *values;  /* every Value, by id */
    Vec *nodes;   /* schedule order */
    Vec *inputs;  /* V_INPUT, declaration order */
    Vec *params;  /* V_PARAM, declaration order */
    Vec *outputs; /* Values the forward function writes out */
    Value *loss;  /* the minimize target, or NULL */
    Vec *calls;   /* CallSite, every typed call (lower.c) */
    Loc *dim_locs; /* the model's symbolic dims, where declared (lower.c) */
    Vec *grads;   /* autodiff: the parameters that have a gradient (Value.grad), in order; NULL when not training */
    /* memplan */
    int nslots;
    Vec *slot_sizes; /* per slot: Vec of Poly* in bytes; the slot is their max */
};

Value *ir_new_value(Ctx *c, ValueKind kind, Type type, const char *name);
Node *ir_new_node(Ctx *c, const OpInfo *op, Loc loc);
/* A node's attributes (ir.c).  Each returns dflt when the argument was
 * not written or was written as None, as PyTorch's defaults do; a number is
 * rounded once, exactly, to dtype t (dflt is the default's literal text). */
const Attr *attr_find(const Node *n, const char *name);
bool attr_given(const Node *n, const char *name); /* written, and not None */
AttrKind attr_kind(const Node *n, const char *name, AttrKind absent);
int64_t attr_int(const Node *n, const char *name, int64_t dflt);
/* count values: a list of count entries, or one int for all (dflt: not written) */
void attr_ints(const Node *n, const char *name, const int64_t *dflt, int count, int64_t *out);
bool attr_bool(const Node *n, const char *name, bool dflt);
const char *attr_str(const Node *n, const char *name, const char *dflt);
const char *node_op_name(const Node *n); /* a fused op's parts, "linear + relu"; else its name */
double attr_number(const Node *n, const char *name, const char *dflt, DType t);
int attr_int_list(const Node *n, const char *name, int64_t *out); /* the count written */
bool attr_reduces(const Node *n, int i); /* a reduction's dim i: in its axes, or its axis (-1: all) */
void ir_dump(Ctx *c, FILE *out);
bool ir_verify(Ctx *c, const char *after_pass);
Poly *value_bytes(Ctx *c, const Value *v); /* memplan.c */
/* scratch.c: the scratch buffer node n's kernels need (forward or GRAD
 * node), a DT_BOOL vector of its bytes; dtype DT_NONE for none. */
Type op_scratch_type(Ctx *c, const Node *n);
/* scratch.c: facts the emitters share with the sizes.  Whether s is a
 * matrix (batch) of constant rows *m and columns *n; nuclear_norm, or
 * linalg_matrix_norm(ord="nuc") (the sum of the singular values, computed
 * and differentiated through the SVD); the elements svd's and the nuclear
 * norm's scratch holds per matrix before amp_svd's work; an fft's
 * transformed dims and their signal lengths (returns their count); the
 * broadcast shape of a forward's first nops operands, whose gradients the
 * cosine, margin-ranking and triplet kernels write over it, and how many
 * of them (with *work, the doubles of work they need, or NULL). */
bool fixed_matrix(const Shape *s, int64_t *m, int64_t *n);
bool is_nuclear_norm(const Node *n);
int64_t svd_scratch_elems(const Node *n, int64_t m, int64_t cols);
/* scratch.c: a forward linear algebra node's scratch is the i32 info of
 * each matrix (8 bytes each) when linalg_scratch_has_info, then the
 * kernel's work of linalg_work_bytes (for one matrix, m x n of esize). */
bool linalg_scratch_has_info(OpId id);
int64_t linalg_work_bytes(OpId id, int64_t m, int64_t n, int64_t esize);
int fft_dims(Ctx *c, const Node *n, int *dims, Poly **lens);
Shape grad_full_shape(Ctx *c, const Node *f, int nops);
int grad_full_operands(const Node *f, Poly **work, Ctx *c);
/* grad_rules.c: NULL if autodiff can differentiate node n (its op has a
 * gradient rule and the rule takes this node), else the error to report. */
const char *grad_rule_missing(Ctx *c, const Node *n);
/* grad_rules.c: NULL if node n's rule gives operand k a gradient, else the
 * error to report when that operand needs one. */
const char *grad_input_missing(Ctx *c, const Node *n, int k);
/* grad_rules.c: facts the gradient emitters share with the rules.  The ops
 * grad_linalg.c differentiates; the value lstm_cell's seventh operand,
 * b_hh, is read from at the backward (a GRAD node carries the forward's
 * first six operands): b_hh itself when it is not a temporary, or the
 * parameter (input, buffer) a Cast (autocast's, or the f64 reference's)
 * converted into it, cast again into the GRAD node's scratch, NULL when it
 * is neither; whether that cast again is needed; whether node n is a
 * dropout drawing a mask in training mode. */
bool linalg_grad_op(OpId id);
const Value *lstm_b_hh_source(const Node *n);
bool lstm_b_hh_recast(const Node *n);
bool dropout_draws(const Node *n);
/* The bits of v, exactly representable in bf16 or f16 (literal.c). */
uint16_t half_bits(double v, DType t);

#endif
