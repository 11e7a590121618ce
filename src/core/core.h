/* core.h: what every layer of the compiler shares.
 *
 * The arena and its containers, source files and diagnostics, dtypes,
 * symbolic shapes, exact literals, the op table (ops.def) and the
 * compilation context.  Nothing here knows the syntax tree, the IR or
 * the C emitter: the layers above (front.h, middle.h, back.h) depend on
 * this header, never the other way.
 *
 * Memory: everything a compilation allocates comes from its arena and dies
 * with it (arena.c); allocation failure aborts.  Errors in the user's input
 * go through error_at() and are counted; a broken compiler invariant goes
 * through ICE() and exits with EXIT_INTERNAL.  The two never mix.
 */
#ifndef AMPC_CORE_H
#define AMPC_CORE_H


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
void buf_append(Buf *b, const char *s, size_t n);
void buf_printf(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- diag.c: source files and diagnostics ----------------------------- */

typedef struct SourceFile {
    const char *name; /* as given on the command line; "<stdin>" for - */
    const char *text; /* NUL-terminated */
    size_t len;
    /* byte offset of each line's first byte, line_starts[0] == 0: a
     * location's line is one binary search, however many ops print one */
    const uint32_t *line_starts;
    uint32_t nlines;
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

/* Out of memory is the environment's limit, not a bug: exit EXIT_IO with a
 * message (arena.c).  Every allocator of the compiler ends here. */
_Noreturn void out_of_memory(size_t size);

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
/* GMP allocates through the compiler's out-of-memory handling (ctx_new). */
void literal_init(void);
LiteralRounding literal_round(const char *text, int precision, int emin, int emax, double *out);
LiteralRounding literal_to_dtype(const char *text, DType t, double *out);


typedef struct Type {
    DType dtype; /* DT_NONE: not a tensor */
    Shape shape;
} Type;

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

typedef struct Expr Expr;

enum {
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
    /* The result is indices or truth values (argmax's i64, all's bool):
     * the operands keep their own dtype, which picks the kernel. */
    OPF_INDEX_RESULT = 1 << 8,
    /* A `Tensor|Scalar` operand given as a number is kept exact in
     * Node.scalar (add, sub, mul, div: 2 - x is rsub), not as an attribute. */
    OPF_SCALAR_OPERAND = 1 << 9,
    /* The kernel returns an amp_status the caller checks (indices out of
     * range, a singular matrix, no convergence); _IF_INDEX: only when
     * operand 1 is an index tensor (class targets, integer indices). */
    OPF_STATUS = 1 << 10,
    OPF_STATUS_IF_INDEX = 1 << 11,
    /* The result is operand 0's elements in the same order, another shape
     * only (reshape, view, flatten, squeeze, unsqueeze): it may share the
     * operand's buffer (memplan.c) instead of a copy. */
    OPF_VIEW = 1 << 12,
};

typedef enum {
#define OP(ID, name, sig, infer, emit, grad, flags) OP_##ID,
#include "ops.def"
#undef OP
    OP_COUNT
} OpId;

typedef struct OpInfo {
    OpId id;
    const char *name;      /* PyTorch's name: the key of policy rows */
    const char *signature; /* PyTorch-style schema text */
    unsigned flags;
    /* The names of the back end's functions for the op, from its row's emit
     * and grad columns: they say what exists to the passes that cannot call
     * them.  NULL: no runtime kernel yet (typed, explained and drawn, but
     * not emitted), or no gradient (a model training through it is refused). */
    const char *emit_rule;
    const char *grad_rule;
    OpParam *params; /* parsed from signature on first use */
    int nparams;
    /* a `Tensor...` parameter: its copies are params[vararg_first ..
     * vararg_first + vararg_count) (vararg_first -1: none) */
    int vararg_first, vararg_count;
} OpInfo;

void ops_init(Ctx *c);
const OpInfo *op_lookup(Ctx *c, const char *name); /* NULL if unknown */
/* op itself, or, for a call passing more tensors than its `Tensor...`
 * parameter has copies, a copy of op with one copy per tensor */
const OpInfo *op_for_call(Ctx *c, const OpInfo *op, int npositional);
const OpInfo *op_info(Ctx *c, OpId id);
int op_param_index(const OpInfo *op, const char *name);
/* Whether operand k is an index operand (OPF_INDEX_ARG0..3). */
bool op_index_arg(const OpInfo *op, int k);


/* ---- the compilation context ------------------------------------------ */

typedef enum { TARGET_TPU, TARGET_GPU, TARGET_CPU, TARGET_COUNT } Target;

enum { EXPLAIN_NONE, EXPLAIN_TEXT, EXPLAIN_JSON };
enum { EMIT_C, EMIT_DOT, EMIT_CHECK, EMIT_MAIN, EMIT_NOTHING };

typedef struct Options {
    const char *input_path;  /* "-" for stdin */
    const char *output_path; /* "-" for stdout */
    const char *header_path; /* NULL: beside the output, .h */
    const char *prefix;      /* NULL: from the model name */
    const char *policy_path; /* --policy FILE, or NULL for the built-in one */
    const char *include_dirs[64]; /* -I DIR, searched in order for imports */
    int ninclude_dirs;
    const char *share_dir;   /* ../share/ampc beside the executable, if it exists: searched after -I */
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
    bool f32_outputs;          /* --f32-outputs: bf16/f16 outputs cast to f32 inside the model */
    bool dot_params;           /* --dot-params: --emit=dot draws parameters, buffers and their casts */
} Options;

typedef struct Graph Graph;
typedef struct Model Model;
typedef struct Policy Policy;
typedef struct TrainConfig TrainConfig;

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
    size_t source_bytes; /* read so far from all sources, against MAX_SOURCE_BYTES */
    Graph *graph;
    Graph *train_graph; /* the training step's graph (forward and backward), or NULL */
    /* The module instance whose inlined code a pass is at (layer1.0), or
     * NULL: an error inside a block is reported once per source location,
     * with a note per instance (diag.c). */
    const char *instance;
    StrMap *error_sites; /* "file:begin:end" -> the instance first reported there */
};

Ctx *ctx_new(const Options *opts, FILE *diag_out);
void ctx_free(Ctx *c);

SourceFile *source_from_text(Ctx *c, const char *name, const char *text, size_t len);
/* Read a whole file ("-" is stdin); reports and returns NULL on failure. */
SourceFile *source_read(Ctx *c, const char *path);
/* The bits of v, exactly representable in bf16 or f16 (literal.c). */
uint16_t half_bits(double v, DType t);

#endif
