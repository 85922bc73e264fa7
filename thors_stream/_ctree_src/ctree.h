/* ctree.h: the one internal header of thors_stream._ctree: layout, hot inline helpers, cross-unit names. */

/*
 * _ctree: the compiled core of thors_stream.
 *
 * CTree is a B+-tree over the distinct scores ("keys") held, plus an optional FIFO
 * ring of the held events (the expiry queue of a count or time window).
 *
 * Leaves hold up to LCAP keys with, per key, the class counts (uint32) and the class
 * weights as double-double numbers: hi parts in an arena parallel to the leaves, absent
 * while every event has weighed 1 and the weights are the counts ("plain" mode, see
 * WeightBlock); lo parts in a side block allocated only when some lo part is non-zero.
 * Inner nodes hold up to ICAP children
 * with, per child, a lower bound of its keys (the separator) and the child's
 * aggregate: sum of VAL = a * w1 - b * w0 over its keys, the minimum non-empty
 * prefix sum of VAL with the key reaching it first, and the child's totals of
 * w1, w0, c1, c0. The optimum (minimum prefix sum over all keys) is read at the root.
 *
 * Guarantees:
 * - deterministic and balanced: every leaf is at the same depth, every node but the
 *   root holds at least a third of its capacity, so an update is O(log n) worst case
 *   whatever the keys; the tree's height is at most 8 below 2**31 keys;
 * - no recursion deeper than the tree's height; walks over all keys are loops;
 * - history independence: per-key weights are updated with error-free transformations
 *   (TwoSum), so adding then removing an event restores them exactly whenever every
 *   intermediate per-key sum fits in a double-double; a class whose count reaches
 *   zero at a key has weight exactly zero; every aggregate is recomputed from its
 *   children (never adjusted by a delta), so it is a function of the held keys and
 *   of the tree's shape, and of the held keys alone whenever the sums are exact;
 * - laziness: an update marks the nodes on its path dirty; reads recompute the dirty
 *   aggregates first (so an insert + expiry pair shares the work near the root).
 *
 * Mutations validate before they change anything: removing what is not held raises
 * KeyError and leaves the tree unchanged; memory is reserved before any structural
 * change, so a MemoryError also leaves it unchanged.
 */

/*
 * The compiled core is one extension module built from these units (each holds one concern;
 * this header is all they share):
 *   tree.c      the B+-tree: arenas, aggregates and their lazy refresh, slots, split / spill /
 *               merge, upsert, the in-order walk;
 *   runs.c      sorted changes applied leaf by leaf: apply_runs, and apply_runs_two (two threads);
 *               run_pair, the second thread every two-thread path starts;
 *   sort.c      the radix sorts of the batch paths;
 *   batch.c     the builder (bulk rebuild), apply_sorted_impl, batches of events, batch methods;
 *   keyed.c     batches aggregated by key (the key table) and the whole-window rebuild;
 *   wbatch.c    a count window's large batch on a plain tree, as count changes by key, two threads;
 *   reads.c     threshold, cost, totals, export, range / rank / Neyman-Pearson reads;
 *   ring.c      the expiry ring of a count or time window and its methods;
 *   selector.c  selector_step (thors_stream.selection.WindowSelector's hot path);
 *   module.c    the CTree type (life cycle, per-event methods and fast paths, revert predictor,
 *               checks), the method table, the module's test hooks and its init.
 * Small helpers on the hot paths are static inline here, so every unit inlines them as the
 * single file did; every name shared between units is hidden (not exported by the module).
 */
#ifndef THORS_STREAM_CTREE_H
#define THORS_STREAM_CTREE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string.h>

#define LCAP 32
#define ICAP 32
_Static_assert(LCAP % 4 == 0 && LCAP <= 64, "leaf_agg reads four quarters of 4 * ceil(n / 4) <= LCAP slots");
_Static_assert(ICAP % 4 == 0, "inner_agg reads four quarters of 4 * ceil(n / 4) <= ICAP children");
/* the AVX2 leaf aggregate reads one row of 8 slots per quarter: right for LCAP <= 32 only
   (tried with 64 on 2026-11-25: leaves of more than 32 keys read past its 8 transposed rows,
   and check() and tests/test_simd_agg.py failed) */
_Static_assert(LCAP <= 32, "leaf_agg_plain_avx2 reads one row of 8 slots per quarter");
#define LMIN 10
#define IMIN 10 /* a non-root inner node holds >= IMIN children */
#define MAXH 24 /* height bound (far above what 2**31 keys need) */
#define NIL (-1)
#define CANCELLED 2
#define PREFETCH_KEYS 32768 /* below this many keys (~1.5 MB of leaves) a tree stays in cache */

typedef struct {
    double sum, minp, argk, w1, w0, c1, c0;
} Agg;

typedef struct {
    double key[LCAP];
    uint32_t c1[LCAP], c0[LCAP]; /* the class counts */
    int32_t n, lo; /* lo: index of the LoBlock or NIL (all lo parts zero) */
    int32_t next_free, pad;
} Leaf;

/* The class weights (hi parts) of leaf i's slots, in an arena parallel to the leaves
   (same index). Absent while the tree is "plain": each slot's weights are its counts
   (integers, lo parts zero) and need no bytes of their own; a leaf is then 528 bytes instead
   of 1040 (with its weights), and a scattered update touches 9 cache lines instead of 17.
   Plain says nothing of single events: a tree is plain while every event applied weighed 1,
   and again after a rebuild whose per-score sums equal the counts (weights 0.5 and 1.5 at one
   score, say), while the ring still holds those events with their own weights (see
   ring_unit_weights). */
typedef struct {
    double w1[LCAP], w0[LCAP];
} WeightBlock;

typedef struct {
    double w1[LCAP], w0[LCAP];
} LoBlock;

typedef struct {
    int32_t n, next_free; /* first: a descent reads n and the separators together */
    uint64_t mask; /* bit i: child i's aggregate is stale */
    double sep[ICAP];
    int32_t child[ICAP];
    Agg agg[ICAP];
} Inner;

typedef struct {
    PyObject_HEAD
    Leaf *leaves;
    Inner *inners;
    LoBlock *los;
    WeightBlock *wts; /* NULL while plain (see WeightBlock) */
    int32_t wcap;     /* wts holds wcap blocks (>= lcap when not plain) */
    int plain;
    int32_t lcap, lused, lfree, nleaves;
    int32_t icap, iused, ifree, ninners;
    int32_t ocap, oused, ofree, nlos;
    int32_t root, height; /* height 0: the root is a leaf */
    Py_ssize_t n_keys;
    double a, b;
    Agg top; /* aggregate of the whole tree (valid when !root_dirty) */
    int root_dirty;
    /* expiry ring */
    int ring; /* 0 none, 1 count window, 2 time window */
    double *qs, *qw, *qt;
    uint8_t *qy;
    Py_ssize_t qhead, qsize, qcap;
    int qunit; /* 1 while every record ever queued weighed 1 (ring_put and ring_put_many clear it) */
    /* path of the last descent */
    int32_t pnode[MAXH], pidx[MAXH];
    /* fast paths bound by StreamingThors (see bind()) */
    PyObject *slow_update, *slow_revert, *slow_get, *ledger_at;
    PyObject *slow_threshold; /* the locked get() that fast_get hands over to while busy */
    Py_ssize_t limit;   /* count window size (ring 1) */
    double wmax, wmin;  /* largest and smallest weight the fast path accepts */
    long long n_updates;
    int busy;           /* > 0 while a Python method of StreamingThors works on this core */
    unsigned long long version; /* raised by every change of the held multiset */
    unsigned long long sgen;    /* raised by every split, spill, merge or root change */
    /* Neyman-Pearson rank tables: min_count0 per count0, max_count1 per count1 */
    int np0, np1;
    Py_ssize_t k0_base, k0_len, m1_base, m1_len;
    long long *k0_tab, *m1_tab;
    /* revert predictor (unwindowed trees, see pr_revert): the keys of the held events in
       the order they were added, oldest first, while every change came through add, remove,
       add_many and the fast paths in that order */
    double *pr_key;
    Py_ssize_t pr_head, pr_size, pr_cap;
    int pr_state; /* 1 recording, 0 off (a windowed tree, or given up) */
    long long pr_hits; /* reverts whose key the predictor had (tests) */
    /* set when a batch failed part way (a MemoryError after some of its changes were made):
       the tree no longer matches the queue, so every entry point refuses to go on */
    int broken;
} CTree;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_AVX2_AGG 1
#endif

/* ---- walking all keys in order (a loop with an explicit stack; tree.c) ---- */

typedef struct {
    CTree *t;
    int32_t stack_node[MAXH], stack_idx[MAXH];
    int depth;
    int32_t leaf;
} Walk;

/* A rebuild, key by key in ascending order (a Builder): build_begin makes room for at most
   nmax keys and empties the tree, build_key appends one key's row, build_end closes the
   leaves and builds the inner levels. Leaves are filled 3/4 full, FILL keys each (the last
   two share theirs evenly when the last would be short): about the fill a tree under random
   inserts and expiries settles at (23 keys a leaf at 10**6 after 300 batches of 10**4), so a
   sliding window that starts from a bulk load does not split most of its leaves over its
   first batches. Measured (paired, in one process, 24 batches of 10**4 at 10**6): 0.90-0.92
   of the time of 7/8 just after the load, 0.86-0.93 after 150 batches. Inner nodes are
   filled 7/8, their counts spread evenly. */
#define FILL (LCAP * 3 / 4)
#define IFILL (ICAP * 7 / 8)

typedef struct {
    CTree *t;
    int32_t *level; /* the leaves (then each level's nodes) made so far, and their lowest keys */
    double *lsep;
    Agg *agg;       /* their aggregates (a leaf's computed as it is closed, while in cache) */
    Py_ssize_t nl, n;
    Leaf *L;        /* the leaf being filled (NULL before the first key) */
} Builder;

#define BIT(i) ((uint64_t)1 << (i))

/* Every name below (and every function the units share) is internal to the module. */
#if defined(__GNUC__)
#pragma GCC visibility push(hidden)
#endif

/* ------------------------------------------------------------------ shared state */

extern long long fail_reserve_after; /* tree.c (tests: _fail_reserve_after) */
#ifdef HAVE_AVX2_AGG
/* 1: plain leaves are aggregated with AVX2 (set at import when the CPU has it;
   _set_simd turns it off for tests) */
extern int simd_agg;                 /* tree.c */
#endif
extern int batch_threads;            /* runs.c (_set_batch_threads, THORS_STREAM_BATCH_THREADS) */
extern long long two_thread_batches, deferred_runs, multi_key_leaves; /* runs.c (tests: _batch_counters) */
extern Py_ssize_t rebuild_ratio;     /* batch.c (_set_rebuild_ratio) */
extern long long keyed_batches, replaced_batches; /* keyed.c (tests: _path_counters) */
extern long long row_batches;        /* wbatch.c (tests: _path_counters) */
extern PyTypeObject CTreeType;       /* module.c */

/* ------------------------------------------------------------------ what each unit gives the others */

/* tree.c: the B+-tree */
int resize_weights(CTree *t, int32_t cap);
int leave_plain(CTree *t);
int reserve(CTree *t, int32_t k);
void key_error(double key);
void leaf_agg(CTree *t, Leaf *L, Agg *g);
void inner_agg(Inner *N, Agg *g, int plain);
void refresh(CTree *t, int32_t node, int level, Agg *out);
void leaf_open(CTree *t, Leaf *L, int32_t pos);
void leaf_close(CTree *t, Leaf *L, int32_t pos);
void leaf_copy(CTree *t, int32_t dst, int32_t d, int32_t src, int32_t s, int32_t cnt);
void leaf_shift(CTree *t, int32_t i, int32_t from, int32_t to, int32_t cnt);
void leaf_changed(CTree *t, Leaf *L);
/* upsert (below) with the descent done; dc are small integers (>= -2**32) */
int upsert_leaf(CTree *t, int32_t leaf, double key, double dw1, double dw0, int64_t dc1, int64_t dc0);
int32_t walk_first(Walk *wk, CTree *t);
int32_t walk_next(Walk *wk);

/* runs.c: sorted changes applied leaf by leaf (one or two threads), and the two threads themselves */
#define SPIN_MAX 40000 /* run_pair's spin before it sleeps: up to ~1 ms (a pause is ~25 ns here) */
void run_pair(void (*fn)(void *), void *a, void *b, int spin);
int apply_runs(CTree *t, const double *k, const double *a1, const double *a0, const double *d1,
               const double *d0, Py_ssize_t m);
int apply_runs_two(CTree *t, const double *k, const double *a1, const double *a0, const double *d1,
                   const double *d0, Py_ssize_t m);

/* sort.c: radix sorts */
int radix_order(const double *key, Py_ssize_t m, uint32_t *order);
uint64_t *radix_values(uint64_t *a, uint64_t *tmp, Py_ssize_t m);
void radix_tagged(uint64_t **v, uint8_t **g, uint64_t *tmp, uint8_t *gtmp, Py_ssize_t m, uint32_t (*all)[2048]);

/* batch.c: the builder, apply_sorted_impl, batches of events and their methods */
int build_begin(Builder *B, CTree *t, Py_ssize_t nmax, int plain, Py_ssize_t nlo);
void build_end(Builder *B);
int build_from(CTree *t, const double *k, const double *h1, const double *l1, const double *h0,
               const double *l0, const double *c1, const double *c0, Py_ssize_t n);
int apply_sorted_impl(CTree *self, const double *k, const double *a1, const double *a0, const double *d1,
                      const double *d0, Py_ssize_t m, int two_threads);
PyObject *CTree_apply_sorted(CTree *self, PyObject *args);
PyObject *CTree_add_many(CTree *self, PyObject *args);
PyObject *CTree_window_push_many(CTree *self, PyObject *args);

/* keyed.c: batches by key and the whole-window rebuild */
int apply_keyed(CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t q0, Py_ssize_t q1,
                Py_ssize_t e_old);
int replace_all(CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t q0,
                Py_ssize_t q1);

/* wbatch.c: a count window's large batch on a plain tree, as count changes by key */
int apply_window_rows(CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t q0, Py_ssize_t q1,
                      Py_ssize_t e_old);

/* reads.c: reads (CTree methods) */
PyObject *CTree_held_at(CTree *self, PyObject *arg);
PyObject *CTree_held_at_exact(CTree *self, PyObject *arg);
PyObject *CTree_best(CTree *self, PyObject *Py_UNUSED(ignored));
PyObject *CTree_threshold(CTree *self, PyObject *Py_UNUSED(ignored));
PyObject *CTree_fast_get(CTree *self, PyObject *Py_UNUSED(ignored));
PyObject *CTree_cost(CTree *self, PyObject *Py_UNUSED(ignored));
PyObject *CTree_totals(CTree *self, PyObject *Py_UNUSED(ignored));
PyObject *CTree_n_events(CTree *self, PyObject *Py_UNUSED(ignored));
PyObject *CTree_export(CTree *self, PyObject *Py_UNUSED(ignored));
PyObject *CTree_export_lo(CTree *self, PyObject *Py_UNUSED(ignored));
PyObject *CTree_totals_upto(CTree *self, PyObject *arg);
PyObject *CTree_np_best(CTree *self, PyObject *args);
PyObject *CTree_range_best(CTree *self, PyObject *args);
PyObject *CTree_rank_best(CTree *self, PyObject *args);
PyObject *CTree_kth_key(CTree *self, PyObject *args);
PyObject *CTree_set_np_tables(CTree *self, PyObject *args);
PyObject *CTree_np_get(CTree *self, PyObject *Py_UNUSED(ignored));

/* ring.c: the expiry ring */
int ring_grow(CTree *t, Py_ssize_t need, Py_ssize_t hint);
void ring_put_many(CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t n);
int window_push(CTree *self, double key, int pos, double w, Py_ssize_t limit);
PyObject *CTree_window_push(CTree *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *CTree_time_push(CTree *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *CTree_expire_until(CTree *self, PyObject *arg);
PyObject *CTree_q_push_many(CTree *self, PyObject *args);
PyObject *CTree_q_arrays(CTree *self, PyObject *args);
PyObject *CTree_q_drop(CTree *self, PyObject *arg);
PyObject *CTree_q_count_expired(CTree *self, PyObject *arg);
PyObject *CTree_q_oldest_time(CTree *self, PyObject *Py_UNUSED(ignored));
PyObject *CTree_q_find(CTree *self, PyObject *args);
PyObject *CTree_q_time_at(CTree *self, PyObject *arg);
PyObject *CTree_q_cancel(CTree *self, PyObject *arg);
PyObject *CTree_q_len(CTree *self, PyObject *Py_UNUSED(ignored));

/* selector.c: the window selector's step */
PyObject *selector_step(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* module.c: the revert predictor and the argument parser shared by the per-event methods */
void pr_stop(CTree *t);
void pr_push(CTree *t, double key);
int parse3(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *sig, double *key,
           int *pos, double *w);

/* ------------------------------------------------------------------ hot helpers (static inline) */

/* Raise (and return -1) when the tree is broken (see CTree.broken). */
static inline int refuse_broken(const CTree *t) {
    if (!t->broken) return 0;
    PyErr_SetString(PyExc_RuntimeError,
                    "this summary is inconsistent: a MemoryError interrupted a batch (update_many) after part of "
                    "it was applied; rebuild the summary or load a checkpoint");
    return -1;
}

/* Slot i's counts. */
static inline void get_counts(const Leaf *L, int32_t i, uint32_t *c1, uint32_t *c0) {
    *c1 = L->c1[i]; *c0 = L->c0[i];
}

/* Set slot i's counts. */
static inline void set_counts(Leaf *L, int32_t i, uint32_t c1, uint32_t c0) {
    L->c1[i] = c1; L->c0[i] = c0;
}

/* Slot i's weights (hi parts): a plain tree's are its counts. */
static inline void get_hi(const CTree *t, const Leaf *L, int32_t i, double *h1, double *h0) {
    if (t->plain) { *h1 = (double)L->c1[i]; *h0 = (double)L->c0[i]; return; }
    const WeightBlock *W = &t->wts[L - t->leaves];
    *h1 = W->w1[i]; *h0 = W->w0[i];
}

/* Set slot i's weights (hi parts; a plain tree keeps them in the counts: nothing to store,
   and they are equal to the counts the caller stores). */
static inline void set_hi(CTree *t, const Leaf *L, int32_t i, double h1, double h0) {
    if (t->plain) return;
    WeightBlock *W = &t->wts[L - t->leaves];
    W->w1[i] = h1; W->w0[i] = h0;
}

/* ------------------------------------------------------------------ arenas (tree.c grows them) */

static inline int32_t new_leaf(CTree *t) {
    int32_t i;
    if (t->lfree != NIL) { i = t->lfree; t->lfree = t->leaves[i].next_free; }
    else i = t->lused++;
    Leaf *L = &t->leaves[i];
    L->n = 0; L->lo = NIL; L->next_free = NIL;
    t->nleaves++;
    return i;
}

static inline int32_t new_inner(CTree *t) {
    int32_t i;
    if (t->ifree != NIL) { i = t->ifree; t->ifree = t->inners[i].next_free; }
    else i = t->iused++;
    Inner *N = &t->inners[i];
    N->n = 0; N->mask = 0; N->next_free = NIL;
    t->ninners++;
    return i;
}

static inline int32_t new_lo(CTree *t) {
    int32_t o;
    if (t->ofree != NIL) { o = t->ofree; t->ofree = *(int32_t *)&t->los[o]; }
    else o = t->oused++;
    memset(&t->los[o], 0, sizeof(LoBlock));
    t->nlos++;
    return o;
}

/* ------------------------------------------------------------------ exact sums */

/* (hi, lo) += w with error-free transformations; the result is renormalised
   (hi = fl(hi + lo)). Exact whenever the true sum fits in a double-double. */
static inline void dd_add(double *hi, double *lo, double w) {
    double s = *hi + w, bb = s - *hi;
    double e = (*hi - (s - bb)) + (w - bb);
    double t = *lo + e;
    double h = s + t;
    double l = t - (h - s);
    *hi = h; *lo = l;
}

/* ------------------------------------------------------------------ prefetches and stale marks */

/* Ask for the n bytes at a, to be written: into L1 (l2 = 0) or only into L2 (l2 = 1).
   The empty asm keeps the loop: GCC 12 deletes a loop made of prefetches alone when it
   does not unroll it first (as happened once the count block's prefetch sat under a
   condition: every prefetch of the function was gone, and the batch path ran 1.5x
   slower). */
static inline void prefetch_bytes(const void *a, size_t n, int l2) {
    const char *p = (const char *)a;
    for (size_t o = 0; o < n; o += 64) {
        if (l2) __builtin_prefetch(p + o, 1, 2);
        else __builtin_prefetch(p + o, 1, 3);
        __asm__ volatile("" : : "r"(p + o));
    }
}

/* Ask for every cache line of a leaf and of its counts (the binary search, the shifts
   and the aggregate read all of it). */
static inline void prefetch_leaf(CTree *t, int32_t leaf) {
    prefetch_bytes(&t->leaves[leaf], sizeof(Leaf), 0);
    if (!t->plain) prefetch_bytes(&t->wts[leaf], sizeof(WeightBlock), 0);
}

/* The batch path's prefetch, several leaves ahead: into L2, not L1. A leaf is 9 lines
   (17 with its weights);
   asking L1 for eight leaves at once fills its few miss buffers, and the prefetches
   themselves then stall the work on the leaf at hand (measured: 18% slower at 10**6). */
static inline void prefetch_leaf_l2(CTree *t, int32_t leaf) {
    prefetch_bytes(&t->leaves[leaf], sizeof(Leaf), 1);
    if (!t->plain) prefetch_bytes(&t->wts[leaf], sizeof(WeightBlock), 1);
}

/* After a descent: ask for the aggregates of the leaf's parent (the path's level-1 node),
   which the next read recomputes from all its children's entries (up to ICAP * 56 bytes).
   Only when the inner nodes outgrow a core's L2 (about 1 MB of them, some 500 nodes: a tree
   of about 400,000 keys and up); below that they stay in cache, and the prefetches would
   only cost (paired A/Bs of update + get: 0.94-0.96 of the time at 10**6 keys, 1.02 at
   10**5 when prefetching there too). */
#define AGG_PREFETCH_INNERS 512
static inline void prefetch_parent_aggs(CTree *t) {
    if (t->height > 0 && t->ninners > AGG_PREFETCH_INNERS) {
        const Inner *P = &t->inners[t->pnode[t->height - 1]];
        prefetch_bytes(P->agg, (size_t)P->n * sizeof(Agg), 0);
    }
}

static inline uint64_t bits_below(int32_t pos) { return pos >= 64 ? ~(uint64_t)0 : BIT(pos) - 1; }

static inline void clean(CTree *t) {
    if (t->root_dirty) {
        refresh(t, t->root, t->height, &t->top);
        t->root_dirty = 0;
    }
}

/* Mark the recorded path's entries stale from depth l up to the root (stopping where
   they already are: a stale entry's ancestors are stale too). */
static inline void mark_from(CTree *t, int l) {
    for (; l >= 0; l--) {
        Inner *N = &t->inners[t->pnode[l]];
        uint64_t bit = BIT(t->pidx[l]);
        if (N->mask & bit) break;
        N->mask |= bit;
    }
    t->root_dirty = 1;
}

/* Mark the aggregates on the whole recorded path stale. */
static inline void mark_path(CTree *t) { mark_from(t, t->height - 1); }

/* ------------------------------------------------------------------ descent */

static inline int32_t child_index(const Inner *N, double key) {
    /* number of separators sep[1..n) <= key: a branch-free count, two at a time with SSE2
       (every x86-64 has it) */
    int32_t j = 1, n = N->n, i = 0;
#if defined(__SSE2__)
    __m128d k2 = _mm_set1_pd(key);
    __m128i acc = _mm_setzero_si128();
    for (; j + 1 < n; j += 2)
        acc = _mm_sub_epi64(acc, _mm_castpd_si128(_mm_cmple_pd(_mm_loadu_pd(N->sep + j), k2)));
    i = (int32_t)(_mm_cvtsi128_si64(acc) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc)));
#endif
    for (; j < n; j++) i += N->sep[j] <= key;
    return i;
}

static inline int32_t leaf_pos(const Leaf *L, double key) {
    /* number of keys < key (branches: when the leaf is not in cache yet, speculation
       runs ahead and overlaps the misses, where a branch-free search would chain them) */
    int32_t lo = 0, hi = L->n;
    while (lo < hi) {
        int32_t mid = (lo + hi) >> 1;
        if (L->key[mid] < key) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* pos + the number of keys < key in L->key[pos..n): a branch-free count, two keys at a
   time with SSE2 (for a leaf already in cache: no mispredicted branches). */
static inline int32_t count_below(const Leaf *L, int32_t pos, double key) {
    int32_t j = pos, n = L->n, i = pos;
#if defined(__SSE2__)
    __m128d k2 = _mm_set1_pd(key);
    __m128i acc = _mm_setzero_si128();
    for (; j + 1 < n; j += 2)
        acc = _mm_sub_epi64(acc, _mm_castpd_si128(_mm_cmplt_pd(_mm_loadu_pd(L->key + j), k2)));
    i += (int32_t)(_mm_cvtsi128_si64(acc) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc)));
#endif
    for (; j < n; j++) i += L->key[j] < key;
    return i;
}

/* Descend to the leaf for key, recording the path: pnode[l], pidx[l] for the inner
   node at depth l (0 = root) and the child taken there. */
static inline int32_t descend(CTree *t, double key) {
    int32_t node = t->root;
    for (int l = 0; l < t->height; l++) {
        Inner *N = &t->inners[node];
        int32_t i = child_index(N, key);
        t->pnode[l] = node; t->pidx[l] = i;
        node = N->child[i];
    }
    return node;
}

/* Add (dw1, dw0) weight and (dc1, dc0) events at key. dc are small integers (>= -2**32).
   Returns 0, or -1 with KeyError/ValueError/MemoryError set and the tree unchanged. */
static inline int upsert(CTree *t, double key, double dw1, double dw0, int64_t dc1, int64_t dc0) {
    int32_t leaf = descend(t, key);
    /* a large tree: ask for all of the leaf at once: its count (at the end), the keys the
       search reads and the slots the update writes then miss together rather than one
       after another (a small tree is in cache: the prefetches would only cost) */
    if (t->n_keys > PREFETCH_KEYS) prefetch_leaf(t, leaf);
    return upsert_leaf(t, leaf, key, dw1, dw0, dc1, dc0);
}

/* ------------------------------------------------------------------ low parts of a leaf's weights */

static inline void leaf_lo_get(CTree *t, Leaf *L, int32_t i, double *l1, double *l0) {
    if (L->lo == NIL) { *l1 = 0.0; *l0 = 0.0; return; }
    *l1 = t->los[L->lo].w1[i]; *l0 = t->los[L->lo].w0[i];
}

/* needs a reserved lo block when the parts are non-zero and the leaf has none */
static inline void leaf_lo_set(CTree *t, Leaf *L, int32_t i, double l1, double l0) {
    if (L->lo == NIL) {
        if (l1 == 0.0 && l0 == 0.0) return;
        L->lo = new_lo(t);
    }
    t->los[L->lo].w1[i] = l1; t->los[L->lo].w0[i] = l0;
}

/* ------------------------------------------------------------------ the threshold; sortable bits */

/* The threshold of a tree holding keys (-inf: all positive), its stale aggregates
   recomputed first. */
static inline double tree_threshold(CTree *t) {
    clean(t);
    return t->top.minp < 0.0 ? t->top.argk : -INFINITY;
}

/* Whether the e_old oldest ring records (cancelled ones skipped) all weigh 1: what a path that
   removes them as counts needs besides a plain tree (see WeightBlock). */
static inline int ring_unit_weights(const CTree *t, Py_ssize_t e_old) {
    if (t->qunit) return 1;
    Py_ssize_t j = t->qhead, left = e_old;
    while (left > 0) {
        Py_ssize_t run = t->qcap - j < left ? t->qcap - j : left;
        for (Py_ssize_t u = j; u < j + run; u++)
            if (t->qw[u] != 1.0 && t->qy[u] != CANCELLED) return 0;
        left -= run;
        j = 0;
    }
    return 1;
}

/* The first zero among the scores s[q0, q1) (either sign), else 0.0: the representation a
   batch gives a zero score new to the tree (the first to arrive). */
static inline double first_zero(const double *s, Py_ssize_t q0, Py_ssize_t q1) {
    for (Py_ssize_t q = q0; q < q1; q++)
        if (s[q] == 0.0) return s[q];
    return 0.0;
}

/* Sortable bits of a double (ascending as the double; -0.0 as +0.0). */
static inline uint64_t sort_bits(double d) {
    uint64_t u;
    d += 0.0; /* -0.0 + 0.0 = 0.0: one key, so one digit pattern (the sort is stable) */
    memcpy(&u, &d, 8);
    return (u >> 63) ? ~u : u | ((uint64_t)1 << 63);
}

static inline double unsort_bits(uint64_t u) {
    u = (u >> 63) ? u & ~((uint64_t)1 << 63) : ~u;
    double d;
    memcpy(&d, &u, 8);
    return d;
}

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#endif /* THORS_STREAM_CTREE_H */
