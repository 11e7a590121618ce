/*
 * amprt/collective.h - part of amprt.h (include that, not this): the
 * collectives of data-parallel training (docs/distributed.md).
 *
 * Several processes each run the same emitted training step on their own
 * shard of every batch; <prefix>_update averages the gradients over the
 * processes before it unscales them, and takes the maximum of found_inf
 * over them before the optimizer, so every process makes the same update
 * (or skips the same step) and the parameters stay identical everywhere.
 *
 * Two builds of the library export exactly these names, so the emitted C
 * is the same for both:
 *  - the default one (collective_single.c) is one process: rank 0 of a
 *    world of 1, and the reductions leave their data as it is;
 *  - `make MPI=1` (collective_mpi.c) runs on MPI: the world is every
 *    process mpirun started (MPI_COMM_WORLD).  A program that never calls
 *    amp_coll_init and never initialises MPI itself is still a world of 1.
 *
 *  amp_coll_init      joins the world: initialises MPI if the caller has
 *                     not (argc/argv may be NULL), or uses the caller's
 *                     MPI_COMM_WORLD if it has; reads AMPRT_ALLREDUCE_DTYPE
 *                     and AMPRT_ALLREDUCE_BUCKET_BYTES (below).  A second
 *                     call does nothing.  AMP_OK, or AMP_ERR_COLLECTIVE
 *                     (MPI failed to start, or a variable has a value it
 *                     does not take; a message on stderr says which).
 *  amp_coll_finalize  leaves it: finalises MPI if amp_coll_init started it.
 *                     Call it once every process is done with the collectives.
 *  amp_coll_rank      this process's number, 0..world-1 (0 without MPI).
 *  amp_coll_world     the number of processes (1 without MPI).
 *                     Both are local calls; amp_coll_init, the reductions
 *                     and amp_coll_finalize must be called by every process.
 *  amp_coll_backend   "single" or "mpi": which build this library is.
 *  amp_allreduce_mean every process passes the same list (the same count,
 *                     sizes and dtypes, in the same order); afterwards each
 *                     tensor holds, on every process, the elementwise sum
 *                     over the processes times 1/world (xm.all_reduce('sum',
 *                     g, scale=1/world)), the same bits on every process
 *                     (Open MPI's reductions form each partial sum once, or
 *                     symmetrically; tests/mpi checks it on parameters).
 *                     dtypes f64, f32, bf16, f16.  f64 sums in f64; the
 *                     others are packed into buckets of f32 (the default)
 *                     or bf16 (AMPRT_ALLREDUCE_DTYPE=bf16), summed there,
 *                     then multiplied by (float)(1/world) in f32 and rounded
 *                     to the tensor's dtype once.  With a world of 1 nothing
 *                     is touched (no rounding to bf16 either), so one
 *                     process is bit-identical to the library without MPI.
 *                     AMP_OK; AMP_ERR_NULL_ARG (list or a non-empty tensor's
 *                     data NULL with n > 0); AMP_ERR_BAD_DIM (n < 0);
 *                     AMP_ERR_COLLECTIVE (a dtype it cannot reduce);
 *                     AMP_ERR_OUT_OF_MEMORY (the staging buffers).
 *                     A failure of MPI itself aborts every process (MPI's
 *                     default handler): a process that returned an error
 *                     would leave the others waiting in the collective.
 *                     Not while a push-style reduction (below) is open
 *                     (AMP_ERR_COLLECTIVE).
 *  amp_allreduce_begin, amp_allreduce_push, amp_allreduce_finish
 *                     the same reduction, a tensor at a time, so it can run
 *                     while the caller computes the rest (the emitted
 *                     backward pushes each gradient once it is final):
 *                     begin(n) opens a reduction of n tensors; push(t)
 *                     packs *t (the struct is copied, the data must stay
 *                     put until finish) and starts each bucket's reduction
 *                     once it is full, polling those in flight; finish()
 *                     sends the last bucket, waits for all and leaves every
 *                     pushed tensor as amp_allreduce_mean of the same list
 *                     would, bit for bit.  Every process pushes the same
 *                     list in the same order.  With a world of 1 they only
 *                     check their arguments and touch no data.
 *                     begin: AMP_ERR_BAD_DIM (n < 0), AMP_ERR_COLLECTIVE
 *                     (one is already open), AMP_ERR_OUT_OF_MEMORY (then
 *                     nothing is open).  push: AMP_ERR_COLLECTIVE (none
 *                     open), AMP_ERR_NULL_ARG (t, or a non-empty tensor's
 *                     data), AMP_ERR_COLLECTIVE (a dtype it cannot reduce),
 *                     AMP_ERR_BAD_DIM (n were pushed already); a refused
 *                     tensor is not reduced.  finish: AMP_ERR_COLLECTIVE
 *                     (none open), AMP_ERR_BAD_DIM (fewer than n pushed:
 *                     those that were are reduced and it is closed anyway).
 *  amp_allreduce_open 1 between a successful begin and its finish, else 0:
 *                     lets a caller tell whether the tensors were pushed.
 *  amp_allreduce_max_i32  *v becomes the maximum of *v over the processes.
 *  amp_coll_set_allreduce_dtype  AMP_F32 (the default) or AMP_BF16: the
 *                     element type the f32/bf16/f16 buckets travel and sum
 *                     in; bf16 halves the traffic at a cost in accuracy
 *                     (docs/distributed.md measures it).  AMP_OK or
 *                     AMP_ERR_COLLECTIVE for another dtype.  Every process
 *                     must choose the same one.
 *  amp_coll_allreduce_dtype  the one in use.
 *
 * Buckets: the tensors are packed, in list (push) order and split where they do
 * not fit, into staging buffers of AMPRT_ALLREDUCE_BUCKET_BYTES (default 4
 * MiB, at least 64 bytes), so a model's gradients take a few large
 * reductions rather than one per tensor.  Two buffers alternate: while one
 * bucket's non-blocking all-reduce is in flight, the next is packed and the
 * previous one unpacked.
 *
 * Threads: call these from one thread (the one that initialised MPI).
 */
typedef struct amp_coll_tensor {
    void *data;
    size_t n; /* elements */
    amp_dtype dtype;
} amp_coll_tensor;

int amp_coll_init(int *argc, char ***argv);
int amp_coll_finalize(void);
int amp_coll_rank(void);
int amp_coll_world(void);
const char *amp_coll_backend(void);
int amp_allreduce_mean(const amp_coll_tensor *tensors, int n);
int amp_allreduce_begin(int n_tensors);
int amp_allreduce_push(const amp_coll_tensor *t);
int amp_allreduce_finish(void);
int amp_allreduce_open(void);
int amp_allreduce_max_i32(int32_t *v);
int amp_coll_set_allreduce_dtype(amp_dtype dtype);
amp_dtype amp_coll_allreduce_dtype(void);
