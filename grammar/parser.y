/* parser.y: the grammar of the .amp model language.
 *
 * Pure (reentrant) parser with byte-range locations.  Every action is a
 * single constructor call from ast.c: checks, name lookup and folding are
 * plain C in the passes, never grammar actions.  Precedence follows Python
 * (and so PyTorch), loosest first: comparisons (not chained: `a < b < c`
 * is a syntax error), |, &, + -, * / // % @, unary - and ~, then ** (right
 * associative, so -x ** 2 is -(x ** 2)).  `%expect 0`: a conflict is
 * resolved with precedence or by restructuring, never tolerated.
 *
 * Statements need no terminator: a statement starts with a keyword or a
 * name, and no expression can continue with either, so the grammar stays
 * LALR(1) without newlines in it.  That is also why a call statement
 * (a.add_(b)) must start with a name: one starting with '(' would read as
 * a call of the previous statement's last name.  ';' is accepted and ignored.
 */
%define api.pure full
%define parse.error custom
%locations
%expect 0

%code requires {
#include "ampc.h"
typedef Loc YYLTYPE;
#define YYLTYPE_IS_DECLARED 1
/* A rule's location spans its first through last symbol. */
#define YYLLOC_DEFAULT(Cur, Rhs, N)                          \
    do {                                                     \
        if (N) {                                             \
            (Cur).file = YYRHSLOC(Rhs, 1).file;              \
            (Cur).begin = YYRHSLOC(Rhs, 1).begin;            \
            (Cur).end = YYRHSLOC(Rhs, N).end;                \
        } else {                                             \
            (Cur).file = YYRHSLOC(Rhs, 0).file;              \
            (Cur).begin = (Cur).end = YYRHSLOC(Rhs, 0).end;  \
        }                                                    \
    } while (0)
typedef void *yyscan_t;
}

%code provides {
int yylex(YYSTYPE *lval, YYLTYPE *lloc, yyscan_t scanner);
}

%code {
static void yyerror(YYLTYPE *loc, yyscan_t scanner, Parser *p, const char *msg);
}

%param {yyscan_t scanner}
%parse-param {Parser *p}

%union {
    const char *text;
    bool boolean;
    DType dtype;
    Expr *expr;
    Stmt *stmt;
    Model *model;
    Block *block;
    BlockParam *param;
    Vec *list;
}

%token MODEL "model" INPUT "input" PARAM "param" BUFFER "buffer"
%token OUTPUT "output" MINIMIZE "minimize" AUTOCAST "autocast"
%token BLOCK "block" MODULE "module" RETURN "return" FOR "for" IN "in" IMPORT "import" TRAIN "train"
%token DOTDOT ".." ELLIPSIS "..."
%token POW "**" FLOORDIV "//" EQ "==" NE "!=" LE "<=" GE ">="
%token <text> IDENT "name" INT_LIT "integer" FLOAT_LIT "number" STRING_LIT "string"
%token <boolean> BOOL_LIT "true or false"
%token <dtype> DTYPE "dtype"
%token <text> BAD_NUMBER "malformed number"
%token UNTERMINATED_STRING "unterminated string" BAD_CHAR "invalid character"
%token UNTERMINATED_NAME "unterminated quoted name" BAD_NAME "malformed quoted name"

%type <model> model
%type <list> stmts names targets args_opt args exprs decorators block_params subscripts
%type <block> block
%type <param> block_param
%type <stmt> stmt
%type <expr> expr postfix primary arg type dotted name subscript slice_part

%nonassoc '<' '>' EQ NE LE GE
%left '|'
%left '&'
%left '+' '-'
%left '*' '/' '@' FLOORDIV '%'
%precedence UMINUS
%right POW

%%

program
    : %empty
    | program decorators model      { parser_add_model(p, $3, $2); }
    | program decorators block      { parser_add_block(p, $3, $2); }
    | program "import" STRING_LIT   { parser_add_import(p, $3, @3); }
    ;

/* @autocast and @autocast(dtype=bf16) before a model or block: the
 * decorator form, autocast over the whole body */
decorators
    : %empty                        { $$ = NULL; }
    | decorators '@' "autocast"     { $$ = add_decorator(p, $1, NULL, @3); }
    | decorators '@' "autocast" '(' args_opt ')'
                                    { $$ = add_decorator(p, $1, $5, @3); }
    ;

model
    : "model" name '(' names ')' '{' stmts '}'
                                    { $$ = new_model(p, $2, $4, $7, @$); }
    ;

block
    : "block" name '(' block_params ')' '{' stmts '}'
                                    { $$ = new_block(p, $2, $4, $7, @$); }
    ;

block_params
    : %empty                        { $$ = vec_new(p->ctx); }
    | block_param                   { $$ = vec_push(p->ctx, vec_new(p->ctx), $1); }
    | block_params ',' block_param  { $$ = vec_push(p->ctx, $1, $3); }
    ;

/* x (a tensor), or channels: int, or stride: int = 1 */
block_param
    : name                          { $$ = new_block_param(p, $1, NULL, NULL); }
    | name ':' name                 { $$ = new_block_param(p, $1, $3, NULL); }
    | name ':' name '=' expr        { $$ = new_block_param(p, $1, $3, $5); }
    /* widths: int[], a list of compile-time ints: widths[0], len(widths) */
    | name ':' name '[' ']'         { $$ = new_block_list_param(p, $1, $3, NULL); }
    | name ':' name '[' ']' '=' expr
                                    { $$ = new_block_list_param(p, $1, $3, $7); }
    ;

stmts
    : %empty                        { $$ = vec_new(p->ctx); }
    | stmts stmt                    { $$ = vec_push(p->ctx, $1, $2); }
    | stmts ';'                     { $$ = $1; }
    ;

stmt
    : "input" name ':' type         { $$ = new_decl(p, S_INPUT, $2, $4, @$); }
    | "param" dotted ':' type       { $$ = new_decl(p, S_PARAM, $2, $4, @$); }
    | "buffer" dotted ':' type      { $$ = new_decl(p, S_BUFFER, $2, $4, @$); }
    | targets '=' expr              { $$ = new_assign(p, $1, $3, @$); }
    | name '(' args_opt ')'         { $$ = new_expr_stmt(p, new_call(p, $1, $3, @$), @$); }
    | dotted '.' name '(' args_opt ')'
                                    { $$ = new_expr_stmt(p, new_method_call(p, $1, $3, $5, @$), @$); }
    | "output" exprs                { $$ = new_output(p, $2, @$); }
    | "minimize" expr               { $$ = new_minimize(p, $2, @$); }
    | "autocast" '{' stmts '}'      { $$ = new_autocast(p, NULL, $3, @$, @1); }
    | "autocast" '(' args_opt ')' '{' stmts '}'
                                    { $$ = new_autocast(p, $3, $6, @$, @1); }
    | "autocast" '(' args_opt ')'   { $$ = new_autocast_switch(p, $3, @$); }
    | "module" dotted '=' name '(' args_opt ')'
                                    { $$ = new_module_decl(p, $2, $4, $6, @$); }
    | "return" expr                 { $$ = new_return(p, $2, @$); }
    /* the training step's settings: optimizer = sgd(lr=0.1), scaler = ... */
    | "train" '{' stmts '}'         { $$ = new_train(p, $3, @$, @1); }
    | "for" name "in" expr ".." expr '{' stmts '}'
                                    { $$ = new_for(p, $2, $4, $6, $8, @$); }
    /* after a syntax error, skip to where a statement can start and go on,
     * so one run reports the errors of several statements */
    | error                         { $$ = new_expr_stmt(p, NULL, @$); }
    ;

/* Declared names may be dotted like PyTorch state_dict keys: layer1.0.conv1.weight */
dotted
    : name
    | INT_LIT                       { $$ = new_name(p, $1, @1); } /* nn.Sequential: 0.weight */
    | dotted '.' name               { $$ = dotted_append(p, $1, $3, @$); }
    | dotted '.' INT_LIT            { $$ = dotted_append(p, $1, new_name(p, $3, @3), @$); }
    | dotted '.' '{' name '}'       { $$ = dotted_append(p, $1, new_template(p, $4, @$), @$); }
    ;

type
    : DTYPE                         { $$ = new_type(p, $1, NULL, @$); }
    | DTYPE '[' ']'                 { $$ = new_type(p, $1, vec_new(p->ctx), @$); }
    | DTYPE '[' exprs ']'           { $$ = new_type(p, $1, $3, @$); }
    ;

names
    : %empty                        { $$ = vec_new(p->ctx); }
    | name                          { $$ = vec_push(p->ctx, vec_new(p->ctx), $1); }
    | names ',' name                { $$ = vec_push(p->ctx, $1, $3); }
    ;

targets
    : name                          { $$ = vec_push(p->ctx, vec_new(p->ctx), $1); }
    | targets ',' name              { $$ = vec_push(p->ctx, $1, $3); }
    ;

name
    : IDENT                         { $$ = new_name(p, $1, @1); }
    ;

exprs
    : expr                          { $$ = vec_push(p->ctx, vec_new(p->ctx), $1); }
    | exprs ',' expr                { $$ = vec_push(p->ctx, $1, $3); }
    ;

expr
    : expr '+' expr                 { $$ = new_binary(p, "add", $1, $3, @2, @$); }
    | expr '-' expr                 { $$ = new_binary(p, "sub", $1, $3, @2, @$); }
    | expr '*' expr                 { $$ = new_binary(p, "mul", $1, $3, @2, @$); }
    | expr '/' expr                 { $$ = new_binary(p, "div", $1, $3, @2, @$); }
    | expr '@' expr                 { $$ = new_binary(p, "matmul", $1, $3, @2, @$); }
    | expr FLOORDIV expr            { $$ = new_binary(p, "floor_divide", $1, $3, @2, @$); }
    | expr '%' expr                 { $$ = new_binary(p, "remainder", $1, $3, @2, @$); }
    | expr POW expr                 { $$ = new_binary(p, "pow", $1, $3, @2, @$); }
    | expr '<' expr                 { $$ = new_binary(p, "lt", $1, $3, @2, @$); }
    | expr LE expr                  { $$ = new_binary(p, "le", $1, $3, @2, @$); }
    | expr '>' expr                 { $$ = new_binary(p, "gt", $1, $3, @2, @$); }
    | expr GE expr                  { $$ = new_binary(p, "ge", $1, $3, @2, @$); }
    | expr EQ expr                  { $$ = new_binary(p, "eq", $1, $3, @2, @$); }
    | expr NE expr                  { $$ = new_binary(p, "ne", $1, $3, @2, @$); }
    | expr '&' expr                 { $$ = new_binary(p, "bitwise_and", $1, $3, @2, @$); }
    | expr '|' expr                 { $$ = new_binary(p, "bitwise_or", $1, $3, @2, @$); }
    | '-' expr %prec UMINUS         { $$ = new_unary(p, "neg", $2, @1, @$); }
    | '~' expr %prec UMINUS         { $$ = new_unary(p, "bitwise_not", $2, @1, @$); }
    | postfix
    ;

postfix
    : primary
    | postfix '.' name              { $$ = new_member(p, $1, $3, @$); }
    | postfix '.' INT_LIT           { $$ = new_member(p, $1, new_name(p, $3, @3), @$); }
    | postfix '.' '{' name '}'      { $$ = new_member(p, $1, new_template(p, $4, @$), @$); }
    | postfix '.' name '(' args_opt ')'
                                    { $$ = new_method_call(p, $1, $3, $5, @$); }
    | postfix '.' INT_LIT '(' args_opt ')'
                                    { $$ = new_method_call(p, $1, new_name(p, $3, @3), $5, @$); }
    | postfix '.' '{' name '}' '(' args_opt ')'
                                    { $$ = new_method_call(p, $1, new_template(p, $4, @$), $7, @$); }
    /* x[:, 0], x[..., 1:3], x[:, None] */
    | postfix '[' subscripts ']'    { $$ = new_subscript(p, $1, $3, @$); }
    ;

subscripts
    : subscript                     { $$ = vec_push(p->ctx, vec_new(p->ctx), $1); }
    | subscripts ',' subscript      { $$ = vec_push(p->ctx, $1, $3); }
    ;

/* an index, a slice start:stop:step (each part optional), or ... */
subscript
    : expr
    | "..."                         { $$ = new_slice(p, NULL, NULL, NULL, true, @$); }
    | slice_part ':' slice_part     { $$ = new_slice(p, $1, $3, NULL, false, @$); }
    | slice_part ':' slice_part ':' slice_part
                                    { $$ = new_slice(p, $1, $3, $5, false, @$); }
    ;

slice_part
    : %empty                        { $$ = NULL; }
    | expr
    ;

primary
    : name
    | INT_LIT                       { $$ = new_number(p, $1, false, @$); }
    | FLOAT_LIT                     { $$ = new_number(p, $1, true, @$); }
    | STRING_LIT                    { $$ = new_string(p, $1, @$); }
    | BOOL_LIT                      { $$ = new_bool(p, $1, @$); }
    | DTYPE                         { $$ = new_dtype_lit(p, $1, @$); }
    | '(' expr ')'                  { $$ = $2; }
    /* list and tuple literals: cat([a, b], dim=1), adaptive_avg_pool2d(x, (4, 4)) */
    | '[' ']'                       { $$ = new_list(p, vec_new(p->ctx), @$); }
    | '[' exprs ']'                 { $$ = new_list(p, $2, @$); }
    | '[' exprs ',' ']'             { $$ = new_list(p, $2, @$); }
    | '(' expr ',' ')'              { $$ = new_list(p, vec_push(p->ctx, vec_new(p->ctx), $2), @$); }
    | '(' expr ',' exprs ')'        { $$ = new_list(p, vec_push_front(p, $4, $2), @$); }
    | '(' expr ',' exprs ',' ')'    { $$ = new_list(p, vec_push_front(p, $4, $2), @$); }
    | INT_LIT '(' args_opt ')'      { $$ = new_call(p, new_name(p, $1, @1), $3, @$); }
    | name '(' args_opt ')'         { $$ = new_call(p, $1, $3, @$); }
    ;

args_opt
    : %empty                        { $$ = vec_new(p->ctx); }
    | args
    ;

args
    : arg                           { $$ = vec_push(p->ctx, vec_new(p->ctx), $1); }
    | args ',' arg                  { $$ = vec_push(p->ctx, $1, $3); }
    ;

arg
    : expr
    | name '=' expr                 { $$ = new_keyword_arg(p, $1, $3, @$); }
    /* every op's first parameter is PyTorch's `input`, a keyword here */
    | "input" '=' expr              { $$ = new_keyword_arg(p, new_name(p, "input", @1), $3, @$); }
    ;

%%

/* One message per syntax error, in the words a user would use: what was
 * found, and what could have come there instead (at most a few choices). */
static int yyreport_syntax_error(const yypcontext_t *pctx, yyscan_t scanner, Parser *p)
{
    enum { MAX_EXPECTED = 5 };
    yysymbol_kind_t expected[MAX_EXPECTED];
    int n = yypcontext_expected_tokens(pctx, expected, MAX_EXPECTED);
    yysymbol_kind_t found = yypcontext_token(pctx);
    (void)scanner;
    const char *expected_names[MAX_EXPECTED];
    for (int i = 0; i < n; i++)
        expected_names[i] = yysymbol_name(expected[i]);
    report_syntax_error(p, *yypcontext_location(pctx), yysymbol_name(found),
                        found == YYSYMBOL_YYEOF, expected_names, n);
    return 0;
}

/* Bison calls this only for what the custom reporter does not cover: the
 * parser stack overflowing on absurdly deep nesting. */
static void yyerror(YYLTYPE *loc, yyscan_t scanner, Parser *p, const char *msg)
{
    (void)scanner;
    error_at(p->ctx, *loc, "%s (the expression is nested too deeply)", msg);
}
