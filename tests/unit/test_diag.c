/*
 * test_diag.c - the diagnostic format (src/diag.c).
 *
 *   t.amp:2:7: error: unknown op 'lineer'
 *       2 |   x = lineer(y)
 *         |       ^~~~~~
 *
 * Each test writes into a memory stream (Ctx.diag_out) and compares the
 * whole text, so a stray space or a missing tilde fails.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ampc.h"

typedef struct Fixture {
    Ctx *c;
    FILE *out;
    char *text;
    size_t len;
} Fixture;

static Options opts;

static int setup(void **state)
{
    Fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->out = open_memstream(&f->text, &f->len);
    assert_non_null(f->out);
    f->c = ctx_new(&opts, f->out);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    Fixture *f = *state;
    ctx_free(f->c);
    fclose(f->out);
    free(f->text);
    free(f);
    return 0;
}

static const char *output(Fixture *f)
{
    fflush(f->out);
    return f->text;
}

static SourceFile *src(Fixture *f, const char *name, const char *text)
{
    return source_from_text(f->c, name, text, strlen(text));
}

/* The location of the first occurrence of `needle` in the file. */
static Loc find(const SourceFile *file, const char *needle)
{
    const char *p = strstr(file->text, needle);
    assert_non_null(p);
    Loc l = {.file = file, .begin = (uint32_t)(p - file->text)};
    l.end = l.begin + (uint32_t)strlen(needle);
    return l;
}

static void error_has_position_line_and_underline(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "model M() {\n  x = lineer(y)\n}\n");
    error_at(f->c, find(s, "lineer"), "unknown op '%s'", "lineer");
    assert_string_equal(output(f), "t.amp:2:7: error: unknown op 'lineer'\n"
                                   "    2 |   x = lineer(y)\n"
                                   "      |       ^~~~~~\n");
    assert_int_equal(f->c->nerrors, 1);
    assert_int_equal(f->c->nwarnings, 0);
}

static void error_on_first_byte_of_file(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "modle M() {}\n");
    error_at(f->c, find(s, "modle"), "unexpected 'modle'");
    assert_string_equal(output(f), "t.amp:1:1: error: unexpected 'modle'\n"
                                   "    1 | modle M() {}\n"
                                   "      | ^~~~~\n");
}

static void empty_range_gets_a_caret_only(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "a = b\n");
    Loc l = {.file = s, .begin = 2, .end = 2};
    error_at(f->c, l, "here");
    assert_string_equal(output(f), "t.amp:1:3: error: here\n"
                                   "    1 | a = b\n"
                                   "      |   ^\n");
}

static void range_at_end_of_file_after_newline(void **state)
{
    /* the position after the last newline is the start of an empty line */
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "model M() {\n  x = y\n");
    Loc eof = {.file = s, .begin = (uint32_t)s->len, .end = (uint32_t)s->len};
    error_at(f->c, eof, "unexpected end of file");
    assert_string_equal(output(f), "t.amp:3:1: error: unexpected end of file\n"
                                   "    3 | \n"
                                   "      | ^\n");
}

static void range_at_end_of_file_without_newline(void **state)
{
    /* no trailing newline: the caret goes one past the last character */
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "model M() {\n  x = y");
    Loc eof = {.file = s, .begin = (uint32_t)s->len, .end = (uint32_t)s->len};
    error_at(f->c, eof, "unexpected end of file");
    assert_string_equal(output(f), "t.amp:2:8: error: unexpected end of file\n"
                                   "    2 |   x = y\n"
                                   "      |        ^\n");
}

static void last_token_without_trailing_newline(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "a\nbad");
    error_at(f->c, find(s, "bad"), "no");
    assert_string_equal(output(f), "t.amp:2:1: error: no\n"
                                   "    2 | bad\n"
                                   "      | ^~~\n");
}

static void crlf_line_is_shown_without_carriage_return(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "ab\r\ncd xy\r\nef\r\n");
    error_at(f->c, find(s, "xy"), "bad");
    assert_string_equal(output(f), "t.amp:2:4: error: bad\n"
                                   "    2 | cd xy\n"
                                   "      |    ^~\n");
}

static void crlf_does_not_shift_line_numbers(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "a\r\n\r\n\r\nzz\r\n");
    error_at(f->c, find(s, "zz"), "bad");
    assert_string_equal(output(f), "t.amp:4:1: error: bad\n"
                                   "    4 | zz\n"
                                   "      | ^~\n");
}

/* The carriage return is not shown, but the tildes run up to the '\n', so a
 * range that covers the whole line (policy.c underlines whole lines) gets
 * one tilde more than the text above it. */
static void range_to_end_of_crlf_line_does_not_underline_the_cr(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.policy", "relu fp33\r\n");
    Loc line = {.file = s, .begin = 0, .end = 10}; /* "relu fp33\r" */
    error_at(f->c, line, "bad class");
    assert_string_equal(output(f), "t.policy:1:1: error: bad class\n"
                                   "    1 | relu fp33\n"
                                   "      | ^~~~~~~~~\n");
}

static void tabs_before_the_caret_are_kept(void **state)
{
    /* a tab in the source line is a tab in the caret line, so the caret
     * lands under the token whatever the tab width */
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "\tx = \tbad(1)\n");
    error_at(f->c, find(s, "bad"), "unknown op 'bad'");
    assert_string_equal(output(f), "t.amp:1:7: error: unknown op 'bad'\n"
                                   "    1 | \tx = \tbad(1)\n"
                                   "      | \t    \t^~~\n");
}

static void range_over_several_lines_is_cut_at_the_first(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "x = f(a,\n      b)\n");
    Loc l = find(s, "f(a,\n      b)");
    error_at(f->c, l, "bad call");
    assert_string_equal(output(f), "t.amp:1:5: error: bad call\n"
                                   "    1 | x = f(a,\n"
                                   "      |     ^~~~\n");
}

static void empty_file(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "e.amp", "");
    Loc l = {.file = s};
    error_at(f->c, l, "no model in this file");
    assert_string_equal(output(f), "e.amp:1:1: error: no model in this file\n"
                                   "    1 | \n"
                                   "      | ^\n");
}

static void five_digit_line_numbers_fill_the_gutter(void **state)
{
    Fixture *f = *state;
    enum { LINES = 12344 };
    char *text = malloc(LINES + 8);
    assert_non_null(text);
    memset(text, '\n', LINES);
    strcpy(text + LINES, "oops\n");
    SourceFile *s = src(f, "t.amp", text);
    free(text);
    error_at(f->c, find(s, "oops"), "bad");
    assert_string_equal(output(f), "t.amp:12345:1: error: bad\n"
                                   "12345 | oops\n"
                                   "      | ^~~~\n");
}

static void warnings_and_notes_have_their_own_kind(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "x = 1e99999\n");
    warning_at(f->c, find(s, "1e99999"), "%s overflows", "1e99999");
    note_at(f->c, find(s, "x"), "'%s' was declared here", "x");
    assert_string_equal(output(f), "t.amp:1:5: warning: 1e99999 overflows\n"
                                   "    1 | x = 1e99999\n"
                                   "      |     ^~~~~~~\n"
                                   "t.amp:1:1: note: 'x' was declared here\n"
                                   "    1 | x = 1e99999\n"
                                   "      | ^\n");
    assert_int_equal(f->c->nerrors, 0); /* neither is an error */
    assert_int_equal(f->c->nwarnings, 1);
}

static void error_plain_has_no_position(void **state)
{
    Fixture *f = *state;
    error_plain(f->c, "cannot open %s: %s", "m.amp", "No such file or directory");
    assert_string_equal(output(f), "ampc: error: cannot open m.amp: No such file or directory\n");
    assert_int_equal(f->c->nerrors, 1);
}

static void errors_are_counted(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "a b c\n");
    error_at(f->c, find(s, "a"), "one");
    error_at(f->c, find(s, "b"), "two");
    error_plain(f->c, "three");
    assert_int_equal(f->c->nerrors, 3);
}

static void message_is_printf_formatted(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "x\n");
    error_at(f->c, find(s, "x"), "%d%% of %s, %lld", 50, "it", (long long)INT64_MAX);
    assert_string_equal(output(f), "t.amp:1:1: error: 50% of it, 9223372036854775807\n"
                                   "    1 | x\n"
                                   "      | ^\n");
}

static void line_and_column_are_one_based_bytes(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "ab\ncd\n\nef");
    int line, col;
    loc_line_col((Loc){.file = s, .begin = 0}, &line, &col);
    assert_int_equal(line, 1);
    assert_int_equal(col, 1);
    loc_line_col((Loc){.file = s, .begin = 2}, &line, &col); /* the newline itself */
    assert_int_equal(line, 1);
    assert_int_equal(col, 3);
    loc_line_col((Loc){.file = s, .begin = 3}, &line, &col); /* one past it */
    assert_int_equal(line, 2);
    assert_int_equal(col, 1);
    loc_line_col((Loc){.file = s, .begin = 8}, &line, &col);
    assert_int_equal(line, 4);
    assert_int_equal(col, 2);
}

static void utf8_columns_count_bytes(void **state)
{
    /* "é" is two bytes: the column is 4 (GCC counts bytes too, by default) */
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "# \xc3\xa9\n\xc3\xa9 bad\n");
    error_at(f->c, find(s, "bad"), "x");
    assert_string_equal(output(f), "t.amp:2:4: error: x\n"
                                   "    2 | \xc3\xa9 bad\n"
                                   "      |    ^~~\n");
}

static void loc_merge_spans_both(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "a + b\n");
    Loc a = find(s, "a"), b = find(s, "b");
    Loc m = loc_merge(b, a);
    assert_int_equal(m.begin, 0);
    assert_int_equal(m.end, 5);
    assert_ptr_equal(m.file, s);
    assert_string_equal(loc_text(f->c, m), "a + b");
    assert_string_equal(loc_text(f->c, (Loc){.file = s, .begin = 2, .end = 2}), "");
}

/* A file must not drive the terminal: ESC and BEL in the line, the file
 * name and the message are shown as \xHH, and the caret moves past the 4
 * columns each takes. */
static void control_bytes_are_escaped_and_the_caret_follows(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t\033]0;x\007.amp", "y = \033[31mq\007 + x\n");
    error_at(f->c, find(s, "+ x"), "no '%s'", "\033[2J");
    assert_string_equal(output(f), "t\\x1b]0;x\\x07.amp:1:13: error: no '\\x1b[2J'\n"
                                   "    1 | y = \\x1b[31mq\\x07 + x\n"
                                   "      |                   ^~~\n");
}

/* An escaped byte under the range is underlined for all its columns. */
static void escaped_byte_in_the_range_is_underlined_whole(void **state)
{
    Fixture *f = *state;
    SourceFile *s = src(f, "t.amp", "a = b\001c\n");
    error_at(f->c, find(s, "b\001c"), "here");
    assert_string_equal(output(f), "t.amp:1:5: error: here\n"
                                   "    1 | a = b\\x01c\n"
                                   "      |     ^~~~~~\n");
}

/* The C1 controls in UTF-8 (U+009B is CSI to some terminals) too; other
 * UTF-8 passes through. */
static void utf8_c1_controls_are_escaped(void **state)
{
    Fixture *f = *state;
    error_plain(f->c, "x\302\233y \303\251");
    assert_string_equal(output(f), "ampc: error: x\\xc2\\x9by \303\251\n");
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(error_has_position_line_and_underline),
        T(error_on_first_byte_of_file),
        T(empty_range_gets_a_caret_only),
        T(range_at_end_of_file_after_newline),
        T(range_at_end_of_file_without_newline),
        T(last_token_without_trailing_newline),
        T(crlf_line_is_shown_without_carriage_return),
        T(crlf_does_not_shift_line_numbers),
        T(range_to_end_of_crlf_line_does_not_underline_the_cr),
        T(tabs_before_the_caret_are_kept),
        T(range_over_several_lines_is_cut_at_the_first),
        T(empty_file),
        T(five_digit_line_numbers_fill_the_gutter),
        T(warnings_and_notes_have_their_own_kind),
        T(error_plain_has_no_position),
        T(errors_are_counted),
        T(message_is_printf_formatted),
        T(line_and_column_are_one_based_bytes),
        T(utf8_columns_count_bytes),
        T(loc_merge_spans_both),
        T(control_bytes_are_escaped_and_the_caret_follows),
        T(escaped_byte_in_the_range_is_underlined_whole),
        T(utf8_c1_controls_are_escaped),
    };
#undef T
    return cmocka_run_group_tests_name("diag", tests, NULL, NULL);
}
