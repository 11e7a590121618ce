/*
 * compare.c - compare A.safetensors B.safetensors TOL: the parameters of
 * two checkpoints the digits trainer wrote (every tensor but the optimizer
 * state, the gradients and the scalars: grad.*, optimizer.*, scaler.*,
 * train.*) are the same tensors, of the same dtype and shape, and differ
 * element by element by at most TOL.  Prints the largest difference and
 * where it is; exits 0 when within TOL, 1 when not, 2 on a bad file.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amprt.h"

static int is_param(const char *name)
{
    static const char *skip[] = {"grad.", "optimizer.", "scaler.", "train."};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (strncmp(name, skip[i], strlen(skip[i])) == 0)
            return 0;
    return 1;
}

static size_t numel(const amp_st_tensor *t)
{
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n *= (size_t)t->shape[d];
    return n;
}

int main(int argc, char **argv)
{
    amp_st_file *a, *b;
    if (argc != 4) {
        fprintf(stderr, "usage: %s A.safetensors B.safetensors TOL\n", argv[0]);
        return 2;
    }
    double tol = strtod(argv[3], NULL);
    if (amp_st_open(argv[1], &a) != AMP_OK || amp_st_open(argv[2], &b) != AMP_OK) {
        fprintf(stderr, "compare: cannot read %s or %s\n", argv[1], argv[2]);
        return 2;
    }
    double worst = 0, worst_mag = 0;
    const char *where = "(none)";
    size_t count = 0;
    for (int i = 0; i < amp_st_count(a); i++) {
        const amp_st_tensor *ta = amp_st_get(a, i), *tb;
        if (!is_param(ta->name))
            continue;
        tb = amp_st_find(b, ta->name);
        if (!tb || tb->dtype != ta->dtype || numel(tb) != numel(ta) || ta->dtype == AMP_I64 ||
            ta->dtype == AMP_I32 || ta->dtype == AMP_BOOL) {
            fprintf(stderr, "compare: %s: not the same floating-point tensor in both files\n", ta->name);
            return 2;
        }
        /* the raw bytes may be unaligned: copy each element out */
        size_t n = numel(ta), es = amp_dtype_size(ta->dtype);
        const unsigned char *pa = amp_st_data(a, ta), *pb = amp_st_data(b, tb);
        for (size_t k = 0; k < n; k++) {
            double x, y;
            if (ta->dtype == AMP_F64) {
                memcpy(&x, pa + k * es, 8);
                memcpy(&y, pb + k * es, 8);
            } else {
                unsigned char ea[4], eb[4];
                memcpy(ea, pa + k * es, es);
                memcpy(eb, pb + k * es, es);
                x = amp_load_as_f32(ta->dtype, ea, 0);
                y = amp_load_as_f32(ta->dtype, eb, 0);
            }
            double d = fabs(x - y);
            if (!(d <= worst)) { /* NaN counts as the worst */
                worst = d;
                where = ta->name;
            }
            if (fabs(y) > worst_mag)
                worst_mag = fabs(y);
            count++;
        }
    }
    int ok = count > 0 && worst <= tol;
    printf("%zu parameters; largest difference %.3g (in %s), largest magnitude %.3g; tolerance %.3g\n", count,
           worst, where, worst_mag, tol);
    amp_st_close(a);
    amp_st_close(b);
    return ok ? 0 : 1;
}
