/* fuzz_safetensors.c: libFuzzer target for the safetensors reader of libamprt.
 *
 * The input bytes are a whole safetensors file, given to amp_st_parse.
 * Build (from the top of the repository; tests/fuzz/run-safetensors.sh
 * does this):
 *
 *   clang -std=c99 -D_POSIX_C_SOURCE=200809L -g -O1 -Iruntime/include \
 *       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *       -o build/fuzz/fuzz_safetensors tests/fuzz/fuzz_safetensors.c $SRCS -lm
 *
 * with SRCS the reader, the parameter loader and what they call:
 * runtime/src/safetensors.c, st_params.c, dtype.c and status.c (compiled with the fuzzer's instrumentation too).
 * What counts as a finding:
 *   - any ASan / UBSan / LSan report, or a hang (-timeout);
 *   - a broken contract of amp_st_parse (checked below, abort()):
 *       * it returns AMP_OK with a file, or one of the weights statuses
 *         (a checksum mismatch included, or out of memory) with *out NULL;
 *       * on AMP_OK: tensors are numbered in data order and tile the data
 *         region exactly, each inside the input, of the size its dtype and
 *         shape say, at most 8 dims, names NUL-terminated and findable by
 *         amp_st_find (unless they hold a NUL); amp_st_load of every tensor
 *         with its own dtype and shape copies its bytes, and with another
 *         dtype or shape fails without writing;
 *       * amp_st_load_params (runtime/src/st_params.c) against a small
 *         model (w f32[2, 3], b bf16[3]) writes a NUL-terminated message
 *         inside its buffer, empty exactly on AMP_OK, and on an error
 *         leaves the storage and the pointers as they were.
 */
#include "amprt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (ok)
        return;
    fprintf(stderr, "fuzz_safetensors: broken contract of amp_st_parse: %s\n", what);
    abort();
}

static int host_is_little_endian(void)
{
    const uint16_t one = 1;
    unsigned char c;
    memcpy(&c, &one, 1);
    return c == 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a private copy, exactly `size` bytes, so ASan sees any overread */
    uint8_t *copy = malloc(size ? size : 1);
    amp_st_file *f = (amp_st_file *)&copy; /* must be overwritten */
    uint64_t pos = 0;
    const uint8_t *base = NULL;
    int rc, n;

    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    rc = amp_st_parse(copy, size, &f);
    if (rc != AMP_OK) {
        check(f == NULL, "*out not NULL after an error");
        check(rc == AMP_ERR_WEIGHTS_TRUNCATED || rc == AMP_ERR_WEIGHTS_HEADER || rc == AMP_ERR_WEIGHTS_OFFSETS ||
                  rc == AMP_ERR_WEIGHTS_SHAPE || rc == AMP_ERR_WEIGHTS_DTYPE || rc == AMP_ERR_WEIGHTS_CHECKSUM ||
                  rc == AMP_ERR_OUT_OF_MEMORY,
              "unexpected status");
        free(copy);
        return 0;
    }
    check(f != NULL, "AMP_OK without a file");
    n = amp_st_count(f);
    check(n >= 0, "negative count");
    check(amp_st_get(f, n) == NULL && amp_st_get(f, -1) == NULL, "amp_st_get out of range");
    for (int i = 0; i < n; i++) {
        const amp_st_tensor *t = amp_st_get(f, i);
        const uint8_t *bytes;
        uint64_t numel = 1, nbytes;
        size_t esize;
        void *dst;
        int64_t other[8];

        check(t != NULL, "amp_st_get NULL in range");
        check(t->ndim >= 0 && t->ndim <= 8, "ndim outside 0..8");
        check(t->name[t->name_len] == '\0', "name not NUL-terminated");
        if (memchr(t->name, '\0', t->name_len) == NULL)
            check(amp_st_find(f, t->name) == t, "amp_st_find misses a name");
        check(t->begin == pos, "tensors do not tile the data");
        check(t->end >= t->begin, "end < begin");
        pos = t->end;
        esize = amp_dtype_size(t->dtype);
        check(esize != 0, "invalid dtype");
        for (int d = 0; d < t->ndim; d++) {
            check(t->shape[d] >= 0, "negative dim");
            numel *= (uint64_t)t->shape[d]; /* cannot wrap: parse checked it */
        }
        nbytes = numel * esize;
        check(nbytes == t->end - t->begin, "size disagrees with dtype and shape");
        bytes = amp_st_data(f, t);
        if (i == 0)
            base = bytes;
        check(bytes == base + t->begin, "amp_st_data not at begin");
        check(bytes >= copy && nbytes <= size && (size_t)(bytes - copy) <= size - (size_t)nbytes,
              "tensor outside the input");

        dst = malloc(nbytes ? (size_t)nbytes : 1);
        if (!dst)
            continue;
        check(amp_st_load(f, t->name, t->dtype, t->ndim, t->shape, dst) == AMP_OK ||
                  memchr(t->name, '\0', t->name_len) != NULL,
              "amp_st_load of a tensor as it is fails");
        if (memchr(t->name, '\0', t->name_len) == NULL && esize == 1)
            check(nbytes == 0 || memcmp(dst, bytes, (size_t)nbytes) == 0, "amp_st_load copied other bytes");
        else if (memchr(t->name, '\0', t->name_len) == NULL && host_is_little_endian())
            check(nbytes == 0 || memcmp(dst, bytes, (size_t)nbytes) == 0, "amp_st_load copied other bytes");
        memcpy(other, t->shape, sizeof other);
        if (t->ndim > 0 && memchr(t->name, '\0', t->name_len) == NULL) {
            other[0] ^= 1;
            check(amp_st_load(f, t->name, t->dtype, t->ndim, other, dst) == AMP_ERR_WEIGHTS_SHAPE,
                  "amp_st_load accepts another shape");
        }
        if (memchr(t->name, '\0', t->name_len) == NULL)
            check(amp_st_load(f, t->name, t->dtype == AMP_F32 ? AMP_F64 : AMP_F32, t->ndim, t->shape, dst) ==
                      AMP_ERR_WEIGHTS_DTYPE,
                  "amp_st_load accepts another dtype");
        free(dst);
    }
    check(base == NULL || (size_t)(base - copy) + pos == size, "tensors do not end at the end of the input");
    {
        static const amp_st_param model[2] = {
            {"w", AMP_F32, 2, {2, 3}, 0, 0},
            {"b", AMP_BF16, 1, {3}, 64, sizeof(void *)},
        };
        unsigned char storage[128];
        const void *pointers[2] = {NULL, NULL};
        char message[96];
        int rc;
        memset(storage, 0xAB, sizeof storage);
        memset(message, 'z', sizeof message);
        rc = amp_st_load_params(f, model, 2, storage, sizeof storage, pointers, message, sizeof message);
        check(memchr(message, '\0', sizeof message) != NULL, "amp_st_load_params's message not terminated");
        check((rc == AMP_OK) == (message[0] == '\0'), "amp_st_load_params's message empty but on success");
        if (rc == AMP_OK) {
            check(pointers[0] == storage && pointers[1] == storage + 64, "amp_st_load_params's pointers");
        } else {
            check(pointers[0] == NULL && pointers[1] == NULL, "amp_st_load_params set a pointer on an error");
            for (size_t k = 0; k < sizeof storage; k++)
                check(storage[k] == 0xAB, "amp_st_load_params wrote the storage on an error");
        }
    }
    amp_st_close(f);
    free(copy);
    return 0;
}
