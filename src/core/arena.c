/* arena.c: the compiler's only allocator.
 *
 * A compilation allocates from one arena and frees it whole at the end, so
 * no pass tracks ownership.  Blocks grow geometrically; a request larger
 * than a block gets a block of its own.  Out of memory is the
 * environment's limit, neither an error in the model nor a bug: it exits
 * with EXIT_IO and a message (the die-on-OOM convention).
 */
#include "core.h"

#include <stdlib.h>
#include <string.h>

typedef struct Chunk {
    struct Chunk *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
} Chunk;

struct Arena {
    Chunk *head;
};

enum { MIN_BLOCK = 64 * 1024, ALIGN = 16 };

_Noreturn void out_of_memory(size_t size)
{
    fprintf(stderr, "ampc: error: out of memory (allocating %zu bytes); raise the memory limit "
                    "(ulimit -v) or compile a smaller model\n", size);
    exit(EXIT_IO);
}

Arena *arena_new(void)
{
    Arena *a = calloc(1, sizeof *a);
    if (!a)
        out_of_memory(sizeof *a);
    return a;
}

void arena_free(Arena *a)
{
    if (!a)
        return;
    for (Chunk *b = a->head, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(a);
}

void *arena_alloc(Arena *a, size_t size)
{
    size = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    Chunk *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t want = b ? b->size * 2 : MIN_BLOCK;
        if (want < size)
            want = size;
        if (want > SIZE_MAX - sizeof(Chunk))
            out_of_memory(size);
        Chunk *nb = malloc(sizeof(Chunk) + want);
        if (!nb)
            out_of_memory(size);
        nb->size = want;
        nb->used = 0;
        nb->next = a->head;
        a->head = b = nb;
    }
    void *p = b->data + b->used;
    b->used += size;
    memset(p, 0, size);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *d = arena_alloc(a, n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *arena_strdup(Arena *a, const char *s)
{
    return arena_strndup(a, s, strlen(s));
}

char *arena_vprintf(Arena *a, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        ICE("bad format string: %s", fmt);
    char *s = arena_alloc(a, (size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *arena_printf(Arena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = arena_vprintf(a, fmt, ap);
    va_end(ap);
    return s;
}

void buf_init(Buf *b, Arena *a)
{
    b->arena = a;
    b->len = 0;
    /* small: most buffers hold one name or shape; buf_reserve doubles */
    b->cap = 64;
    b->data = arena_alloc(a, b->cap);
}

static void buf_reserve(Buf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap)
        return;
    size_t cap = b->cap * 2;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *d = arena_alloc(b->arena, cap);
    memcpy(d, b->data, b->len);
    b->data = d;
    b->cap = cap;
}

void buf_puts(Buf *b, const char *s)
{
    buf_append(b, s, strlen(s));
}

/* n bytes, NULs included (a source file being read), kept NUL-terminated */
void buf_append(Buf *b, const char *s, size_t n)
{
    buf_reserve(b, n);
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void buf_printf(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = arena_vprintf(b->arena, fmt, ap);
    va_end(ap);
    buf_puts(b, s);
}

Vec *vec_new(Ctx *c)
{
    return arena_alloc(c->arena, sizeof(Vec));
}

Vec *vec_push(Ctx *c, Vec *v, void *item)
{
    if (v->len == v->cap) {
        int cap = v->cap ? v->cap * 2 : 8;
        void **items = arena_alloc(c->arena, (size_t)cap * sizeof *items);
        if (v->len)
            memcpy(items, v->items, (size_t)v->len * sizeof *items);
        v->items = items;
        v->cap = cap;
    }
    v->items[v->len++] = item;
    return v;
}

/* ---- StrMap: string keys to pointers, open addressing ------------------ */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

StrMap *strmap_new(Arena *a)
{
    StrMap *m = arena_alloc(a, sizeof *m);
    m->arena = a;
    m->cap = 64;
    m->keys = arena_alloc(a, (size_t)m->cap * sizeof *m->keys);
    m->values = arena_alloc(a, (size_t)m->cap * sizeof *m->values);
    return m;
}

static size_t strmap_slot(const StrMap *m, const char *key)
{
    size_t i = (size_t)hash_str(key) & (size_t)(m->cap - 1);
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & (size_t)(m->cap - 1);
    return i;
}

void *strmap_get(const StrMap *m, const char *key)
{
    return m->values[strmap_slot(m, key)];
}

void strmap_put(StrMap *m, const char *key, void *value)
{
    if (2 * (m->len + 1) > m->cap) {
        StrMap old = *m;
        m->cap *= 2;
        m->len = 0;
        m->keys = arena_alloc(m->arena, (size_t)m->cap * sizeof *m->keys);
        m->values = arena_alloc(m->arena, (size_t)m->cap * sizeof *m->values);
        for (int i = 0; i < old.cap; i++)
            if (old.keys[i])
                strmap_put(m, old.keys[i], old.values[i]);
    }
    size_t i = strmap_slot(m, key);
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->len++;
    }
    m->values[i] = value;
}
