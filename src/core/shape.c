/* shape.c: symbolic dims as integer polynomials over the model's dims.
 *
 * A model `model M(B, T)` has symbols B = 0, T = 1.  `f32[B, T*2+1]` has
 * dims {B} and {2T + 1}.  Sizes (numel times element size) are products of
 * dims, so they are polynomials too; memplan keeps them symbolic and emit_c
 * prints them as C expressions.  Terms are kept sorted by exponent vector
 * with no zero coefficients, so equal polynomials are equal term by term.
 * Coefficients are int64 other than INT64_MIN (so that every one prints as
 * a C integer constant, -9223372036854775808 being unsigned in C): any
 * operation that would leave that range returns NULL
 * and the caller reports the tensor as too large.
 */
#include "core.h"

#include <string.h>

static int term_cmp(const Term *a, const Term *b)
{
    return memcmp(a->pow, b->pow, MAX_SYMS);
}

Poly *poly_const(Ctx *c, int64_t v)
{
    Poly *p = arena_alloc(c->arena, sizeof *p);
    if (v != 0) {
        p->terms = arena_alloc(c->arena, sizeof(Term));
        p->terms[0].coef = v;
        p->nterms = 1;
    }
    return p;
}

Poly *poly_sym(Ctx *c, int sym)
{
    Poly *p = poly_const(c, 1);
    p->terms[0].pow[sym] = 1;
    return p;
}

/* Add sign * t into a sorted term array being built; subtracting directly
 * (not adding the negation) keeps -1 - INT64_MIN exact. */
static bool add_term(Term *terms, int *n, const Term *t, int sign)
{
    int lo = 0, hi = *n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        int cmp = term_cmp(&terms[mid], t);
        if (cmp == 0) {
            bool overflow = sign > 0 ? __builtin_add_overflow(terms[mid].coef, t->coef, &terms[mid].coef)
                                     : __builtin_sub_overflow(terms[mid].coef, t->coef, &terms[mid].coef);
            if (overflow || terms[mid].coef == INT64_MIN)
                return false;
            if (terms[mid].coef == 0) {
                memmove(&terms[mid], &terms[mid + 1], (size_t)(*n - mid - 1) * sizeof(Term));
                (*n)--;
            }
            return true;
        }
        if (cmp < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (t->coef == 0)
        return true;
    Term nt = *t;
    if (sign < 0 && __builtin_sub_overflow((int64_t)0, t->coef, &nt.coef))
        return false;
    if (nt.coef == INT64_MIN)
        return false;
    memmove(&terms[lo + 1], &terms[lo], (size_t)(*n - lo) * sizeof(Term));
    terms[lo] = nt;
    (*n)++;
    return true;
}

static Poly *combine(Ctx *c, const Poly *a, const Poly *b, int64_t sign)
{
    if (a->nterms + b->nterms > MAX_TERMS)
        return NULL;
    Poly *p = arena_alloc(c->arena, sizeof *p);
    p->terms = arena_alloc(c->arena, (size_t)(a->nterms + b->nterms + 1) * sizeof(Term));
    for (int i = 0; i < a->nterms; i++)
        if (!add_term(p->terms, &p->nterms, &a->terms[i], 1))
            return NULL;
    for (int i = 0; i < b->nterms; i++) {
        if (!add_term(p->terms, &p->nterms, &b->terms[i], sign))
            return NULL;
    }
    return p;
}

Poly *poly_add(Ctx *c, const Poly *a, const Poly *b) { return combine(c, a, b, 1); }
Poly *poly_sub(Ctx *c, const Poly *a, const Poly *b) { return combine(c, a, b, -1); }

Poly *poly_mul(Ctx *c, const Poly *a, const Poly *b)
{
    /* a real model's dims have a handful of terms; a product with more
     * than this is refused (as an overflow) before it costs quadratic time */
    if ((int64_t)a->nterms * b->nterms > MAX_TERMS)
        return NULL;
    Poly *p = arena_alloc(c->arena, sizeof *p);
    p->terms = arena_alloc(c->arena, (size_t)(a->nterms * b->nterms + 1) * sizeof(Term));
    for (int i = 0; i < a->nterms; i++) {
        for (int j = 0; j < b->nterms; j++) {
            Term t;
            if (__builtin_mul_overflow(a->terms[i].coef, b->terms[j].coef, &t.coef) || t.coef == INT64_MIN)
                return NULL;
            for (int k = 0; k < MAX_SYMS; k++) {
                int e = a->terms[i].pow[k] + b->terms[j].pow[k];
                if (e > 255)
                    return NULL;
                t.pow[k] = (uint8_t)e;
            }
            if (!add_term(p->terms, &p->nterms, &t, 1))
                return NULL;
        }
    }
    return p;
}

bool poly_equal(const Poly *a, const Poly *b)
{
    if (a->nterms != b->nterms)
        return false;
    for (int i = 0; i < a->nterms; i++)
        if (a->terms[i].coef != b->terms[i].coef || term_cmp(&a->terms[i], &b->terms[i]) != 0)
            return false;
    return true;
}

static bool term_is_const(const Term *t)
{
    for (int k = 0; k < MAX_SYMS; k++)
        if (t->pow[k])
            return false;
    return true;
}

bool poly_is_const(const Poly *p, int64_t *value)
{
    if (p->nterms == 0) {
        *value = 0;
        return true;
    }
    if (p->nterms == 1 && term_is_const(&p->terms[0])) {
        *value = p->terms[0].coef;
        return true;
    }
    return false;
}

/* Highest-degree terms first reads naturally: B*64 + 1, not 1 + 64*B. */
char *poly_to_c(Ctx *c, const Poly *p, const char *const *names)
{
    if (p->nterms == 0)
        return "0";
    Buf b;
    buf_init(&b, c->arena);
    for (int i = p->nterms - 1; i >= 0; i--) {
        const Term *t = &p->terms[i];
        /* the magnitude as unsigned, so that INT64_MIN prints too */
        uint64_t mag = t->coef < 0 ? 0 - (uint64_t)t->coef : (uint64_t)t->coef;
        if (i != p->nterms - 1)
            buf_puts(&b, t->coef < 0 ? " - " : " + ");
        else if (t->coef < 0)
            buf_puts(&b, "-");
        bool constant = true;
        for (int k = 0; k < MAX_SYMS; k++)
            constant &= t->pow[k] == 0;
        if (constant || mag != 1)
            buf_printf(&b, "%llu%s", (unsigned long long)mag, constant ? "" : "*");
        bool first = true;
        for (int k = 0; k < MAX_SYMS; k++) {
            for (int e = 0; e < t->pow[k]; e++) {
                buf_printf(&b, "%s%s", first ? "" : "*", names[k]);
                first = false;
            }
        }
    }
    return b.data;
}

Poly *shape_numel(Ctx *c, const Shape *s)
{
    Poly *n = poly_const(c, 1);
    for (int i = 0; i < s->ndim && n; i++)
        n = poly_mul(c, n, s->dims[i]);
    return n;
}

char *shape_to_string(Ctx *c, const Shape *s, const char *const *names)
{
    Buf b;
    buf_init(&b, c->arena);
    buf_puts(&b, "[");
    for (int i = 0; i < s->ndim; i++)
        buf_printf(&b, "%s%s", i ? ", " : "", poly_to_c(c, s->dims[i], names));
    buf_puts(&b, "]");
    return b.data;
}

bool shape_equal(const Shape *a, const Shape *b)
{
    if (a->ndim != b->ndim)
        return false;
    for (int i = 0; i < a->ndim; i++)
        if (!poly_equal(a->dims[i], b->dims[i]))
            return false;
    return true;
}
