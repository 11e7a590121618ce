/*
 * st_write.c - writing safetensors files (amp_st_write); safetensors.c is
 * the reader, and everything written here passes its rules.
 *
 * Layout, as safetensors.torch.save_file writes it: u64 little-endian N,
 * N bytes of JSON padded with spaces to a multiple of 8 (so the data
 * region starts 8-aligned), then the tensors' bytes back to back in the
 * order given, little-endian.  The JSON is
 *
 *   {"__metadata__":{"format":"pt","crc32c":"1a2b3c4d"},"NAME":{"dtype":
 *    "F32","shape":[2,3],"data_offsets":[0,24]},...}
 *
 * where crc32c is the CRC-32C of the data region (amp_st_crc32c), which
 * the reader verifies.
 *
 * with names escaped as JSON requires (\" \\ \b \f \n \r \t, \u00XX for
 * other control characters) and other bytes, valid UTF-8, kept as they
 * are.
 *
 * Atomic replacement: every argument is checked before any file is
 * touched; the bytes go to the temporary file "<path>.tmp" beside `path`,
 * which is flushed and fsync'ed, then renamed over `path`, and the
 * directory is fsync'ed so the rename itself is durable.  Readers see the
 * old file or the new one, never a mix.  The temporary's name is fixed, so
 * a save killed midway (kill -9, a crash) leaves at most that one file,
 * which the next save of the same path reuses and renames away: stale
 * temporaries never pile up.  Saves of one path in several processes take
 * turns on it (an exclusive flock, held until the rename).  On any failure
 * before the rename the temporary is removed and `path` is untouched.  (A
 * symbolic link at `path` is replaced by the file, not followed; one at
 * "<path>.tmp" is refused.)
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* fsync, fchmod, fileno, fdopen, O_DIRECTORY, O_NOFOLLOW */
#endif

#include "amprt.h"

/* A runtime built with AMPRT_NO_STDIO (make BARE=1) has no files, and
 * no amp_st_write: this file compiles to nothing. */
#if !defined(AMPRT_NO_STDIO)

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MAX_HEADER ((size_t)100 * 1024 * 1024) /* the reader's limit on N */
#define ST_MAX_DIMS 8

/* ---- the header ------------------------------------------------------------ */

/* A growing byte buffer; an allocation failure is sticky. */
typedef struct {
    char *s;
    size_t len, cap;
    int oom;
} st_buf;

static void put_bytes(st_buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 512;
        char *s2;
        while (n > cap - b->len) {
            if (cap > SIZE_MAX / 2) {
                b->oom = 1;
                return;
            }
            cap *= 2;
        }
        s2 = realloc(b->s, cap);
        if (!s2) {
            b->oom = 1;
            return;
        }
        b->s = s2;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
}

static void put_str(st_buf *b, const char *s)
{
    put_bytes(b, s, strlen(s));
}

static void put_u64(st_buf *b, uint64_t v)
{
    char tmp[24];
    snprintf(tmp, sizeof tmp, "%" PRIu64, v);
    put_str(b, tmp);
}

/* s as a JSON string: the escapes JSON requires, every other byte as is
 * (the caller checked it is UTF-8). */
static void put_json_string(st_buf *b, const char *s)
{
    put_bytes(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        switch (c) {
        case '"': put_str(b, "\\\""); break;
        case '\\': put_str(b, "\\\\"); break;
        case '\b': put_str(b, "\\b"); break;
        case '\f': put_str(b, "\\f"); break;
        case '\n': put_str(b, "\\n"); break;
        case '\r': put_str(b, "\\r"); break;
        case '\t': put_str(b, "\\t"); break;
        default:
            if (c < 0x20) {
                char esc[8];
                snprintf(esc, sizeof esc, "\\u%04x", (unsigned)c);
                put_str(b, esc);
            } else {
                put_bytes(b, (const char *)&c, 1);
            }
        }
    }
    put_bytes(b, "\"", 1);
}

/* 1 if s is valid UTF-8 (no overlong forms, surrogates or code points past
 * U+10FFFF): the reader rejects anything else. */
static int is_utf8(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        unsigned char c = *s, lo = 0x80, hi = 0xbf;
        size_t n;
        if (c < 0x80) {
            s++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            n = 2;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 3;
            if (c == 0xe0)
                lo = 0xa0; /* overlong */
            if (c == 0xed)
                hi = 0x9f; /* surrogates */
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 4;
            if (c == 0xf0)
                lo = 0x90; /* overlong */
            if (c == 0xf4)
                hi = 0x8f; /* above U+10FFFF */
        } else {
            return 0;
        }
        /* the NUL terminator fails these range checks, so no overrun */
        if (s[1] < lo || s[1] > hi)
            return 0;
        for (size_t i = 2; i < n; i++)
            if (s[i] < 0x80 || s[i] > 0xbf)
                return 0;
        s += n;
    }
    return 1;
}

static const char *const st_dtype_names[] = { "F64", "F32", "BF16", "F16", "I64", "I32", "BOOL" };

static int cmp_names(const void *a, const void *b)
{
    const amp_st_entry *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

/* Checks every argument and computes each tensor's byte count into
 * nbytes[0..n). AMP_OK or the status amp_st_write returns. */
static int check_entries(const amp_st_entry *tensors, int n, uint64_t *nbytes)
{
    uint64_t total = 0;
    const amp_st_entry **sorted;
    int status = AMP_OK;

    for (int i = 0; i < n; i++) {
        const amp_st_entry *e = &tensors[i];
        int d = (int)e->dtype;
        uint64_t count = 1, size;
        if (!e->name)
            return AMP_ERR_NULL_ARG;
        if (d < (int)AMP_F64 || d > (int)AMP_BOOL)
            return AMP_ERR_WEIGHTS_DTYPE;
        if (e->ndim < 0 || e->ndim > ST_MAX_DIMS)
            return AMP_ERR_WEIGHTS_SHAPE;
        for (int k = 0; k < e->ndim; k++)
            if (e->shape[k] < 0)
                return AMP_ERR_BAD_DIM;
        for (int k = 0; k < e->ndim; k++) {
            uint64_t dim = (uint64_t)e->shape[k];
            if (dim != 0 && count > UINT64_MAX / dim)
                return AMP_ERR_WEIGHTS_SHAPE;
            count *= dim;
        }
        size = amp_dtype_size(e->dtype);
        if (count > UINT64_MAX / size || count * size > SIZE_MAX || count * size > UINT64_MAX - total)
            return AMP_ERR_WEIGHTS_SHAPE;
        nbytes[i] = count * size;
        total += nbytes[i];
        if (nbytes[i] > 0 && !e->data)
            return AMP_ERR_NULL_ARG;
        if (!is_utf8(e->name) || strcmp(e->name, "__metadata__") == 0)
            return AMP_ERR_WEIGHTS_HEADER;
    }
    if (n < 2)
        return AMP_OK;
    /* Duplicates: sort pointers by name, compare neighbours. */
    sorted = malloc((size_t)n * sizeof *sorted);
    if (!sorted)
        return AMP_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < n; i++)
        sorted[i] = &tensors[i];
    qsort(sorted, (size_t)n, sizeof *sorted, cmp_names);
    for (int i = 1; i < n && status == AMP_OK; i++)
        if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0)
            status = AMP_ERR_WEIGHTS_HEADER;
    free(sorted);
    return status;
}

/* The JSON header, padded with spaces to a multiple of 8. */
static int build_header(const amp_st_entry *tensors, int n, const uint64_t *nbytes, uint32_t crc, st_buf *b)
{
    uint64_t offset = 0;
    char crc_hex[9];
    snprintf(crc_hex, sizeof crc_hex, "%08" PRIx32, crc);
    put_str(b, "{\"__metadata__\":{\"format\":\"pt\",\"crc32c\":\"");
    put_str(b, crc_hex);
    put_str(b, "\"}");
    for (int i = 0; i < n; i++) {
        const amp_st_entry *e = &tensors[i];
        put_str(b, ",");
        put_json_string(b, e->name);
        put_str(b, ":{\"dtype\":\"");
        put_str(b, st_dtype_names[e->dtype]);
        put_str(b, "\",\"shape\":[");
        for (int k = 0; k < e->ndim; k++) {
            if (k)
                put_str(b, ",");
            put_u64(b, (uint64_t)e->shape[k]);
        }
        put_str(b, "],\"data_offsets\":[");
        put_u64(b, offset);
        put_str(b, ",");
        offset += nbytes[i];
        put_u64(b, offset);
        put_str(b, "]}");
    }
    put_str(b, "}");
    while (!b->oom && b->len % 8 != 0)
        put_str(b, " ");
    if (b->oom)
        return AMP_ERR_OUT_OF_MEMORY;
    if (b->len > ST_MAX_HEADER)
        return AMP_ERR_WEIGHTS_HEADER;
    return AMP_OK;
}

/* ---- the file -------------------------------------------------------------- */

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char c;
    memcpy(&c, &one, 1);
    return c == 1;
}

/* nbytes of elements of esize bytes, as little-endian. 0 or -1. */
static int write_le(FILE *fp, const void *data, uint64_t nbytes, size_t esize)
{
    const unsigned char *p = data;
    unsigned char chunk[4096]; /* a multiple of every element size */
    if (nbytes == 0)
        return 0;
    if (esize == 1 || host_is_little_endian())
        return fwrite(data, 1, (size_t)nbytes, fp) == (size_t)nbytes ? 0 : -1;
    while (nbytes > 0) {
        size_t len = nbytes < sizeof chunk ? (size_t)nbytes : sizeof chunk;
        for (size_t off = 0; off < len; off += esize)
            for (size_t k = 0; k < esize; k++)
                chunk[off + k] = p[off + esize - 1 - k];
        if (fwrite(chunk, 1, len, fp) != len)
            return -1;
        p += len;
        nbytes -= len;
    }
    return 0;
}

/* CRC-32C of the data region as write_le writes it (little-endian). */
static uint32_t data_crc(const amp_st_entry *tensors, int n, const uint64_t *nbytes)
{
    uint32_t crc = 0;
    unsigned char chunk[4096]; /* a multiple of every element size */
    for (int i = 0; i < n; i++) {
        const unsigned char *p = tensors[i].data;
        uint64_t left = nbytes[i];
        size_t esize = amp_dtype_size(tensors[i].dtype);
        if (esize == 1 || host_is_little_endian()) {
            crc = amp_st_crc32c(crc, p, (size_t)left);
            continue;
        }
        while (left > 0) {
            size_t len = left < sizeof chunk ? (size_t)left : sizeof chunk;
            for (size_t off = 0; off < len; off += esize)
                for (size_t k = 0; k < esize; k++)
                    chunk[off + k] = p[off + esize - 1 - k];
            crc = amp_st_crc32c(crc, chunk, len);
            p += len;
            left -= len;
        }
    }
    return crc;
}

/* "<path>.tmp", opened for writing, locked (an exclusive flock: a save of
 * the same path in another process waits for this one's rename) and
 * emptied.  Once the lock is held the name must still be this file: the
 * save that held it before may have renamed it over `path`, and then the
 * name is opened afresh.  The descriptor, or -1. */
static int open_temporary(const char *tmp)
{
    for (int tries = 0; tries < 1000; tries++) {
        struct stat held, named;
        int fd = open(tmp, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            return -1;
        int rc;
        while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
            ;
        /* a file system without locks: go on unlocked, as a lone saver */
        if (rc != 0 && errno != ENOLCK && errno != EOPNOTSUPP && errno != ENOSYS) {
            close(fd);
            return -1;
        }
        if (fstat(fd, &held) == 0 && lstat(tmp, &named) == 0 && held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino && S_ISREG(held.st_mode)) {
            if (ftruncate(fd, 0) == 0)
                return fd;
            close(fd);
            return -1;
        }
        close(fd); /* renamed away meanwhile: take the name again */
    }
    return -1;
}

/* Writes and syncs the whole file through fd, which stays open (and
 * locked). 0 or -1. */
static int write_file(int fd, const st_buf *header, const amp_st_entry *tensors, int n,
                      const uint64_t *nbytes)
{
    unsigned char size[8];
    int failed = 0, copy = dup(fd);
    FILE *fp = copy >= 0 ? fdopen(copy, "wb") : NULL;
    if (!fp) {
        if (copy >= 0)
            close(copy);
        return -1;
    }
    for (int i = 0; i < 8; i++)
        size[i] = (unsigned char)((uint64_t)header->len >> (8 * i));
    if (fwrite(size, 1, 8, fp) != 8 || fwrite(header->s, 1, header->len, fp) != header->len)
        failed = 1;
    for (int i = 0; i < n && !failed; i++)
        if (write_le(fp, tensors[i].data, nbytes[i], amp_dtype_size(tensors[i].dtype)))
            failed = 1;
    if (!failed && (fflush(fp) != 0 || fsync(fileno(fp)) != 0))
        failed = 1;
    if (fclose(fp) != 0)
        failed = 1;
    return failed ? -1 : 0;
}

/* fsync of the directory holding path, so that the rename is durable.
 * A file system that cannot sync directories (EINVAL) is not an error. */
static int sync_parent(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    int fd, rc = 0;
    if (!slash) {
        dir = malloc(2);
        if (dir)
            strcpy(dir, ".");
    } else {
        size_t len = slash == path ? 1 : (size_t)(slash - path); /* "/x": the root */
        dir = malloc(len + 1);
        if (dir) {
            memcpy(dir, path, len);
            dir[len] = '\0';
        }
    }
    if (!dir)
        return -1;
    fd = open(dir, O_RDONLY | O_DIRECTORY);
    free(dir);
    if (fd < 0)
        return -1;
    if (fsync(fd) != 0 && errno != EINVAL)
        rc = -1;
    if (close(fd) != 0)
        rc = -1;
    return rc;
}

int amp_st_write(const char *path, const amp_st_entry *tensors, int n)
{
    uint64_t *nbytes = NULL;
    st_buf header = { NULL, 0, 0, 0 };
    char *tmp = NULL;
    struct stat old;
    int status, fd;

    if (!path || (n > 0 && !tensors))
        return AMP_ERR_NULL_ARG;
    if (n < 0)
        return AMP_ERR_BAD_DIM;
    nbytes = malloc((n > 0 ? (size_t)n : 1) * sizeof *nbytes);
    if (!nbytes)
        return AMP_ERR_OUT_OF_MEMORY;
    status = check_entries(tensors, n, nbytes);
    if (status == AMP_OK)
        status = build_header(tensors, n, nbytes, data_crc(tensors, n, nbytes), &header);
    if (status == AMP_OK) {
        tmp = malloc(strlen(path) + sizeof ".tmp");
        if (!tmp)
            status = AMP_ERR_OUT_OF_MEMORY;
    }
    if (status != AMP_OK)
        goto done;

    strcpy(tmp, path);
    strcat(tmp, ".tmp");
    fd = open_temporary(tmp);
    if (fd < 0) {
        status = AMP_ERR_IO;
        goto done;
    }
    /* The temporary is created 0600. Keep the permissions of the file
     * replaced; a new one gets 0644. Best effort: a file system without
     * modes may refuse, and 0600 is the safe side to err on. */
    (void)fchmod(fd, stat(path, &old) == 0 ? (old.st_mode & 0777) : 0644);
    if (write_file(fd, &header, tensors, n, nbytes) != 0 || rename(tmp, path) != 0) {
        unlink(tmp); /* still ours: the lock is held until close */
        close(fd);
        status = AMP_ERR_IO;
        goto done;
    }
    if (close(fd) != 0)
        status = AMP_ERR_IO;
    if (sync_parent(path) != 0)
        status = AMP_ERR_IO; /* replaced, but perhaps not durably */
done:
    free(tmp);
    free(header.s);
    free(nbytes);
    return status;
}

#endif /* !AMPRT_NO_STDIO */
