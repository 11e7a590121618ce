/*
 * collective_mpi.c - the collectives of amprt/collective.h on MPI, the
 * library built with `make MPI=1`.  The world is MPI_COMM_WORLD, used
 * through a duplicate so that our non-blocking reductions can never match
 * the caller's own messages.
 *
 * amp_allreduce_push packs each tensor, as it comes, into two alternating
 * staging buffers (buckets) of the wire type: f32 by default, bf16 on
 * request, f64 for f64 tensors (those go in buckets of their own, packed
 * by amp_allreduce_finish after the others).  Each bucket is reduced with
 * one MPI_Iallreduce started as soon as it is full (finish sends the last,
 * partial one); while it travels, the next one is packed, and a bucket is
 * unpacked (scaled by 1/world, rounded to the tensor's dtype) once its
 * reduction completes.  amp_allreduce_mean is begin, a push of each tensor
 * and finish, so both ways reduce the same buckets to the same bits.  The
 * sum itself is MPI's: Open MPI's algorithms leave the same bits on every
 * process (each partial sum is formed once and sent on, or formed
 * symmetrically from two commuting operands), which tests/mpi checks by
 * comparing parameter checksums across processes.
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

/* The tensors of the open reduction, in push order (the cursors of the
 * buckets index this list), and whether it communicates at all (a world
 * of 1 only keeps the bookkeeping). */
static amp_coll_tensor *list;
static int list_cap, list_n;
static int communicating;

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
    free(list);
    list = NULL;
    list_cap = list_n = 0;
    communicating = 0;
    amp_coll_push_reset();
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

/* ---- the reduction, one tensor at a time -------------------------------- */

/* The reductions of one wire type, two buckets in flight at most: the
 * bucket being filled, stage[b], and the other one, sent and possibly not
 * unpacked yet.  pending[b]: bucket b was sent and is not unpacked yet (its
 * request may already have completed, in an MPI_Test).  A bucket is waited
 * for only when it is to be filled again, so that a caller pushing tensors
 * as its backward produces them keeps computing while both travel. */
typedef struct stream {
    amp_dtype wire;
    MPI_Datatype type;
    MPI_Op op;
    size_t cap; /* elements per bucket */
    int b;      /* the bucket being filled */
    size_t fill;
    cursor from[2];
    size_t count[2];
    int pending[2];
    MPI_Request req[2];
} stream;

static stream cur;

static void stream_start(stream *s, amp_dtype wire)
{
    s->wire = wire;
    s->type = wire == AMP_F64 ? MPI_DOUBLE : wire == AMP_F32 ? MPI_FLOAT : MPI_UINT16_T;
    s->op = wire == AMP_BF16 ? bf16_sum_op : MPI_SUM;
    s->cap = stage_bytes / amp_dtype_size(wire);
    s->b = 0;
    s->fill = 0;
    for (int b = 0; b < 2; b++) {
        s->count[b] = 0;
        s->pending[b] = 0;
        s->req[b] = MPI_REQUEST_NULL;
    }
}

static void stream_wait(stream *s, int b)
{
    if (!s->pending[b])
        return;
    MPI_Wait(&s->req[b], MPI_STATUS_IGNORE);
    unpack(list, list_n, s->wire, s->from[b], stage[b], s->count[b]);
    s->pending[b] = 0;
}

/* Starts the reduction of the bucket being filled, if it holds anything. */
static void stream_send(stream *s)
{
    int b = s->b;
    if (s->fill == 0)
        return;
    s->count[b] = s->fill;
    /* cap <= 2^30 / 2, so the count fits an int */
    MPI_Iallreduce(MPI_IN_PLACE, stage[b], (int)s->count[b], s->type, s->op, comm, &s->req[b]);
    s->pending[b] = 1;
    s->b = b ^ 1;
    s->fill = 0;
}

/* Packs list[i] (of the stream's wire type) into the buckets, sending each
 * one that fills up. */
static void stream_add(stream *s, int i)
{
    cursor c = {i, 0};
    /* pack is given the list up to i only, so it stops at this tensor's end
     * (moving c past it) rather than packing later ones twice */
    while (c.i == i && c.j < list[i].n) {
        int b = s->b;
        if (s->fill == 0) {
            stream_wait(s, b);
            s->from[b] = c;
        }
        size_t k = pack(list, i + 1, s->wire, &c, (char *)stage[b] + s->fill * amp_dtype_size(s->wire),
                        s->cap - s->fill, &s->req[b ^ 1]);
        s->fill += k;
        if (s->fill == s->cap)
            stream_send(s);
    }
}

/* Sends the last, partial bucket and waits for both. */
static void stream_flush(stream *s)
{
    stream_send(s);
    stream_wait(s, s->b ^ 1); /* the older one first */
    stream_wait(s, s->b);
}

static int ensure_stage(void)
{
    if (stage_bytes == amp_coll_bucket_bytes())
        return AMP_OK;
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
    return AMP_OK;
}

int amp_allreduce_begin(int n_tensors)
{
    int rc = amp_coll_begin_check(n_tensors);
    if (rc != AMP_OK)
        return rc;
    rc = join();
    if (rc == AMP_OK && world > 1) {
        rc = ensure_stage();
        if (rc == AMP_OK && list_cap < n_tensors) {
            amp_coll_tensor *grown = realloc(list, (size_t)n_tensors * sizeof *list);
            if (grown) {
                list = grown;
                list_cap = n_tensors;
            } else
                rc = AMP_ERR_OUT_OF_MEMORY;
        }
    }
    if (rc != AMP_OK) {
        amp_coll_push_reset(); /* nothing is open after a failed begin */
        return rc;
    }
    communicating = world > 1;
    list_n = 0;
    if (communicating)
        stream_start(&cur, amp_coll_allreduce_dtype());
    return AMP_OK;
}

/* f64 tensors travel in buckets of their own, after the others (finish),
 * so a list reduced by pushes packs exactly as amp_allreduce_mean does. */
int amp_allreduce_push(const amp_coll_tensor *t)
{
    int index;
    int rc = amp_coll_push_check(t, &index);
    if (rc != AMP_OK || !communicating)
        return rc;
    list[index] = *t;
    list_n = index + 1;
    if (wire_of(t->dtype) == cur.wire)
        stream_add(&cur, index);
    return AMP_OK;
}

int amp_allreduce_finish(void)
{
    int rc = amp_coll_finish_check();
    if (rc == AMP_ERR_COLLECTIVE || !communicating)
        return rc;
    stream_flush(&cur);
    stream_start(&cur, AMP_F64);
    for (int i = 0; i < list_n; i++)
        if (list[i].dtype == AMP_F64)
            stream_add(&cur, i);
    stream_flush(&cur);
    communicating = 0;
    return rc;
}

int amp_allreduce_mean(const amp_coll_tensor *tensors, int n)
{
    int rc = amp_coll_check_tensors(tensors, n);
    if (rc != AMP_OK)
        return rc;
    rc = amp_allreduce_begin(n);
    if (rc != AMP_OK)
        return rc;
    for (int i = 0; i < n; i++)
        amp_allreduce_push(&tensors[i]); /* checked above: cannot fail */
    return amp_allreduce_finish();
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
