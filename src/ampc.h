/* ampc.h: what the compiler's passes share.
 *
 * The pipeline (driver.c, ampc_compile) runs, in order:
 *
 *   parse      source text -> AST                     (parse.c, grammar/)
 *   resolve    names -> symbols, ops, bound arguments   (resolve.c)
 *   typecheck  shapes and dtypes as PyTorch infers them (typecheck.c)
 *   autocast   per-target policy, explicit Cast nodes   (autocast.c)
 *   lower      AST -> graph IR in schedule order        (lower.c)
 *   optimize   cast CSE (weight cache), dead code       (optimize.c)
 *   memplan    liveness, one static arena               (memplan.c)
 *   emit_c     model.c + model.h                        (emit_c.c)
 *
 * Memory: everything a compilation allocates comes from its arena and dies
 * with it (arena.c); allocation failure aborts.  Errors in the user's input
 * go through error_at() and are counted; a broken compiler invariant goes
 * through ICE() and exits with EXIT_INTERNAL.  The two never mix.
 */
#ifndef AMPC_H
#define AMPC_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define AMPC_VERSION "0.1.0"

/* Exit codes of the ampc command (docs/cli.md). */
enum {
    EXIT_OK = 0,
    EXIT_INPUT_ERROR = 1, /* the model has errors: diagnostics were printed */
    EXIT_USAGE = 2,       /* bad command line */
    EXIT_IO = 3,          /* a file could not be read or written */
    EXIT_INTERNAL = 4,    /* a compiler bug (internal compiler error) */
};

/* ---- arena.c ---------------------------------------------------------- */

typedef struct Arena Arena;
Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t size); /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_printf(Arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
char *arena_vprintf(Arena *a, const char *fmt, va_list ap);

/* A growable array of pointers, allocated from an arena. */
typedef struct Vec {
    void **items;
    int len, cap;
} Vec;

/* A hash map from strings to pointers (NULL: absent), in an arena: what
 * keeps name lookups linear in the size of the model.  Keys are not
 * copied. */
typedef struct StrMap {
    const char **keys;
    void **values;
    int len, cap; /* cap is a power of two */
    Arena *arena;
} StrMap;
StrMap *strmap_new(Arena *a);
void *strmap_get(const StrMap *m, const char *key);
void strmap_put(StrMap *m, const char *key, void *value);

/* Growable text, for building output files and long messages. */
typedef struct Buf {
    char *data;
    size_t len, cap;
    Arena *arena;
} Buf;
void buf_init(Buf *b, Arena *a);
void buf_puts(Buf *b, const char *s);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- diag.c: source files and diagnostics ----------------------------- */

typedef struct SourceFile {
    const char *name; /* as given on the command line; "<stdin>" for - */
    const char *text; /* NUL-terminated */
    size_t len;
} SourceFile;

/* A byte range [begin, end) in one source file. */
typedef struct Loc {
    const SourceFile *file;
    uint32_t begin, end;
} Loc;

typedef struct Ctx Ctx;

void error_at(Ctx *c, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void warning_at(Ctx *c, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A warning of a named class, which -Wno-CLASS silences: "literal-range". */
void warning_class_at(Ctx *c, Loc loc, const char *cls, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void note_at(Ctx *c, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* An error that belongs to no source position (e.g. a policy file). */
void error_plain(Ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void loc_line_col(Loc loc, int *line, int *col);
const char *closest_name(const char *name, const char *const *candidates, int n);
Loc loc_merge(Loc a, Loc b);
/* The source text of a location, for comments in emitted code. */
char *loc_text(Ctx *c, Loc loc);

_Noreturn void ice(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
#define ICE(...) ice(__FILE__, __LINE__, __VA_ARGS__)
#define ASSERT(cond) ((cond) ? (void)0 : ICE("assertion failed: %s", #cond))

Vec *vec_new(Ctx *c);
Vec *vec_push(Ctx *c, Vec *v, void *item);
#define VEC_AT(v, i) ((v)->items[i])

/* ---- dtype.c ---------------------------------------------------------- */

/* Ordered by promotion category, then width (dtype_promote relies on it). */
typedef enum DType {
    DT_NONE = 0, /* not a tensor (a scalar argument, a string...) */
    DT_BOOL,
    DT_I32,
    DT_I64,
    DT_BF16,
    DT_F16,
    DT_F32,
    DT_F64,
    DT_C64,  /* complex64: interleaved f32 real and imaginary parts */
    DT_C128, /* complex128: interleaved f64 pairs */
} DType;

typedef enum { CAT_NONE, CAT_BOOL, CAT_INT, CAT_FLOAT, CAT_COMPLEX } DTypeCategory;

DType dtype_from_name(const char *name); /* DT_NONE if unknown */
const char *dtype_name(DType t);         /* "f32" */
const char *dtype_c_type(DType t);       /* "float", "amp_bf16" */
const char *dtype_amp_enum(DType t);     /* "AMP_F32" */
int dtype_size(DType t);
DTypeCategory dtype_category(DType t);
bool dtype_is_float(DType t);   /* real floating only: complex is its own category, as in PyTorch */
bool dtype_is_complex(DType t);
DType dtype_to_complex(DType t); /* f32 (and narrower) -> c64, f64 -> c128; complex unchanged */
DType dtype_to_real(DType t);    /* c64 -> f32, c128 -> f64; real unchanged */
/* torch.promote_types: bf16 with f16 gives f32. */
DType dtype_promote(DType a, DType b);

/* ---- shape.c: symbolic dims as polynomials ---------------------------- */

/* A model's symbolic dims (B, T...) are numbered 0..n-1; a dim or a size is
 * a polynomial in them with integer coefficients, normalised so that two
 * equal polynomials compare equal term by term. */
#define MAX_SYMS 16
#define MAX_DIMS 8
#define MAX_TERMS 1024 /* terms of one dim or size polynomial */

typedef struct Term {
    int64_t coef;
    uint8_t pow[MAX_SYMS];
} Term;

typedef struct Poly {
    int nterms;
    Term *terms; /* sorted by exponent vector, no zero coefficients */
} Poly;

typedef struct Shape {
    int ndim;
    Poly *dims[MAX_DIMS];
} Shape;

Poly *poly_const(Ctx *c, int64_t v);
Poly *poly_sym(Ctx *c, int sym);
/* These return NULL when a coefficient overflows int64. */
Poly *poly_add(Ctx *c, const Poly *a, const Poly *b);
Poly *poly_sub(Ctx *c, const Poly *a, const Poly *b);
Poly *poly_mul(Ctx *c, const Poly *a, const Poly *b);
bool poly_equal(const Poly *a, const Poly *b);
bool poly_is_const(const Poly *p, int64_t *value);
/* A C expression for p, with symbol names from `names`. */
char *poly_to_c(Ctx *c, const Poly *p, const char *const *names);
Poly *shape_numel(Ctx *c, const Shape *s); /* NULL on overflow */
char *shape_to_string(Ctx *c, const Shape *s, const char *const *names);
bool shape_equal(const Shape *a, const Shape *b);

/* ---- literal.c: exact literals ----------------------------------------- */

typedef enum { LIT_EXACT, LIT_INEXACT, LIT_SUBNORMAL, LIT_UNDERFLOW, LIT_OVERFLOW } LiteralRounding;
/* Round decimal literal text once, to nearest even, into a binary format
 * with `precision` significand bits and normal exponents emin..emax. */
LiteralRounding literal_round(const char *text, int precision, int emin, int emax, double *out);
LiteralRounding literal_to_dtype(const char *text, DType t, double *out);

/* ---- ops.c: the op table (ops.def) ------------------------------------ */

/* The kinds of argument an op signature can name (PyTorch's schema types). */
typedef enum {
    ARG_TENSOR,           /* Tensor */
    ARG_TENSOR_OPT,       /* Tensor? (default None) */
    ARG_TENSOR_OR_SCALAR, /* Tensor or a number: the other operand of add */
    ARG_INT,
    ARG_FLOAT,
    ARG_BOOL,
    ARG_STR,
    ARG_DTYPE_OPT, /* ScalarType? dtype=None */
    ARG_SCALAR,    /* Scalar, Scalar?: a number */
    ARG_INT_LIST,  /* int[]: one int literal stands for all of them, as PyTorch's int[2] */
} ArgKind;

typedef struct OpParam {
    const char *name;
    ArgKind kind;
    bool keyword_only;
    const char *default_text; /* NULL: required; "None" for optional tensors */
} OpParam;

/* How the code generator calls the op's kernel (emit_c.c). */
typedef enum {
    FORM_CAST,
    FORM_UNARY,   /* f(n, x, y) */
    FORM_BINARY,  /* f(n, a, b, y), or _scalar / _bcast variants */
    FORM_LINEAR,
    FORM_MATMUL,
    FORM_SOFTMAX, /* f(outer, dim, inner, x, y) */
    FORM_NLL_LOSS,
    FORM_OP,      /* emit_ops.c writes the op's own call (the amprt/ part headers) */
    FORM_NONE,    /* typed, explained and drawn, but no runtime kernel yet */
} KernelForm;

typedef struct Expr Expr;
typedef bool (*InferFn)(Ctx *c, Expr *call);

enum {
    OPF_ELEMENTWISE = 1 << 0,
    OPF_DIFFERENTIABLE = 1 << 1,
    OPF_INTERNAL = 1 << 2, /* created by the compiler, not callable by name */
    /* Argument 0, 1 or 2 is indices or a condition (embedding's input,
     * where's condition, a loss's class indices): it keeps its own dtype
     * whatever the op computes in. */
    OPF_INDEX_ARG0 = 1 << 3,
    OPF_INDEX_ARG1 = 1 << 4,
    OPF_INDEX_ARG2 = 1 << 5,
    /* PyTorch's mixed-type kernels (the norms): parameters after the input
     * may stay f32 while the input is bf16 or f16. */
    OPF_MIXED_PARAMS = 1 << 6,
    OPF_INDEX_ARG3 = 1 << 7, /* ctc_loss's target_lengths */
};

typedef enum {
#define OP(ID, name, sig, infer, form, flags) OP_##ID,
#include "ops.def"
#undef OP
    OP_COUNT
} OpId;

typedef struct OpInfo {
    OpId id;
    const char *name;      /* PyTorch's name: the key of policy rows */
    const char *signature; /* PyTorch-style schema text */
    InferFn infer;
    KernelForm form;
    unsigned flags;
    OpParam *params; /* parsed from signature on first use */
    int nparams;
} OpInfo;

void ops_init(Ctx *c);
const OpInfo *op_lookup(Ctx *c, const char *name); /* NULL if unknown */
const OpInfo *op_info(Ctx *c, OpId id);
int op_param_index(const OpInfo *op, const char *name);
/* Whether operand k is an index operand (OPF_INDEX_ARG0..3). */
bool op_index_arg(const OpInfo *op, int k);

/* ---- AST (ast.c) ------------------------------------------------------ */

typedef enum {
    E_NUMBER,
    E_STRING,
    E_BOOL,
    E_DTYPE,
    E_NAME,     /* a possibly dotted name: fc1.weight */
    E_KWARG,    /* name=value, only inside argument lists */
    E_CALL,     /* op call, method call, or operator */
    E_CAST,     /* inserted by autocast and promotion, never parsed */
    E_TYPE,     /* f32[B, 64] in a declaration */
} ExprKind;

typedef struct Symbol Symbol;

typedef struct Type {
    DType dtype; /* DT_NONE: not a tensor */
    Shape shape;
} Type;

/* Why an op runs in the dtype it does (autocast.c fills it in). */
typedef struct Decision {
    DType compute;      /* dtype the kernel computes in (its output dtype) */
    const char *rule;   /* "tpu bf16 list (seed)", "not eligible: in-place" */
    const struct PolicyRow *row; /* the policy row applied, or NULL (not eligible, unlisted) */
    DType before_force; /* --force-dtype changed the op from this dtype; DT_NONE if not */
} Decision;

/* Deeper expressions are refused when parsed, so that the recursive
 * passes after the parser can never run out of stack. */
#define MAX_EXPR_DEPTH 1000

struct Expr {
    ExprKind kind;
    Loc loc;
    int depth; /* nesting depth of the subtree, for MAX_EXPR_DEPTH */
    Type type; /* typecheck: result type (dtype DT_NONE for non-tensors) */

    const char *text;  /* NUMBER literal text, STRING value, NAME, KWARG name */
    bool is_float;     /* NUMBER: written with a dot or an exponent */
    bool boolean;      /* BOOL */
    DType dtype;       /* DTYPE literal; CAST target */
    Expr *operand;     /* KWARG value; CAST operand; E_TYPE: unused */
    Vec *list;         /* CALL: arguments as written; TYPE: dims */
    Loc name_loc;      /* CALL: the op name */

    /* CALL, after resolve */
    const char *callee;
    const OpInfo *op;
    bool is_method;    /* a.addmm(b, c): the receiver is argument 0 */
    bool is_operator;  /* a + b */
    bool is_inplace;   /* a.add_(b) */
    Type *more_types;  /* an op with several results: the types after the first */
    int nmore;
    Expr *out_arg;     /* add(a, b, out=d): the destination d */
    Expr **bound;      /* one per op parameter, NULL where defaulted */
    int64_t dim;          /* softmax: the reduction dim, normalised */
    int64_t ignore_index; /* nll_loss */
    int reduction;        /* nll_loss: 0 none, 1 mean, 2 sum */
    int64_t start, step;  /* narrow, slice: the first index (normalised) and step */
    bool autocast_on;  /* inside an enabled autocast region */
    DType autocast_low;/* that region's low dtype */
    Decision decision;

    /* NAME, after resolve */
    Symbol *sym;

    /* CAST */
    const char *reason;
};

typedef enum {
    S_INPUT, S_PARAM, S_BUFFER, S_ASSIGN, S_EXPR, S_OUTPUT, S_MINIMIZE, S_AUTOCAST,
    S_AUTOCAST_SWITCH, /* autocast(enabled=...) with no body: in force until switched */
    S_MODULE,          /* module layer1.0 = BasicBlock(64, 64): expand.c */
    S_RETURN,          /* a block's result: expand.c */
    S_FOR,             /* for i in 0..2 { }: compile-time repetition, expand.c */
    S_TRAIN,           /* train { optimizer = sgd(lr=0.1) ... }: read by train.c */
} StmtKind;

typedef struct Stmt {
    StmtKind kind;
    Loc loc;
    Expr *name;   /* declarations: the declared (dotted) name */
    Expr *type;   /* declarations: E_TYPE */
    Vec *targets; /* ASSIGN: E_NAME targets */
    Expr *value;  /* ASSIGN, EXPR, MINIMIZE */
    Vec *exprs;   /* OUTPUT */
    Vec *options; /* AUTOCAST, AUTOCAST_SWITCH: arguments (enabled=, dtype=) or NULL;
                     MODULE: the block's compile-time arguments */
    Vec *body;    /* AUTOCAST, FOR, TRAIN */
    Expr *block_name; /* MODULE */
    Expr *lo, *hi;    /* FOR: the range lo..hi, hi excluded */
    Loc keyword_loc;
    Symbol *sym;  /* declarations, after resolve */
} Stmt;

/* @autocast or @autocast(options) before a model or block. */
typedef struct Decorator {
    Vec *options; /* NULL for a bare @autocast */
    Loc loc;
} Decorator;

typedef struct Model {
    Expr *name;
    Vec *dims; /* E_NAME: symbolic dim parameters */
    Vec *body;
    Loc loc;
    Vec *decorators; /* Decorator, or NULL */
} Model;

/* A parameter of a block: a tensor (x), or a compile-time int (stride: int = 1). */
typedef struct BlockParam {
    Expr *name;
    bool is_int;
    Expr *default_value; /* NULL: required */
} BlockParam;

/* A reusable block: its own params and buffers, instantiated under a
 * dotted name by `module`, inlined at each call by expand.c. */
typedef struct Block {
    Expr *name;
    Vec *params; /* BlockParam */
    Vec *body;
    Loc loc;
    Vec *decorators;
} Block;

typedef struct Parser {
    Ctx *ctx;
    const SourceFile *file;
    Vec *models;
    Vec *blocks;  /* Block */
    Vec *imports; /* E_STRING: the import paths, with their locations */
    bool too_deep_reported;
} Parser;

/* The lexer's state (grammar/lexer.l). */
typedef struct Lexer {
    Ctx *ctx;
    const SourceFile *file;
    size_t read_pos;  /* how much of the text flex has been given */
    uint32_t offset;  /* byte offset of the next token */
} Lexer;

Expr *new_name(Parser *p, const char *text, Loc loc);
Expr *dotted_append(Parser *p, Expr *head, Expr *tail, Loc loc);
Expr *new_number(Parser *p, const char *text, bool is_float, Loc loc);
Expr *new_string(Parser *p, const char *text, Loc loc);
Expr *new_bool(Parser *p, bool value, Loc loc);
Expr *new_dtype_lit(Parser *p, DType t, Loc loc);
Expr *new_type(Parser *p, DType t, Vec *dims, Loc loc);
Expr *new_call(Parser *p, Expr *callee, Vec *args, Loc loc);
Expr *new_method_call(Parser *p, Expr *receiver, Expr *method, Vec *args, Loc loc);
Expr *new_member(Parser *p, Expr *object, Expr *member, Loc loc);
Expr *new_binary(Parser *p, const char *op, Expr *lhs, Expr *rhs, Loc op_loc, Loc loc);
Expr *new_unary(Parser *p, const char *op, Expr *operand, Loc op_loc, Loc loc);
Expr *new_keyword_arg(Parser *p, Expr *name, Expr *value, Loc loc);
Expr *new_cast(Ctx *c, Expr *operand, DType to, const char *reason);
Stmt *new_decl(Parser *p, StmtKind kind, Expr *name, Expr *type, Loc loc);
Stmt *new_assign(Parser *p, Vec *targets, Expr *value, Loc loc);
Stmt *new_expr_stmt(Parser *p, Expr *value, Loc loc);
Stmt *new_output(Parser *p, Vec *exprs, Loc loc);
Stmt *new_minimize(Parser *p, Expr *value, Loc loc);
Stmt *new_train(Parser *p, Vec *body, Loc loc, Loc keyword_loc);
Stmt *new_autocast(Parser *p, Vec *options, Vec *body, Loc loc, Loc keyword_loc);
Model *new_model(Parser *p, Expr *name, Vec *dims, Vec *body, Loc loc);
Block *new_block(Parser *p, Expr *name, Vec *params, Vec *body, Loc loc);
BlockParam *new_block_param(Parser *p, Expr *name, Expr *type, Expr *default_value);
Expr *new_template(Parser *p, Expr *name, Loc loc);
Vec *add_decorator(Parser *p, Vec *decorators, Vec *options, Loc loc);
Stmt *new_autocast_switch(Parser *p, Vec *options, Loc loc);
Stmt *new_module_decl(Parser *p, Expr *name, Expr *block_name, Vec *args, Loc loc);
Stmt *new_return(Parser *p, Expr *value, Loc loc);
Stmt *new_for(Parser *p, Expr *var, Expr *lo, Expr *hi, Vec *body, Loc loc);
void parser_add_model(Parser *p, Model *m, Vec *decorators);
void parser_add_block(Parser *p, Block *b, Vec *decorators);
void parser_add_import(Parser *p, const char *path, Loc loc);
void report_syntax_error(Parser *p, Loc loc, const char *found, bool at_end,
                         const char *const *expected, int nexpected);

/* ---- resolve.c: symbols ----------------------------------------------- */

typedef enum { SYM_DIM, SYM_INPUT, SYM_PARAM, SYM_BUFFER, SYM_LOCAL } SymbolKind;

struct Symbol {
    SymbolKind kind;
    const char *name; /* dotted for params: "fc1.weight" */
    Loc loc;
    int index;        /* SYM_DIM: its number in the model's dims */
    Type type;        /* after typecheck */
    Expr *value;      /* SYM_LOCAL: the defining expression */
    Stmt *decl;       /* declarations */
    struct Value *ir; /* lower.c: the IR value it names */
};

/* ---- the compilation context ------------------------------------------ */

typedef enum { TARGET_TPU, TARGET_GPU, TARGET_CPU, TARGET_COUNT } Target;

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
} Policy;

const char *policy_class_name(PolicyClass cls);
const char *target_name(Target t);
bool target_from_name(const char *name, Target *t);
bool parse_policy(Ctx *c, const SourceFile *f, Policy *pol);
const PolicyRow *policy_find(const Policy *pol, const char *op);
/* Add a row, or replace the op's row (--autocast-op: the last word wins). */
void policy_put(Ctx *c, Policy *pol, PolicyRow *row);

typedef struct Options {
    const char *input_path;  /* "-" for stdin */
    const char *output_path; /* "-" for stdout */
    const char *header_path; /* NULL: beside the output, .h */
    const char *prefix;      /* NULL: from the model name */
    const char *policy_path; /* --policy FILE, or NULL for the built-in one */
    const char *include_dirs[64]; /* -I DIR, searched in order for imports */
    int ninclude_dirs;
    bool autocast_all;       /* --autocast: the whole model in an autocast region */
    bool line_directives;    /* -g: #line directives back to the .amp source */
    bool warnings_are_errors; /* -Werror */
    bool no_warnings;         /* -w */
    const char *disabled_warnings[32]; /* -Wno-CLASS */
    int ndisabled_warnings;
    int color;                /* -fdiagnostics-color: 0 auto, 1 always, 2 never */
    Target target;
    const char *dump_pass;   /* --dump=PASS: print the IR after PASS */
    int argc;                /* the command line, for the provenance header */
    char **argv;
    /* Explaining and steering autocast (issue 4; main.c's autocast block). */
    int explain;                   /* EXPLAIN_NONE, EXPLAIN_TEXT, EXPLAIN_JSON */
    int emit;                      /* EMIT_C, EMIT_DOT, EMIT_NOTHING (--explain alone) */
    const char *autocast_ops[64];  /* --autocast-op NAME=VALUE, in command-line order */
    int nautocast_ops;
    DType autocast_dtype;          /* --autocast-dtype; DT_NONE: the policy's low dtype */
    DType force_dtype;             /* --force-dtype; DT_NONE: off */
    /* --emit=check compiles the model twice; the second time with this
     * set: every floating value in f64, autocast's decisions overridden
     * (the reference evaluation the first is measured against). */
    bool reference_f64;
    const char *embed_weights; /* --embed-weights FILE: parameters as const arrays */
    bool no_fuse;              /* --no-fuse: fuse.c groups nothing */
} Options;

typedef struct Graph Graph;

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

struct Ctx {
    Arena *arena;
    const Options *opts;
    FILE *diag_out; /* where diagnostics go (stderr; a buffer in tests) */
    int nerrors, nwarnings;
    bool io_error; /* a file could not be read: exit EXIT_IO, not EXIT_INPUT_ERROR */
    bool autocast_ran; /* typecheck leaves dtype mismatches under autocast to it */
    const OpInfo *ops; /* OP_COUNT entries */
    StrMap *op_by_name; /* callable ops by name: one lookup per call */
    Policy *policy;
    TrainConfig *train; /* NULL: the model is only inferred */

    /* The model being compiled. */
    SourceFile *main_file;
    Model *model;
    Vec *blocks; /* Block: of the main file and every imported one */
    const char *sym_names[MAX_SYMS]; /* symbolic dims, by index */
    int nsyms;
    Vec *symbols; /* every Symbol, in declaration order */
    Vec *deps;    /* paths of every file read (not stdin): the depfile's prerequisites */
    Graph *graph;
    Graph *train_graph; /* the training step's graph (forward and backward), or NULL */
};

Ctx *ctx_new(const Options *opts, FILE *diag_out);
void ctx_free(Ctx *c);

/* ---- the passes, in pipeline order ------------------------------------ */

SourceFile *source_from_text(Ctx *c, const char *name, const char *text, size_t len);
/* Read a whole file ("-" is stdin); reports and returns NULL on failure. */
SourceFile *source_read(Ctx *c, const char *path);
bool parse_file(Ctx *c, SourceFile *f);   /* parse.c: c->model, c->blocks; imports */
bool expand(Ctx *c);                      /* expand.c: blocks, modules, for, inlined */
bool resolve(Ctx *c);                     /* resolve.c */
bool typecheck(Ctx *c);                   /* typecheck.c */
bool load_policy(Ctx *c);                 /* policy.c */
bool autocast(Ctx *c);                    /* autocast.c */
bool read_training(Ctx *c);               /* train.c: c->train from the train { } section */
bool lower(Ctx *c);                       /* lower.c: sets c->graph */
bool autodiff(Ctx *c);                    /* autodiff.c: the backward nodes (training only) */
bool optimize(Ctx *c);                    /* optimize.c */
bool fuse(Ctx *c);                        /* fuse.c */
bool memplan(Ctx *c);                     /* memplan.c */
typedef struct Output {
    Buf c_file, h_file;
    const char *header_name; /* what the .c #includes */
} Output;
bool emit_c(Ctx *c, Output *out);         /* emit_c.c */
const char *model_prefix(Ctx *c);         /* emit_c.c: --prefix, or the model name in lower case */

/* driver.c: the whole pipeline.  Returns an EXIT_* code; on EXIT_OK, `out`
 * holds the generated files (not yet written anywhere). */
int ampc_compile(Ctx *c, SourceFile *src, Output *out);

/* Type rules shared by typecheck and autocast (typecheck.c). */
bool infer_call(Ctx *c, Expr *call);
/* the rules of the ops in amprt/more.h (typecheck.c) */
bool infer_rnn_cell(Ctx *c, Expr *call);
bool infer_max_unpool(Ctx *c, Expr *call);
bool infer_quantile(Ctx *c, Expr *call);
bool infer_linalg_more(Ctx *c, Expr *call);
bool infer_ctc_loss(Ctx *c, Expr *call);
int rnn_cell_gates(OpId id);
/* complex.c: the complex-valued ops' rules, and the gate keeping complex
 * operands out of every other op (called by infer_call) */
bool infer_fft(Ctx *c, Expr *call);
bool infer_stft(Ctx *c, Expr *call);
bool infer_polar(Ctx *c, Expr *call);
bool infer_complex_view(Ctx *c, Expr *call);
bool infer_complex_part(Ctx *c, Expr *call);
bool infer_linalg_eig(Ctx *c, Expr *call);
bool op_takes_complex(OpId id);
bool complex_operands_ok(Ctx *c, Expr *call);
DType complex_operand_dtype(const Expr *call, int i, DType result);
typedef enum { FFT_C2C, FFT_R2C, FFT_C2R } FftKind;
FftKind fft_kind(OpId id);
int fft_norm_code(const char *s); /* "backward" 0, "ortho" 1, "forward" 2, else -1 */
int fft_plan_dims(Ctx *c, Expr *call, int ndim, int *dims, int64_t *lens);
int stft_pad_mode_code(const char *s); /* constant 0, reflect 1, replicate 2, circular 3 */
bool stft_params(Ctx *c, Expr *call, int64_t *n_fft, int64_t *hop, int64_t *win, int64_t *padded, bool *onesided);
/* numpy broadcasting of two shapes, reported at call (typecheck.c) */
bool broadcast_shapes(Ctx *c, Expr *call, const Shape *a, const Shape *b, Shape *out);
bool type_fits(Ctx *c, const Type *t, Loc loc);
const char *type_to_string(Ctx *c, const Type *t);
int reduction_code(const char *s); /* "none" 0, "mean" 1, "sum" 2, else -1 */
/* An integer literal's exact value (GMP); reports one past 2^63 - 1. */
bool int_literal(Ctx *c, Expr *e, int64_t *out);
/* A typechecked call's non-tensor arguments, or their defaults (typecheck.c;
 * for the code generator, after typecheck has validated them). */
Expr *arg_named(Expr *call, const char *name);
int64_t arg_int(Ctx *c, Expr *call, const char *name, int64_t dflt);
bool arg_bool(Ctx *c, Expr *call, const char *name, bool dflt);
const char *arg_str(Ctx *c, Expr *call, const char *name, const char *dflt);
double arg_number(Ctx *c, Expr *call, const char *name, const char *dflt, DType t);
int arg_int_list(Ctx *c, Expr *call, const char *name, int64_t *out); /* int... varargs */
/* torch, F, torch.nn.functional: prefixes that name no value (resolve.c). */
bool is_torch_namespace(const char *name);

/* ---- IR (ir.c) -------------------------------------------------------- */

typedef enum { V_INPUT, V_PARAM, V_BUFFER, V_TEMP } ValueKind;

typedef struct Node Node;

/* A GRAD node computes one gradient per forward operand that needs one:
 * of the six operands it reads (in[1..6]), and lstm_cell's seventh, b_hh
 * (autodiff.c), so every operand of an unrolled lstm step can train. */
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

struct Node {
    int id;
    const OpInfo *op;
    Value *in[8];         /* by parameter position; NULL for non-tensor parameters */
    int nin;
    Value *out;
    Value *more_out[MAX_NODE_GRADS - 1]; /* the results after the first, of ops with several
                                          * (a GRAD node's: one per operand needing a gradient) */
    int nmore;
    Value *scratch;       /* working memory the kernel needs, live during the node only */
    Node *fwd;            /* GRAD: the forward node differentiated (NULL: the loss seed) */
    int grad_input[MAX_NODE_GRADS]; /* GRAD: which of fwd's inputs out, more_out[0..] are gradients of */
    Value *dy_more[3];    /* GRAD: the gradients of fwd's more_out[0..] (NULL: none flows); in[0] may then be NULL */
    Scalar scalar;        /* FORM_BINARY with a scalar operand */
    bool scalar_first;    /* 2 - x: the scalar is the left operand */
    int64_t dim;          /* softmax: normalised reduction dim */
    int64_t ignore_index; /* nll_loss */
    int reduction;        /* nll_loss: 0 none, 1 mean, 2 sum */
    Loc loc;              /* the source expression */
    const char *why;      /* the dtype decision (Decision.rule), or cast reason */
    bool dead;
    Expr *src;            /* the call or cast it was lowered from; NULL for output copies */
    /* fuse.c: a convolution and the eval batch_norm, add and relu after it
     * run as one kernel call, made where the group's last node stands. */
    struct Node *fused[4];   /* on the last node: conv, batch_norm, add, relu (NULL: not in the group) */
    struct Node *absorbed_by; /* on the others: the last node, whose call computes this one */
    bool fused_raw;          /* on the last node: the convolution's own result is kept too (post.raw:
                              * the training step's batch_norm gradient reads it) */
    /* fuse.c: a cross_entropy whose gradient node computes the loss too
     * (amp_cross_entropy_with_grad_<T>); the forward is absorbed_by it. */
    struct Node *with_forward; /* on the GRAD node: the cross_entropy */
    /* fuse.c: a linear whose only reader is a relu, computed by the relu's
     * call (amp_linear_relu_<T>); the linear is absorbed_by the relu. */
    struct Node *fused_linear; /* on the relu */
    /* fuse.c: a linear's gradient node whose input gradient is read only by
     * the gradient of the relu that made that input: the product is masked
     * in its epilogue (amp_gemm_relu_backward_<T>) and written as the relu
     * gradient's result; that node is absorbed_by this one. */
    struct Node *relu_grad; /* on the linear's or max_pool's GRAD node */
};

/* Every value a node reads, for the passes that walk them (liveness,
 * dead code, printers): in[0..nin), then a GRAD node's dy_more, which must
 * stay alive until it runs as much as its inputs.  Entries may be NULL. */
/* fuse.c: the residual operand of a fused group's add (NULL: no add). */
Value *fused_residual(const Node *last);

static inline int node_nreads(const Node *n) { return n->nin + 3; }
static inline Value *node_read(const Node *n, int k) { return k < n->nin ? n->in[k] : n->dy_more[k - n->nin]; }

struct Graph {
    Vec *values;  /* every Value, by id */
    Vec *nodes;   /* schedule order */
    Vec *inputs;  /* V_INPUT, declaration order */
    Vec *params;  /* V_PARAM, declaration order */
    Vec *outputs; /* Values the forward function writes out */
    Value *loss;  /* the minimize target, or NULL */
    Vec *grads;   /* autodiff: the parameters that have a gradient (Value.grad), in order; NULL when not training */
    /* memplan */
    int nslots;
    Vec *slot_sizes; /* per slot: Vec of Poly* in bytes; the slot is their max */
};

Value *ir_new_value(Ctx *c, ValueKind kind, Type type, const char *name);
Node *ir_new_node(Ctx *c, const OpInfo *op, Loc loc);
void ir_dump(Ctx *c, FILE *out);
bool ir_verify(Ctx *c, const char *after_pass);
Poly *value_bytes(Ctx *c, const Value *v); /* memplan.c */
/* The scratch buffer node n's kernel needs, dtype DT_NONE for none (emit_ops.c). */
Type op_scratch_type(Ctx *c, const Node *n);
Type complex_scratch_type(Ctx *c, const Node *n); /* emit_complex.c: the complex ops' */
/* The scratch a GRAD node's kernels need (emit_grad.c). */
Type grad_scratch_type(Ctx *c, const Node *n);
/* NULL if emit_grad.c can differentiate node n, else the error to report. */
const char *grad_rule_missing(Ctx *c, const Node *n);
/* NULL if node n's rule gives operand k a gradient, else the error to report
 * when that operand needs one (emit_grad.c). */
const char *grad_input_missing(Ctx *c, const Node *n, int k);
/* The bits of v, exactly representable in bf16 or f16 (literal.c). */
uint16_t half_bits(double v, DType t);

/* ---- autocast made visible and steerable (issue 4) ----------------------
 * explain.c prints every op's dtype decision after memplan (--explain);
 * dot.c draws the planned graph for Graphviz (--emit=dot); autocast.c
 * applies the command-line overrides to the policy before deciding. */
enum { EXPLAIN_NONE, EXPLAIN_TEXT, EXPLAIN_JSON };
enum { EMIT_C, EMIT_DOT, EMIT_CHECK, EMIT_NOTHING };

bool explain(Ctx *c);                     /* explain.c: a no-op without --explain */
bool emit_dot(Ctx *c, Output *out);       /* dot.c: the graph, into out->c_file */
/* check.c: the model, its f64 reference evaluation and a harness comparing
 * them, as one C program in out->c_file (--emit=check). */
bool emit_check(Ctx *c, Output *out);
/* " --autocast-op relu=f32 --force-dtype bf16": the options that changed the
 * decisions, for provenance headers (empty when none were given). */
const char *autocast_options_text(Ctx *c);
/* The policy key of a call: "__matmul__" for a @ b, "cross_entropy_loss" for
 * cross_entropy (PyTorch's aten name), else the op's name (autocast.c). */
const struct PolicyRow *policy_row_for(Ctx *c, const Expr *call);

#endif
