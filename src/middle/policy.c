/* policy.c: autocast policies are data, one file per target.
 *
 * policies/NAME.policy are compiled into ampc (the Makefile turns them
 * into C strings, build/gen/policies.c) so an installed ampc needs no data
 * directory.  policies/<target>.policy is each target's default; another
 * built-in one is picked by name (--policy=cpu-torch1.13).  A user's own
 * file is read with --policy FILE, in the same format (docs/policies.md):
 *
 *   target  tpu              the target it describes
 *   low     bf16             the default low-precision dtype
 *   allow   bf16 f16         the low dtypes autocast(dtype=...) may pick
 *   linear  lower_precision_fp  seed: PyTorch/XLA AMP guide, TPU bf16 list
 *
 * Errors in a policy file are reported with file:line like model errors.
 */
#include "middle.h"

#include <string.h>

extern const char *const ampc_policy_names[], *const ampc_policy_texts[];
extern const int ampc_policy_count;

static const struct {
    const char *name;
    PolicyClass cls;
} classes[] = {
    {"lower_precision_fp", POL_LOWER},
    {"fp32", POL_FP32},
    {"fp32_set_opt_dtype", POL_FP32_SET_OPT_DTYPE},
    {"fp32_append_dtype", POL_FP32_APPEND_DTYPE},
    {"promote", POL_PROMOTE},
    {"banned", POL_BANNED},
};

const char *policy_class_name(PolicyClass cls)
{
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
        if (classes[i].cls == cls)
            return classes[i].name;
    return "none";
}

static const char *const target_names[TARGET_COUNT] = {"tpu", "gpu", "cpu"};

const char *target_name(Target t) { return target_names[t]; }

bool target_from_name(const char *name, Target *t)
{
    for (int i = 0; i < TARGET_COUNT; i++) {
        if (strcmp(name, target_names[i]) == 0) {
            *t = (Target)i;
            return true;
        }
    }
    return false;
}

/* Split off the next whitespace-separated word of *s. */
static char *next_word(char **s)
{
    char *p = *s;
    while (*p == ' ' || *p == '\t' || *p == '\r')
        p++;
    if (!*p)
        return NULL;
    char *w = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\r')
        p++;
    if (*p)
        *p++ = '\0';
    *s = p;
    return w;
}

bool parse_policy(Ctx *c, const SourceFile *f, Policy *pol)
{
    pol->rows = vec_new(c);
    pol->by_op = strmap_new(c->arena);
    pol->target = NULL;
    pol->low = DT_NONE;
    char *text = arena_strndup(c->arena, f->text, f->len);
    uint32_t offset = 0;
    int errors = c->nerrors;
    for (char *line = text; line; ) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        size_t len = strlen(line);
        Loc loc = {.file = f, .begin = offset, .end = offset + (uint32_t)len};
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *rest = line;
        char *key = next_word(&rest);
        if (!key) {
            /* blank or comment */
        } else if (strcmp(key, "target") == 0) {
            char *t = next_word(&rest);
            Target tg;
            if (!t || !target_from_name(t, &tg))
                error_at(c, loc, "'target' takes tpu, gpu or cpu");
            else
                pol->target = target_names[tg];
        } else if (strcmp(key, "low") == 0 || strcmp(key, "allow") == 0) {
            char *d;
            int n = 0;
            while ((d = next_word(&rest))) {
                DType t = dtype_from_name(d);
                if (t != DT_BF16 && t != DT_F16)
                    error_at(c, loc, "'%s' takes bf16 or f16, not '%s'", key, d);
                else if (key[0] == 'l')
                    pol->low = t;
                else
                    pol->allowed |= 1u << t;
                n++;
            }
            if (n == 0)
                error_at(c, loc, "'%s' needs a dtype (bf16 or f16)", key);
        } else {
            char *cls_name = next_word(&rest);
            while (*rest == ' ' || *rest == '\t')
                rest++;
            size_t rl = strlen(rest);
            while (rl && (rest[rl - 1] == ' ' || rest[rl - 1] == '\r'))
                rest[--rl] = '\0';
            PolicyRow *row = arena_alloc(c->arena, sizeof *row);
            row->op = key;
            row->source = *rest ? rest : "user policy";
            bool known = false;
            for (size_t i = 0; cls_name && i < sizeof classes / sizeof classes[0]; i++) {
                if (strcmp(classes[i].name, cls_name) == 0) {
                    row->cls = classes[i].cls;
                    known = true;
                }
            }
            if (!known) {
                error_at(c, loc, "policy row for '%s' needs a class: lower_precision_fp, fp32, "
                         "fp32_set_opt_dtype, fp32_append_dtype, promote or banned", key);
            } else {
                if (policy_find(pol, key))
                    error_at(c, loc, "op '%s' has two rows in this policy", key);
                else
                    policy_put(c, pol, row);
            }
        }
        offset += (uint32_t)len + 1;
        line = nl ? nl + 1 : NULL;
    }
    Loc start = {.file = f, .begin = 0, .end = 0};
    if (c->nerrors == errors && !pol->target)
        error_at(c, start, "the policy does not say its target ('target tpu|gpu|cpu')");
    if (c->nerrors == errors && pol->low == DT_NONE)
        error_at(c, start, "the policy does not say its low dtype ('low bf16|f16')");
    if (pol->low != DT_NONE)
        pol->allowed |= 1u << pol->low;
    return c->nerrors == errors;
}

const PolicyRow *policy_find(const Policy *pol, const char *op)
{
    return strmap_get(pol->by_op, op);
}

void policy_put(Ctx *c, Policy *pol, PolicyRow *row)
{
    PolicyRow *old = strmap_get(pol->by_op, row->op);
    strmap_put(pol->by_op, row->op, row);
    for (int i = 0; old && i < pol->rows->len; i++) {
        if (pol->rows->items[i] == old) {
            pol->rows->items[i] = row;
            return;
        }
    }
    vec_push(c, pol->rows, row);
}

/* The text of the built-in policy called name, or NULL. */
static const char *builtin_policy(const char *name)
{
    for (int i = 0; i < ampc_policy_count; i++)
        if (strcmp(ampc_policy_names[i], name) == 0)
            return ampc_policy_texts[i];
    return NULL;
}

bool load_policy(Ctx *c)
{
    Policy *pol = arena_alloc(c->arena, sizeof *pol);
    const SourceFile *f;
    const char *path = c->opts->policy_path;
    const char *name = path ? path : target_names[c->opts->target];
    const char *text = builtin_policy(name);
    if (text) {
        /* a built-in name wins over a file of that name (./NAME reads the file) */
        pol->builtin = name;
        f = source_from_text(c, arena_printf(c->arena, "<builtin>/%s.policy", name), text, strlen(text));
    } else {
        f = source_read(c, path);
        if (!f)
            return false;
    }
    if (!parse_policy(c, f, pol))
        return false;
    if (strcmp(pol->target, target_names[c->opts->target]) != 0) {
        error_plain(c, "the policy %s is for target '%s', but the target is '%s'", f->name, pol->target,
                    target_names[c->opts->target]);
        return false;
    }
    c->policy = pol;
    return true;
}

const char *policy_display_name(Ctx *c)
{
    if (c->policy->builtin)
        return arena_printf(c->arena, "built-in %s policy", c->policy->builtin);
    return c->opts->policy_path;
}
