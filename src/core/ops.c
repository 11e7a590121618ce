/* ops.c: the op table, expanded from ops.def, and its signature parser.
 *
 * Signatures are PyTorch schema text ("Tensor input, int dim, ScalarType?
 * dtype=None") so that a row reads like the PyTorch docs; they are parsed
 * once per compilation into OpParam arrays that resolve.c binds calls to.
 * A malformed signature is a compiler bug (ICE), not a user error.
 *
 * `Type... name` is Python's *args: the parameter and copies of it take
 * the following positional arguments (cat(a, b, c), x.permute(0, 2, 1)),
 * up to MAX_DIMS ints; tensors fill the first 8 parameters, and a call
 * passing more gets an OpInfo of its own with as many copies as it has
 * tensors (op_for_call), so cat and stack take any number.  The copies
 * share the name, so name= binds the first, and error messages show the
 * signature as written.
 */
#include "core.h"

#include <string.h>

static const OpInfo op_table[OP_COUNT] = {
#define EMIT(fn) #fn
#define NO_KERNEL NULL
#define GRAD(fn) #fn
#define NO_GRAD NULL
#define OP(ID, name_, sig, infer, emit, grad, flags_)                                                          \
    [OP_##ID] = {.id = OP_##ID, .name = name_, .signature = sig, .flags = flags_, .emit_rule = emit, .grad_rule = grad},
#include "ops.def"
#undef OP
#undef EMIT
#undef NO_KERNEL
#undef GRAD
#undef NO_GRAD
};

static const struct {
    const char *text;
    ArgKind kind;
} arg_kinds[] = {
    {"Tensor", ARG_TENSOR},
    {"Tensor?", ARG_TENSOR_OPT},
    {"Tensor|Scalar", ARG_TENSOR_OR_SCALAR},
    {"int", ARG_INT},
    {"float", ARG_FLOAT},
    {"bool", ARG_BOOL},
    {"bool?", ARG_BOOL},
    {"str", ARG_STR},
    {"ScalarType?", ARG_DTYPE_OPT},
    {"Scalar", ARG_SCALAR},
    {"Scalar?", ARG_SCALAR},
    {"int?", ARG_INT},
    {"int[]", ARG_INT_LIST},
    {"int[]?", ARG_INT_LIST},
    {"float?", ARG_FLOAT},
};

enum { MAX_PARAMS = 24 };

static void parse_signature(Ctx *c, OpInfo *op)
{
    char *sig = arena_strdup(c->arena, op->signature);
    OpParam *params = arena_alloc(c->arena, MAX_PARAMS * sizeof *params);
    int n = 0;
    op->vararg_first = -1;
    bool keyword_only = false;
    for (char *save = NULL, *item = strtok_r(sig, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        while (*item == ' ')
            item++;
        if (strcmp(item, "*") == 0) {
            keyword_only = true;
            continue;
        }
        char *space = strchr(item, ' ');
        if (!space || n == MAX_PARAMS)
            ICE("bad signature for op %s: %s", op->name, op->signature);
        *space = '\0';
        size_t tlen = strlen(item);
        bool varargs = tlen > 3 && strcmp(item + tlen - 3, "...") == 0;
        if (varargs)
            item[tlen - 3] = '\0';
        OpParam *p = &params[n++];
        bool known = false;
        for (size_t k = 0; k < sizeof arg_kinds / sizeof arg_kinds[0]; k++) {
            if (strcmp(arg_kinds[k].text, item) == 0) {
                p->kind = arg_kinds[k].kind;
                known = true;
            }
        }
        if (!known)
            ICE("bad type '%s' in signature of op %s", item, op->name);
        char *name = space + 1;
        char *eq = strchr(name, '=');
        if (eq) {
            *eq = '\0';
            p->default_text = eq + 1;
        }
        p->name = name;
        p->keyword_only = keyword_only;
        if (varargs) {
            int copies = p->kind == ARG_TENSOR ? 8 - n : MAX_DIMS - 1;
            if (keyword_only || p->default_text || copies < 1 || n + copies > MAX_PARAMS)
                ICE("bad varargs parameter in signature of op %s", op->name);
            if (p->kind == ARG_TENSOR) {
                op->vararg_first = n - 1;
                op->vararg_count = copies + 1;
            }
            for (int k = 0; k < copies; k++) {
                params[n] = *p;
                params[n].kind = p->kind == ARG_TENSOR ? ARG_TENSOR_OPT : p->kind;
                params[n++].default_text = "None";
            }
        }
    }
    op->params = params;
    op->nparams = n;
}

void ops_init(Ctx *c)
{
    OpInfo *ops = arena_alloc(c->arena, sizeof op_table);
    memcpy(ops, op_table, sizeof op_table);
    for (int i = 0; i < OP_COUNT; i++) {
        if (!ops[i].name)
            ICE("op %d has no row in ops.def", i);
        parse_signature(c, &ops[i]);
    }
    c->ops = ops;
    c->op_by_name = strmap_new(c->arena);
    for (int i = 0; i < OP_COUNT; i++)
        if (!(ops[i].flags & OPF_INTERNAL))
            strmap_put(c->op_by_name, ops[i].name, &ops[i]);
}

const OpInfo *op_for_call(Ctx *c, const OpInfo *op, int npositional)
{
    if (op->vararg_first < 0 || npositional <= op->vararg_first + op->vararg_count)
        return op;
    int extra = npositional - (op->vararg_first + op->vararg_count);
    int last = op->vararg_first + op->vararg_count; /* the first parameter after the copies */
    OpInfo *wide = arena_alloc(c->arena, sizeof *wide);
    *wide = *op;
    wide->nparams = op->nparams + extra;
    OpParam *params = arena_alloc(c->arena, (size_t)wide->nparams * sizeof *params);
    for (int i = 0; i < last; i++)
        params[i] = op->params[i];
    for (int i = 0; i < extra; i++)
        params[last + i] = op->params[last - 1];
    for (int i = last; i < op->nparams; i++)
        params[i + extra] = op->params[i];
    wide->params = params;
    wide->vararg_count = op->vararg_count + extra;
    return wide;
}

const OpInfo *op_lookup(Ctx *c, const char *name)
{
    return strmap_get(c->op_by_name, name);
}

const OpInfo *op_info(Ctx *c, OpId id)
{
    return &c->ops[id];
}

int op_param_index(const OpInfo *op, const char *name)
{
    for (int i = 0; i < op->nparams; i++)
        if (strcmp(op->params[i].name, name) == 0)
            return i;
    return -1;
}

bool op_index_arg(const OpInfo *op, int k)
{
    static const unsigned flag[] = {OPF_INDEX_ARG0, OPF_INDEX_ARG1, OPF_INDEX_ARG2, OPF_INDEX_ARG3};
    return k >= 0 && k < 4 && (op->flags & flag[k]);
}
