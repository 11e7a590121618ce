/* ref_heapsort.h: an ascending in-place heapsort of doubles, shared by the
 * quantile kernels and their gradient (ref_quantile.c,
 * ref_backward_quantile.c), which sort each slice's values in a work array.
 * NaNs are ordered by neither comparison, so callers move them out first. */
#ifndef AMP_REF_HEAPSORT_H
#define AMP_REF_HEAPSORT_H

#include <stdint.h>

static inline void ref_sort(double *a, int64_t n)
{
    for (int64_t start = n / 2 - 1, end = n;; ) {
        int64_t root;
        if (start >= 0) {
            root = start--;
        } else {
            if (--end <= 0)
                break;
            double t = a[0];
            a[0] = a[end];
            a[end] = t;
            root = 0;
        }
        for (;;) {
            int64_t child = 2 * root + 1;
            if (child >= end)
                break;
            if (child + 1 < end && a[child + 1] > a[child])
                child++;
            if (!(a[child] > a[root]))
                break;
            double t = a[root];
            a[root] = a[child];
            a[child] = t;
            root = child;
        }
    }
}

#endif
