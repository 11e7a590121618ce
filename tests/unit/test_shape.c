/*
 * test_shape.c - symbolic dims as integer polynomials (src/shape.c).
 *
 * Every test gets a fresh Ctx whose model has the dims B, T (symbols 0, 1).
 * The normal form is what the rest of the compiler relies on: two equal
 * polynomials compare equal term by term, a sum that cancels is the constant
 * 0, and any int64 overflow gives NULL instead of a wrapped coefficient.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ampc.h"

enum { B = 0, T = 1 };

static Options opts;

static int setup(void **state)
{
    Ctx *c = ctx_new(&opts, stderr);
    c->nsyms = 2;
    c->sym_names[B] = "B";
    c->sym_names[T] = "T";
    *state = c;
    return 0;
}

static int teardown(void **state)
{
    ctx_free(*state);
    return 0;
}

/* poly_to_c with the context's own dim names. */
static const char *str(Ctx *c, const Poly *p)
{
    assert_non_null(p);
    return poly_to_c(c, p, c->sym_names);
}

static Poly *scaled(Ctx *c, int sym, int64_t k)
{
    return poly_mul(c, poly_const(c, k), poly_sym(c, sym));
}

static void assert_const(const Poly *p, int64_t want)
{
    int64_t v = 12345;
    assert_non_null(p);
    assert_true(poly_is_const(p, &v));
    assert_int_equal(v, want);
}

/* ---- constants and symbols -------------------------------------------- */

static void const_zero_has_no_terms(void **state)
{
    Ctx *c = *state;
    Poly *z = poly_const(c, 0);
    assert_int_equal(z->nterms, 0);
    assert_const(z, 0);
    assert_string_equal(str(c, z), "0");
}

static void const_keeps_its_value(void **state)
{
    Ctx *c = *state;
    assert_const(poly_const(c, 64), 64);
    assert_const(poly_const(c, -7), -7);
    assert_const(poly_const(c, INT64_MAX), INT64_MAX); /* exactly 2^63-1 */
    assert_const(poly_const(c, INT64_MIN), INT64_MIN);
    assert_string_equal(str(c, poly_const(c, 64)), "64");
    assert_string_equal(str(c, poly_const(c, -7)), "-7");
}

static void sym_is_not_const(void **state)
{
    Ctx *c = *state;
    Poly *b = poly_sym(c, B);
    int64_t v = 99;
    assert_false(poly_is_const(b, &v));
    assert_int_equal(v, 99); /* untouched when not constant */
    assert_int_equal(b->nterms, 1);
    assert_int_equal(b->terms[0].coef, 1);
    assert_int_equal(b->terms[0].pow[B], 1);
    assert_int_equal(b->terms[0].pow[T], 0);
    assert_string_equal(str(c, b), "B");
    assert_string_equal(str(c, poly_sym(c, T)), "T");
}

static void last_sym_index_is_usable(void **state)
{
    Ctx *c = *state;
    const char *names[MAX_SYMS] = {0};
    for (int i = 0; i < MAX_SYMS; i++)
        names[i] = arena_printf(c->arena, "D%d", i);
    Poly *p = poly_sym(c, MAX_SYMS - 1); /* exactly the last symbol */
    assert_string_equal(poly_to_c(c, p, names), "D15");
}

/* ---- normalisation ------------------------------------------------------ */

static void like_terms_combine(void **state)
{
    /* B*2 + B == 3*B */
    Ctx *c = *state;
    Poly *sum = poly_add(c, scaled(c, B, 2), poly_sym(c, B));
    Poly *three_b = scaled(c, B, 3);
    assert_non_null(sum);
    assert_int_equal(sum->nterms, 1);
    assert_true(poly_equal(sum, three_b));
    assert_string_equal(str(c, sum), "3*B");
}

static void difference_of_equals_is_const_zero(void **state)
{
    /* B - B == 0, a constant with no terms */
    Ctx *c = *state;
    Poly *d = poly_sub(c, poly_sym(c, B), poly_sym(c, B));
    assert_const(d, 0);
    assert_int_equal(d->nterms, 0);
    assert_true(poly_equal(d, poly_const(c, 0)));
    assert_string_equal(str(c, d), "0");
}

static void cancelling_middle_term_is_removed(void **state)
{
    /* (B + T + 1) - T == B + 1: the removed term leaves no hole */
    Ctx *c = *state;
    Poly *p = poly_add(c, poly_add(c, poly_sym(c, B), poly_sym(c, T)), poly_const(c, 1));
    Poly *q = poly_sub(c, p, poly_sym(c, T));
    assert_non_null(q);
    assert_int_equal(q->nterms, 2);
    assert_true(poly_equal(q, poly_add(c, poly_sym(c, B), poly_const(c, 1))));
    assert_string_equal(str(c, q), "B + 1");
}

static void addition_order_does_not_matter(void **state)
{
    Ctx *c = *state;
    Poly *bt = poly_add(c, poly_add(c, poly_sym(c, B), poly_sym(c, T)), poly_const(c, 5));
    Poly *tb = poly_add(c, poly_const(c, 5), poly_add(c, poly_sym(c, T), poly_sym(c, B)));
    assert_true(poly_equal(bt, tb));
    assert_string_equal(str(c, bt), str(c, tb));
}

static void multiplication_distributes(void **state)
{
    /* (B + 1) * (B - 1) == B*B - 1 */
    Ctx *c = *state;
    Poly *b = poly_sym(c, B);
    Poly *p = poly_mul(c, poly_add(c, b, poly_const(c, 1)), poly_sub(c, b, poly_const(c, 1)));
    Poly *want = poly_sub(c, poly_mul(c, b, b), poly_const(c, 1));
    assert_non_null(p);
    assert_int_equal(p->nterms, 2);
    assert_true(poly_equal(p, want));
    assert_string_equal(str(c, p), "B*B - 1");
}

static void multiplication_by_zero_is_const_zero(void **state)
{
    Ctx *c = *state;
    Poly *p = poly_mul(c, poly_add(c, poly_sym(c, B), poly_sym(c, T)), poly_const(c, 0));
    assert_const(p, 0);
}

static void different_polys_are_not_equal(void **state)
{
    Ctx *c = *state;
    assert_false(poly_equal(poly_sym(c, B), poly_sym(c, T)));
    assert_false(poly_equal(scaled(c, B, 2), scaled(c, B, 3)));        /* same monomial, other coef */
    assert_false(poly_equal(poly_sym(c, B), poly_add(c, poly_sym(c, B), poly_const(c, 1))));
    assert_false(poly_equal(poly_mul(c, poly_sym(c, B), poly_sym(c, B)), scaled(c, B, 2)));
    assert_false(poly_equal(poly_const(c, 1), poly_const(c, 0)));
}

/* ---- poly_to_c: highest degree first, valid C ---------------------------- */

static void to_c_prints_highest_degree_first(void **state)
{
    Ctx *c = *state;
    /* T*T + B*T*2 + B - 3, built in scrambled order */
    Poly *b = poly_sym(c, B), *t = poly_sym(c, T);
    Poly *p = poly_const(c, -3);
    p = poly_add(c, p, b);
    p = poly_add(c, p, poly_mul(c, t, t));
    p = poly_add(c, p, poly_mul(c, poly_const(c, 2), poly_mul(c, b, t)));
    assert_string_equal(str(c, p), "2*B*T + B + T*T - 3");
}

static void to_c_prints_a_coefficient_before_the_symbols(void **state)
{
    Ctx *c = *state;
    assert_string_equal(str(c, poly_add(c, scaled(c, B, 64), poly_const(c, 1))), "64*B + 1");
    assert_string_equal(str(c, poly_sub(c, poly_const(c, 10), scaled(c, T, 4))), "-4*T + 10");
}

static void to_c_of_negative_leading_term(void **state)
{
    /* a negative leading coefficient is a leading '-' */
    Ctx *c = *state;
    Poly *p = poly_sub(c, poly_const(c, 0), poly_sym(c, B));
    assert_string_equal(str(c, p), "-B");
}

/* ---- int64 overflow returns NULL ------------------------------------------ */

static void add_up_to_int64_max_is_exact(void **state)
{
    Ctx *c = *state;
    assert_const(poly_add(c, poly_const(c, INT64_MAX - 1), poly_const(c, 1)), INT64_MAX); /* exactly 2^63-1 */
}

static void add_one_past_int64_max_is_null(void **state)
{
    Ctx *c = *state;
    assert_null(poly_add(c, poly_const(c, INT64_MAX), poly_const(c, 1))); /* one past */
    assert_null(poly_add(c, scaled(c, B, INT64_MAX), poly_sym(c, B)));    /* one past, in a B term */
}

/* -2^63 is refused: it has no C integer constant (9223372036854775808 is
 * unsigned), so no coefficient may be it */
static void sub_down_to_int64_min_is_refused(void **state)
{
    Ctx *c = *state;
    assert_const(poly_sub(c, poly_const(c, -INT64_MAX + 1), poly_const(c, 1)), -INT64_MAX); /* the last allowed */
    assert_null(poly_sub(c, poly_const(c, -INT64_MAX), poly_const(c, 1)));                  /* exactly -2^63 */
    assert_null(poly_mul(c, poly_const(c, INT64_MIN / 2), poly_const(c, 2)));               /* by a product too */
}

static void sub_of_int64_min_overflows_when_the_result_does(void **state)
{
    Ctx *c = *state;
    /* 0 - (-2^63) = 2^63: one past */
    assert_null(poly_sub(c, poly_const(c, 0), poly_const(c, INT64_MIN)));
}

/* poly_sub negates b's coefficients before adding, so subtracting INT64_MIN
 * fails even when the difference fits: -1 - (-2^63) = 2^63 - 1. */
static void sub_of_int64_min_is_exact_when_the_result_fits(void **state)
{
    Ctx *c = *state;
    assert_const(poly_sub(c, poly_const(c, -1), poly_const(c, INT64_MIN)), INT64_MAX); /* exactly 2^63-1 */
}

static void mul_up_to_int64_max_is_exact(void **state)
{
    /* 2^63 - 1 = 7 * 1317624576693539401 */
    Ctx *c = *state;
    assert_const(poly_mul(c, poly_const(c, 7), poly_const(c, 1317624576693539401)), INT64_MAX); /* exactly 2^63-1 */
    assert_const(poly_mul(c, poly_const(c, 1LL << 31), poly_const(c, 1LL << 31)), 1LL << 62);
}

static void mul_one_past_int64_max_is_null(void **state)
{
    Ctx *c = *state;
    assert_null(poly_mul(c, poly_const(c, 1LL << 32), poly_const(c, 1LL << 31))); /* 2^63: one past */
    assert_null(poly_mul(c, scaled(c, B, 1LL << 32), scaled(c, T, 1LL << 31)));
}

static void mul_overflow_when_products_add_up(void **state)
{
    /* (2^62*B + 2^62) * (B + 1): each product fits, but the B terms sum
     * to 2^63 */
    Ctx *c = *state;
    Poly *a = poly_add(c, scaled(c, B, 1LL << 62), poly_const(c, 1LL << 62));
    Poly *b = poly_add(c, poly_sym(c, B), poly_const(c, 1));
    assert_null(poly_mul(c, a, b));
}

static void exponent_255_is_the_limit(void **state)
{
    Ctx *c = *state;
    Poly *p = poly_sym(c, B);
    for (int i = 1; i < 255; i++)
        p = poly_mul(c, p, poly_sym(c, B));
    assert_non_null(p); /* exactly B^255 */
    assert_int_equal(p->terms[0].pow[B], 255);
    assert_null(poly_mul(c, p, poly_sym(c, B))); /* B^256: one past */
}

/* ---- shapes ---------------------------------------------------------------- */

static Shape shape_of(int n, Poly **dims)
{
    Shape s = {.ndim = n};
    for (int i = 0; i < n; i++)
        s.dims[i] = dims[i];
    return s;
}

static void numel_of_scalar_shape_is_one(void **state)
{
    Ctx *c = *state;
    Shape s = {0};
    assert_const(shape_numel(c, &s), 1);
}

static void numel_multiplies_the_dims(void **state)
{
    Ctx *c = *state;
    Shape s = shape_of(3, (Poly *[]){poly_sym(c, B), poly_const(c, 64), poly_add(c, poly_sym(c, T), poly_const(c, 1))});
    Poly *n = shape_numel(c, &s);
    assert_string_equal(str(c, n), "64*B*T + 64*B");
}

static void numel_with_a_zero_dim_is_zero(void **state)
{
    Ctx *c = *state;
    Shape s = shape_of(2, (Poly *[]){poly_sym(c, B), poly_const(c, 0)});
    assert_const(shape_numel(c, &s), 0);
}

static void numel_overflow_is_null(void **state)
{
    Ctx *c = *state;
    Shape fits = shape_of(2, (Poly *[]){poly_const(c, 1LL << 31), poly_const(c, 1LL << 31)});
    assert_const(shape_numel(c, &fits), 1LL << 62);
    Shape over = shape_of(3, (Poly *[]){poly_const(c, 1LL << 31), poly_const(c, 1LL << 31), poly_const(c, 2)});
    assert_null(shape_numel(c, &over)); /* 2^63: one past */
}

static void shape_to_string_lists_dims(void **state)
{
    Ctx *c = *state;
    Shape s = shape_of(3, (Poly *[]){poly_sym(c, B), poly_const(c, 64),
                                     poly_add(c, scaled(c, T, 2), poly_const(c, 1))});
    assert_string_equal(shape_to_string(c, &s, c->sym_names), "[B, 64, 2*T + 1]");
}

static void shape_to_string_of_scalar_is_empty_brackets(void **state)
{
    Ctx *c = *state;
    Shape s = {0};
    assert_string_equal(shape_to_string(c, &s, c->sym_names), "[]");
}

static void shape_to_string_of_max_rank(void **state)
{
    Ctx *c = *state;
    Shape s = {.ndim = MAX_DIMS}; /* exactly 8 dims */
    for (int i = 0; i < MAX_DIMS; i++)
        s.dims[i] = poly_const(c, i + 1);
    assert_string_equal(shape_to_string(c, &s, c->sym_names), "[1, 2, 3, 4, 5, 6, 7, 8]");
}

static void shape_equal_compares_rank_and_dims(void **state)
{
    Ctx *c = *state;
    Shape a = shape_of(2, (Poly *[]){poly_sym(c, B), poly_const(c, 64)});
    Shape b = shape_of(2, (Poly *[]){poly_add(c, poly_sym(c, B), poly_const(c, 0)), poly_mul(c, poly_const(c, 8), poly_const(c, 8))});
    Shape other = shape_of(2, (Poly *[]){poly_sym(c, T), poly_const(c, 64)});
    Shape shorter = shape_of(1, (Poly *[]){poly_sym(c, B)});
    assert_true(shape_equal(&a, &b));
    assert_false(shape_equal(&a, &other));
    assert_false(shape_equal(&a, &shorter));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(const_zero_has_no_terms, setup, teardown),
        cmocka_unit_test_setup_teardown(const_keeps_its_value, setup, teardown),
        cmocka_unit_test_setup_teardown(sym_is_not_const, setup, teardown),
        cmocka_unit_test_setup_teardown(last_sym_index_is_usable, setup, teardown),
        cmocka_unit_test_setup_teardown(like_terms_combine, setup, teardown),
        cmocka_unit_test_setup_teardown(difference_of_equals_is_const_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(cancelling_middle_term_is_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(addition_order_does_not_matter, setup, teardown),
        cmocka_unit_test_setup_teardown(multiplication_distributes, setup, teardown),
        cmocka_unit_test_setup_teardown(multiplication_by_zero_is_const_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(different_polys_are_not_equal, setup, teardown),
        cmocka_unit_test_setup_teardown(to_c_prints_highest_degree_first, setup, teardown),
        cmocka_unit_test_setup_teardown(to_c_prints_a_coefficient_before_the_symbols, setup, teardown),
        cmocka_unit_test_setup_teardown(to_c_of_negative_leading_term, setup, teardown),
        cmocka_unit_test_setup_teardown(add_up_to_int64_max_is_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(add_one_past_int64_max_is_null, setup, teardown),
        cmocka_unit_test_setup_teardown(sub_down_to_int64_min_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(sub_of_int64_min_overflows_when_the_result_does, setup, teardown),
        cmocka_unit_test_setup_teardown(sub_of_int64_min_is_exact_when_the_result_fits, setup, teardown),
        cmocka_unit_test_setup_teardown(mul_up_to_int64_max_is_exact, setup, teardown),
        cmocka_unit_test_setup_teardown(mul_one_past_int64_max_is_null, setup, teardown),
        cmocka_unit_test_setup_teardown(mul_overflow_when_products_add_up, setup, teardown),
        cmocka_unit_test_setup_teardown(exponent_255_is_the_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(numel_of_scalar_shape_is_one, setup, teardown),
        cmocka_unit_test_setup_teardown(numel_multiplies_the_dims, setup, teardown),
        cmocka_unit_test_setup_teardown(numel_with_a_zero_dim_is_zero, setup, teardown),
        cmocka_unit_test_setup_teardown(numel_overflow_is_null, setup, teardown),
        cmocka_unit_test_setup_teardown(shape_to_string_lists_dims, setup, teardown),
        cmocka_unit_test_setup_teardown(shape_to_string_of_scalar_is_empty_brackets, setup, teardown),
        cmocka_unit_test_setup_teardown(shape_to_string_of_max_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(shape_equal_compares_rank_and_dims, setup, teardown),
    };
    return cmocka_run_group_tests_name("shape", tests, NULL, NULL);
}
