/*
 * collective_mpi.c - the collectives of amprt/collective.h on MPI, the
 * library built with `make MPI=1`.  The world is MPI_COMM_WORLD, used
 * through a duplicate so that our non-blocking reductions can never match
 * the caller's own messages.
 *
 * amp_allreduce_mean packs the tensors into two alternating staging
 * buffers (buckets) of the wire type: f32 by default, bf16 on request,
 * f64 for f64 tensors (those go in buckets of their own, after the
 * others).  Each bucket is reduced with one MPI_Iallreduce started as soon
 * as it is packed; while it travels, the next one is packed, and a bucket
 * is unpacked (scaled by 1/world, rounded to the tensor's dtype) once its
 * reduction completes.  The sum itself is MPI's: Open MPI's algorithms
 * leave the same bits on every process (each partial sum is formed once
 * and sent on, or formed symmetrically from two commuting operands), which
 * tests/mpi checks by comparing parameter checksums across processes.
 *
 * bf16 on the wire has no MPI type, so it travels as MPI_UINT16_T with a
 * user operation that adds two bf16 values in f32 and rounds the sum to
 * bf16 (commutative, so MPI may combine in any order).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "collective_internal.h"

static MPI_Comm comm = MPI_COMM_NULL;
static MPI_Op bf16_sum_op = MPI_OP_NULL;
static int rank, world = 1;
static int started_mpi; /* whether amp_coll_init called MPI_Init_thread */
static int env_read;

/* The staging buffers, grown to the bucket size on first use. */
static void *stage[2];
static size_t stage_bytes;

static void bf16_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    const amp_bf16 *a = in;
    amp_bf16 *b = inout;
    (void)type;
    for (int i = 0; i < *len; i++)
        b[i] = amp_f32_to_bf16(amp_bf16_to_f32(a[i]) + amp_bf16_to_f32(b[i]));
}

/* Joins MPI_COMM_WORLD if MPI is running; otherwise stays a world of 1. */
static int join(void)
{
    int up = 0, down = 0;
    if (comm != MPI_COMM_NULL)
        return AMP_OK;
    if (!env_read) {
        int rc = amp_coll_read_env();
        if (rc != AMP_OK)
            return rc;
        env_read = 1;
    }
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (!up || down)
        return AMP_OK; /* no MPI: one process */
    if (MPI_Comm_dup(MPI_COMM_WORLD, &comm) != MPI_SUCCESS ||
        MPI_Op_create(bf16_sum, 1, &bf16_sum_op) != MPI_SUCCESS) {
        fprintf(stderr, "amprt: cannot set up the MPI communicator\n");
        return AMP_ERR_COLLECTIVE;
    }
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &world);
    return AMP_OK;
}

int amp_coll_init(int *argc, char ***argv)
{
    int up = 0;
    if (comm != MPI_COMM_NULL)
        return AMP_OK;
    MPI_Initialized(&up);
    if (!up) {
        /* FUNNELED: the runtime's worker threads never call MPI. */
        int provided;
        if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
            fprintf(stderr, "amprt: MPI_Init_thread failed\n");
            return AMP_ERR_COLLECTIVE;
        }
        started_mpi = 1;
    }
    return join();
}

int amp_coll_finalize(void)
{
    int down = 0;
    MPI_Finalized(&down);
    if (comm != MPI_COMM_NULL && !down) {
        MPI_Op_free(&bf16_sum_op);
        MPI_Comm_free(&comm);
    }
    comm = MPI_COMM_NULL;
    rank = 0;
    world = 1;
    free(stage[0]);
    free(stage[1]);
    stage[0] = stage[1] = NULL;
    stage_bytes = 0;
    if (started_mpi && !down)
        MPI_Finalize();
    started_mpi = 0;
    return AMP_OK;
}

/* MPI_COMM_WORLD's numbers, without joining: joining duplicates the
 * communicator, a collective call, and these may be called by one process
 * alone. */
static int world_number(int want_size)
{
    int up = 0, down = 0, v;
    if (comm != MPI_COMM_NULL)
        return want_size ? world : rank;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (!up || down)
        return want_size ? 1 : 0;
    if (want_size)
        MPI_Comm_size(MPI_COMM_WORLD, &v);
    else
        MPI_Comm_rank(MPI_COMM_WORLD, &v);
    return v;
}

int amp_coll_rank(void) { return world_number(0); }
int amp_coll_world(void) { return world_number(1); }
const char *amp_coll_backend(void) { return "mpi"; }

/* ---- packing ------------------------------------------------------------- */

/* A position in the tensor list: tensor i, element j. */
typedef struct cursor {
    int i;
    size_t j;
} cursor;

/* The element type a tensor travels in. */
static amp_dtype wire_of(amp_dtype t) { return t == AMP_F64 ? AMP_F64 : amp_coll_allreduce_dtype(); }

/* Moves *c to the next element of a tensor whose wire type is `wire`
 * (skipping empty tensors and those of the other kind); 0 at the end. */
static int settle(const amp_coll_tensor *t, int n, amp_dtype wire, cursor *c)
{
    while (c->i < n && (c->j >= t[c->i].n || wire_of(t[c->i].dtype) != wire)) {
        c->i++;
        c->j = 0;
    }
    return c->i < n;
}

static float load_f32(const amp_coll_tensor *t, size_t j)
{
    return amp_load_as_f32(t->dtype, t->data, j);
}

/* Elements packed between two MPI_Test calls on the bucket in flight:
 * Open MPI advances a non-blocking collective only inside MPI calls, so
 * without them the previous bucket would wait for the next MPI_Wait. */
#define PROGRESS_CHUNK ((size_t)16384)

/* Packs up to cap elements from *c into buf; returns the count and
 * advances *c past them.  Polls `inflight` (the other bucket's request,
 * possibly MPI_REQUEST_NULL; MPI_Test turns it into that when done). */
static size_t pack(const amp_coll_tensor *t, int n, amp_dtype wire, cursor *c, void *buf, size_t cap,
                   MPI_Request *inflight)
{
    size_t k = 0;
    while (k < cap && settle(t, n, wire, c)) {
        const amp_coll_tensor *x = &t[c->i];
        size_t take = x->n - c->j < cap - k ? x->n - c->j : cap - k;
        if (take > PROGRESS_CHUNK)
            take = PROGRESS_CHUNK;
        if (*inflight != MPI_REQUEST_NULL) {
            int done;
            MPI_Test(inflight, &done, MPI_STATUS_IGNORE);
        }
        if (wire == AMP_F64)
            memcpy((double *)buf + k, (const double *)x->data + c->j, take * sizeof(double));
        else if (wire == AMP_F32 && x->dtype == AMP_F32)
            memcpy((float *)buf + k, (const float *)x->data + c->j, take * sizeof(float));
        else if (wire == AMP_F32)
            for (size_t e = 0; e < take; e++)
                ((float *)buf)[k + e] = load_f32(x, c->j + e);
        else if (x->dtype == AMP_BF16)
            memcpy((amp_bf16 *)buf + k, (const amp_bf16 *)x->data + c->j, take * sizeof(amp_bf16));
        else
            for (size_t e = 0; e < take; e++)
                ((amp_bf16 *)buf)[k + e] = amp_f32_to_bf16(load_f32(x, c->j + e));
        k += take;
        c->j += take;
    }
    return k;
}

/* Writes count reduced elements of buf back from *c on, times 1/world,
 * each rounded to its tensor's dtype once. */
static void unpack(const amp_coll_tensor *t, int n, amp_dtype wire, cursor c, const void *buf, size_t count)
{
    const double inv = 1.0 / (double)world;
    const float finv = (float)inv;
    size_t k = 0;
    while (k < count && settle(t, n, wire, &c)) {
        const amp_coll_tensor *x = &t[c.i];
        size_t take = x->n - c.j < count - k ? x->n - c.j : count - k;
        for (size_t e = 0; e < take; e++) {
            if (wire == AMP_F64) {
                ((double *)x->data)[c.j + e] = ((const double *)buf)[k + e] * inv;
                continue;
            }
            float v = wire == AMP_F32 ? ((const float *)buf)[k + e] : amp_bf16_to_f32(((const amp_bf16 *)buf)[k + e]);
            v *= finv;
            switch (x->dtype) {
            case AMP_F32: ((float *)x->data)[c.j + e] = v; break;
            case AMP_BF16: ((amp_bf16 *)x->data)[c.j + e] = amp_f32_to_bf16(v); break;
            default: ((amp_f16 *)x->data)[c.j + e] = amp_f32_to_f16(v); break;
            }
        }
        k += take;
        c.j += take;
    }
}

/* The reductions of one wire type, two buckets in flight at most.
 * pending[b]: bucket b was sent and is not unpacked yet (its request may
 * already have completed, in pack's MPI_Test). */
static void reduce_kind(const amp_coll_tensor *t, int n, amp_dtype wire)
{
    const size_t esize = amp_dtype_size(wire);
    const size_t cap = stage_bytes / esize;
    MPI_Datatype type = wire == AMP_F64 ? MPI_DOUBLE : wire == AMP_F32 ? MPI_FLOAT : MPI_UINT16_T;
    MPI_Op op = wire == AMP_BF16 ? bf16_sum_op : MPI_SUM;
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    cursor from[2], c = {0, 0};
    size_t count[2] = {0, 0};
    int pending[2] = {0, 0};
    for (int b = 0;; b ^= 1) {
        if (pending[b]) {
            MPI_Wait(&req[b], MPI_STATUS_IGNORE);
            unpack(t, n, wire, from[b], stage[b], count[b]);
            pending[b] = 0;
        }
        from[b] = c;
        count[b] = pack(t, n, wire, &c, stage[b], cap, &req[b ^ 1]);
        if (count[b] == 0)
            break;
        /* cap <= 2^30 / 2, so the count fits an int */
        MPI_Iallreduce(MPI_IN_PLACE, stage[b], (int)count[b], type, op, comm, &req[b]);
        pending[b] = 1;
    }
    for (int b = 0; b < 2; b++)
        if (pending[b]) {
            MPI_Wait(&req[b], MPI_STATUS_IGNORE);
            unpack(t, n, wire, from[b], stage[b], count[b]);
        }
}

int amp_allreduce_mean(const amp_coll_tensor *tensors, int n)
{
    int rc = amp_coll_check_tensors(tensors, n);
    if (rc != AMP_OK)
        return rc;
    rc = join();
    if (rc != AMP_OK)
        return rc;
    if (world == 1)
        return AMP_OK;
    if (stage_bytes != amp_coll_bucket_bytes()) {
        free(stage[0]);
        free(stage[1]);
        stage_bytes = amp_coll_bucket_bytes();
        stage[0] = malloc(stage_bytes);
        stage[1] = malloc(stage_bytes);
        if (!stage[0] || !stage[1]) {
            free(stage[0]);
            free(stage[1]);
            stage[0] = stage[1] = NULL;
            stage_bytes = 0;
            return AMP_ERR_OUT_OF_MEMORY;
        }
    }
    reduce_kind(tensors, n, amp_coll_allreduce_dtype());
    reduce_kind(tensors, n, AMP_F64);
    return AMP_OK;
}

int amp_allreduce_max_i32(int32_t *v)
{
    if (!v)
        return AMP_ERR_NULL_ARG;
    int rc = join();
    if (rc != AMP_OK)
        return rc;
    if (world > 1)
        MPI_Allreduce(MPI_IN_PLACE, v, 1, MPI_INT32_T, MPI_MAX, comm);
    return AMP_OK;
}
