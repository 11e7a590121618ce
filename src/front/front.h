/* front.h: the front end's syntax tree and passes.
 *
 *   parse      source text -> AST                          (parse.c, ast.c, grammar/)
 *   expand     blocks, modules and for loops -> one model  (expand.c)
 *   resolve    names -> symbols, ops, bound arguments      (resolve.c)
 *
 * The middle end (middle.h) types and lowers this tree; nothing after
 * lowering reads it.
 */
#ifndef AMPC_FRONT_H
#define AMPC_FRONT_H

#include "core.h"

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
    E_LIST,     /* [a, b] or (4, 4): list: the items; only as a call argument */
    E_SUBSCRIPT,/* x[:, 0]: operand: x, list: the subscripts (typecheck rewrites it into calls) */
    E_SLICE,    /* start:stop:step inside a subscript; list: the three parts, NULL
                   where left out; boolean: it is `...` */
    E_DIM_OF,   /* x.size(d), x.shape[d]: operand: x, list[0]: d (typecheck makes it a number) */
} ExprKind;

typedef struct Symbol Symbol;



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
    unsigned dims_mask;   /* a reduction over a list of dims (sum(x, (1, 2))): bit d
                             for each dim d; dim is then -1 */
    int64_t ignore_index; /* nll_loss */
    int reduction;        /* nll_loss: 0 none, 1 mean, 2 sum */
    int64_t start, step;  /* narrow, slice: the first index (normalised) and step */
    const char *part_of; /* one of the ops a composite is written as under
                            autocast (types_composite.c): the composite ("gru_cell",
                            "gru_cell, a step of gru") */
    const OpInfo *layer; /* a step of a recurrent layer (types_rnn.c): the layer
                            op, whose policy row decides the step's dtype */
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
    const char *instance; /* inlined from a block: the instance's path (layer1.0), for diagnostics
                           * and the emitted comments */
    Loc instance_loc;     /* with instance: the model's `module` statement it descends from */
    const char *instance_root; /* with instance: the path that statement declares (layer2.0) */
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
    bool is_list;        /* int[]: a list of compile-time ints (is_int is set too) */
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
Expr *new_list(Parser *p, Vec *items, Loc loc);
Expr *new_subscript(Parser *p, Expr *object, Vec *subscripts, Loc loc);
Expr *new_slice(Parser *p, Expr *start, Expr *stop, Expr *step, bool ellipsis, Loc loc);
Vec *vec_push_front(Parser *p, Vec *v, void *item);
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
BlockParam *new_block_list_param(Parser *p, Expr *name, Expr *type, Expr *default_value);
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


bool parse_file(Ctx *c, SourceFile *f);   /* parse.c: c->model, c->blocks; imports */
bool expand(Ctx *c);                      /* expand.c: blocks, modules, for, inlined */
bool resolve(Ctx *c);                     /* resolve.c */
/* An integer literal's exact value (GMP); reports one past 2^63 - 1 (ast.c). */
bool int_literal(Ctx *c, Expr *e, int64_t *out);
/* e's operator (add, sub, mul, div, floor_divide, remainder, neg) on the
 * integers a and b, as Python computes it: // and % round down, / must be
 * exact; reports overflow and inexact or zero division (ast.c). */
bool int_operator(Ctx *c, Expr *e, int64_t a, int64_t b, int64_t *out);
/* torch, F, torch.nn.functional: prefixes that name no value (resolve.c). */
bool is_torch_namespace(const char *name);

#endif
