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
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stddef.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string.h>
#ifdef __linux__
#include <sched.h>
#endif

#define LCAP 32
#define ICAP 32
_Static_assert(LCAP % 4 == 0 && LCAP <= 64, "leaf_agg reads four quarters of 4 * ceil(n / 4) <= LCAP slots");
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
   (same index). Absent while the tree is "plain": every event ever applied weighed
   exactly 1, so each slot's weights are its counts (integers, lo parts zero) and need no
   bytes of their own; a leaf is then 528 bytes instead of 1040 (with its weights), and a
   scattered update touches 9 cache lines instead of 17. */
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

/* Raise (and return -1) when the tree is broken (see CTree.broken). */
static int refuse_broken(const CTree *t) {
    if (!t->broken) return 0;
    PyErr_SetString(PyExc_RuntimeError,
                    "this summary is inconsistent: a MemoryError interrupted a batch (update_many) after part of "
                    "it was applied; rebuild the summary or load a checkpoint");
    return -1;
}

/* Tests only: make the n+1-th later reserve() (or leave_plain()) fail with MemoryError
   (-1: never). */
static long long fail_reserve_after = -1;

/* ------------------------------------------------------------------ arenas */

static int grow(void **arr, int32_t *cap, size_t item, int32_t need) {
    if (*cap >= need) return 0;
    int64_t nc = *cap ? (int64_t)*cap + *cap / 4 + 8 : 16; /* 1.25x: at most 20% slack */
    if (nc < need) nc = need;
    if (nc > INT32_MAX / 2) { PyErr_SetString(PyExc_MemoryError, "thors_stream tree: too many nodes"); return -1; }
    void *p = PyMem_Realloc(*arr, (size_t)nc * item);
    if (!p) { PyErr_NoMemory(); return -1; }
    *arr = p; *cap = (int32_t)nc;
    return 0;
}

/* Make the weights arena cap (>= 1) blocks long. Returns 0, or -1 with nothing changed
   and no exception set (a failed shrink is harmless; a failed growth is the caller's
   MemoryError). */
static int resize_weights(CTree *t, int32_t cap) {
    if (cap < 1) cap = 1;
    void *p = PyMem_Realloc(t->wts, (size_t)cap * sizeof(WeightBlock));
    if (!p) return -1;
    t->wts = p; t->wcap = cap;
    return 0;
}

/* Weights arena as long as the leaf arena (when the tree is not plain). */
static int grow_weights(CTree *t) {
    if (t->plain || t->wcap >= t->lcap) return 0;
    if (resize_weights(t, t->lcap) < 0) { PyErr_NoMemory(); return -1; }
    return 0;
}

/* Store the weights from now on: every slot of every leaf gets its weights from its
   counts (they are equal while the tree is plain). Called before the first change
   that would make them differ. O(leaves * LCAP), once. Returns 0, or -1 with
   MemoryError set and nothing changed. */
static int leave_plain(CTree *t) {
    if (!t->plain) return 0;
    if (fail_reserve_after >= 0 && fail_reserve_after-- == 0) { PyErr_NoMemory(); return -1; }
    /* (a rebuild may have left a block behind) */
    if ((t->wcap < t->lcap || !t->wts) && resize_weights(t, t->lcap) < 0) { PyErr_NoMemory(); return -1; }
    WeightBlock *w = t->wts;
    for (int32_t i = 0; i < t->lused; i++) {
        const Leaf *L = &t->leaves[i];
        int32_t n = L->n < 0 ? 0 : L->n > LCAP ? LCAP : L->n; /* free leaves included: harmless */
        for (int32_t j = 0; j < n; j++) {
            w[i].w1[j] = (double)L->c1[j];
            w[i].w0[j] = (double)L->c0[j];
        }
    }
    t->plain = 0;
    return 0;
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

/* Make room for k new leaves, inner nodes and lo blocks (before any structural change). */
static int reserve(CTree *t, int32_t k) {
    if (fail_reserve_after >= 0 && fail_reserve_after-- == 0) { PyErr_NoMemory(); return -1; }
    if (t->lcap - t->lused >= k && t->icap - t->iused >= k && t->ocap - t->oused >= k && (t->plain || t->wcap >= t->lcap))
        return 0;
    int32_t freeL = t->lcap - t->lused, freeI = t->icap - t->iused, freeO = t->ocap - t->oused;
    int32_t fl = 0, fi = 0, fo = 0;
    for (int32_t i = t->lfree; i != NIL && fl < k; i = t->leaves[i].next_free) fl++;
    for (int32_t i = t->ifree; i != NIL && fi < k; i = t->inners[i].next_free) fi++;
    for (int32_t i = t->ofree; i != NIL && fo < k; i = *(int32_t *)&t->los[i]) fo++;
    if (freeL + fl < k && grow((void **)&t->leaves, &t->lcap, sizeof(Leaf), t->lused + k) < 0) return -1;
    if (freeI + fi < k && grow((void **)&t->inners, &t->icap, sizeof(Inner), t->iused + k) < 0) return -1;
    if (freeO + fo < k && grow((void **)&t->los, &t->ocap, sizeof(LoBlock), t->oused + k) < 0) return -1;
    return grow_weights(t);
}

static int32_t new_leaf(CTree *t) {
    int32_t i;
    if (t->lfree != NIL) { i = t->lfree; t->lfree = t->leaves[i].next_free; }
    else i = t->lused++;
    Leaf *L = &t->leaves[i];
    L->n = 0; L->lo = NIL; L->next_free = NIL;
    t->nleaves++;
    return i;
}

static void free_lo(CTree *t, int32_t o) {
    *(int32_t *)&t->los[o] = t->ofree;
    t->ofree = o;
    t->nlos--;
}

static void free_leaf(CTree *t, int32_t i) {
    Leaf *L = &t->leaves[i];
    if (L->lo != NIL) free_lo(t, L->lo);
    L->lo = NIL;
    L->next_free = t->lfree;
    t->lfree = i;
    t->nleaves--;
}

static int32_t new_inner(CTree *t) {
    int32_t i;
    if (t->ifree != NIL) { i = t->ifree; t->ifree = t->inners[i].next_free; }
    else i = t->iused++;
    Inner *N = &t->inners[i];
    N->n = 0; N->mask = 0; N->next_free = NIL;
    t->ninners++;
    return i;
}

static void free_inner(CTree *t, int32_t i) {
    t->inners[i].next_free = t->ifree;
    t->ifree = i;
    t->ninners--;
}

static int32_t new_lo(CTree *t) {
    int32_t o;
    if (t->ofree != NIL) { o = t->ofree; t->ofree = *(int32_t *)&t->los[o]; }
    else o = t->oused++;
    memset(&t->los[o], 0, sizeof(LoBlock));
    t->nlos++;
    return o;
}

static void key_error(double key) {
    PyObject *k = PyFloat_FromDouble(key);
    if (k) { PyErr_Format(PyExc_KeyError, "no held event of that label has score %R", k); Py_DECREF(k); }
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

/* ------------------------------------------------------------------ aggregates */

/* Join the four quarters' running sums, minima (bi: the slot of each quarter's minimum, -1
   for none) and class sums into the leaf's aggregate, in key order (ties: the lower key). */
static inline void join_quarters(const Leaf *L, const double *acc, const double *best, const int32_t *bi,
                                 const double *W1, const double *W0, Agg *g) {
    double off = 0.0, gbest = INFINITY;
    int32_t gbi = -1;
    for (int c = 0; c < 4; c++) {
        if (bi[c] >= 0) {
            double p = off + best[c];
            if (p < gbest) { gbest = p; gbi = bi[c]; }
        }
        off += acc[c];
    }
    g->sum = off; g->minp = gbest; g->argk = gbi >= 0 ? L->key[gbi] : NAN;
    g->w1 = ((W1[0] + W1[1]) + W1[2]) + W1[3]; g->w0 = ((W0[0] + W0[1]) + W0[2]) + W0[3];
}

/* The aggregate of slots [0, n) of one leaf whose weights are X1, X0 (T: double, or the
   counts' uint32 for a plain leaf, whose weights they are). The leaf's keys in four
   consecutive quarters, summed side by side: four independent dependency chains instead
   of one (the running minimum and its position are selected, not branched on), then
   joined in key order. The result is a function of the leaf's contents; every sum formed
   is a sum of consecutive keys' values, exact whenever those are representable (see the
   module docstring). */
#define LEAF_AGG_BODY(X1, X0)                                                              \
    double a = t->a, b = t->b;                                                             \
    int32_t n = L->n, qs = (n + 3) >> 2;                                                   \
    double acc[4] = {0.0, 0.0, 0.0, 0.0}, best[4] = {INFINITY, INFINITY, INFINITY, INFINITY}; \
    double W1[4] = {0.0, 0.0, 0.0, 0.0}, W0[4] = {0.0, 0.0, 0.0, 0.0};                     \
    int32_t bi[4] = {-1, -1, -1, -1};                                                      \
    for (int32_t j = 0; j < qs; j++)                                                       \
        for (int c = 0; c < 4; c++) {                                                      \
            /* slots past n (4 * qs <= LCAP) are read but masked out */                    \
            int32_t i = c * qs + j;                                                        \
            int in = i < n;                                                                \
            double x1 = in ? (double)(X1)[i] : 0.0, x0 = in ? (double)(X0)[i] : 0.0;       \
            acc[c] += a * x1 - b * x0;                                                     \
            int lt = in & (acc[c] < best[c]);                                              \
            best[c] = lt ? acc[c] : best[c];                                               \
            bi[c] = lt ? i : bi[c];                                                        \
            W1[c] += x1; W0[c] += x0;                                                      \
        }                                                                                  \
    join_quarters(L, acc, best, bi, W1, W0, g);

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_AVX2_AGG 1
/* 1: plain leaves are aggregated with AVX2 (set at import when the CPU has it;
   _set_simd turns it off for tests) */
static int simd_agg = 0;

/* leaf_agg of a plain leaf with AVX2, or 0 (nothing written) when a count is >= 2**31 (the
   conversion is signed; the scalar body takes those). The four quarters are the four lanes
   of one vector, and each lane does the scalar body's operations in its order (a masked
   slot adds +0.0, as the scalar body does), so the aggregate is the scalar one bit for
   bit (tests/test_simd_agg.py compares them). Loads: the counts of each quarter as one
   unaligned 8-slot row (c * qs + 7 <= 31: inside the leaf), transposed in registers. */
__attribute__((target("avx2")))
static int leaf_agg_plain_avx2(const CTree *t, const Leaf *L, Agg *g) {
    int32_t n = L->n, qs = (n + 3) >> 2;
    __m256i r1[4], r0[4];
    __m256i any = _mm256_setzero_si256();
    for (int c = 0; c < 4; c++) {
        r1[c] = _mm256_loadu_si256((const __m256i *)(L->c1 + c * qs));
        r0[c] = _mm256_loadu_si256((const __m256i *)(L->c0 + c * qs));
    }
    /* slots past n are masked out below; only the ones inside may not be >= 2**31 */
    for (int c = 0; c < 4; c++) any = _mm256_or_si256(any, _mm256_or_si256(r1[c], r0[c]));
    if (_mm256_movemask_ps(_mm256_castsi256_ps(any))) {
        for (int32_t i = 0; i < n; i++) if ((L->c1[i] | L->c0[i]) >> 31) return 0;
    }
    __m128i x1[8], x0[8];
#define TRANSPOSE(R, X) do {                                                     \
        __m256i t0 = _mm256_unpacklo_epi32(R[0], R[1]), t1 = _mm256_unpackhi_epi32(R[0], R[1]); \
        __m256i t2 = _mm256_unpacklo_epi32(R[2], R[3]), t3 = _mm256_unpackhi_epi32(R[2], R[3]); \
        __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);         \
        __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);         \
        X[0] = _mm256_castsi256_si128(u0); X[4] = _mm256_extracti128_si256(u0, 1);              \
        X[1] = _mm256_castsi256_si128(u1); X[5] = _mm256_extracti128_si256(u1, 1);              \
        X[2] = _mm256_castsi256_si128(u2); X[6] = _mm256_extracti128_si256(u2, 1);              \
        X[3] = _mm256_castsi256_si128(u3); X[7] = _mm256_extracti128_si256(u3, 1);              \
    } while (0)
    TRANSPOSE(r1, x1);
    TRANSPOSE(r0, x0);
#undef TRANSPOSE
    __m256d a = _mm256_set1_pd(t->a), b = _mm256_set1_pd(t->b), nn = _mm256_set1_pd((double)n);
    __m256d acc = _mm256_setzero_pd(), best = _mm256_set1_pd(INFINITY), bi = _mm256_set1_pd(-1.0);
    __m256d W1 = _mm256_setzero_pd(), W0 = _mm256_setzero_pd();
    __m256d idx = _mm256_setr_pd(0.0, (double)qs, 2.0 * qs, 3.0 * qs), one = _mm256_set1_pd(1.0);
    for (int32_t j = 0; j < qs; j++) {
        __m256d in = _mm256_cmp_pd(idx, nn, _CMP_LT_OQ);
        __m256d v1 = _mm256_and_pd(_mm256_cvtepi32_pd(x1[j]), in), v0 = _mm256_and_pd(_mm256_cvtepi32_pd(x0[j]), in);
        acc = _mm256_add_pd(acc, _mm256_sub_pd(_mm256_mul_pd(a, v1), _mm256_mul_pd(b, v0)));
        __m256d lt = _mm256_and_pd(in, _mm256_cmp_pd(acc, best, _CMP_LT_OQ));
        best = _mm256_blendv_pd(best, acc, lt);
        bi = _mm256_blendv_pd(bi, idx, lt);
        W1 = _mm256_add_pd(W1, v1); W0 = _mm256_add_pd(W0, v0);
        idx = _mm256_add_pd(idx, one);
    }
    double A[4], B[4], I[4], S1[4], S0[4];
    _mm256_storeu_pd(A, acc); _mm256_storeu_pd(B, best); _mm256_storeu_pd(I, bi);
    _mm256_storeu_pd(S1, W1); _mm256_storeu_pd(S0, W0);
    int32_t slots[4] = {(int32_t)I[0], (int32_t)I[1], (int32_t)I[2], (int32_t)I[3]};
    join_quarters(L, A, B, slots, S1, S0, g);
    g->c1 = g->w1; g->c0 = g->w0;
    return 1;
}
#endif

static void leaf_agg(CTree *t, Leaf *L, Agg *g) {
#ifdef HAVE_AVX2_AGG
    if (t->plain && simd_agg && leaf_agg_plain_avx2(t, L, g)) return;
#endif
    if (t->plain) { /* the weights are the counts: integers, so these sums are exact */
        LEAF_AGG_BODY(L->c1, L->c0)
        g->c1 = g->w1; g->c0 = g->w0;
        return;
    }
    const WeightBlock *W = &t->wts[L - t->leaves];
    LEAF_AGG_BODY(W->w1, W->w0)
    uint64_t C1 = 0, C0 = 0;
    for (int32_t i = 0; i < n; i++) { C1 += L->c1[i]; C0 += L->c0[i]; }
    g->c1 = (double)C1; g->c0 = (double)C0;
}
#undef LEAF_AGG_BODY

static void inner_agg(Inner *N, Agg *g, int plain) {
    /* As leaf_agg, in two halves rather than four (four need more registers than x86-64
       has; measured slower, as was a separate pass for the class totals): the children in
       two consecutive halves summed side by side, the running minimum selected rather than
       branched on (a branch on it mispredicted about once a call), then joined in key
       order. Every sum formed is a sum of consecutive children's sums. In a plain tree the
       class counts are the weights (the same sums, see leaf_agg): they are copied, not
       summed again. (Measured: SSE2 lanes for the two halves were 2% slower.) */
    int32_t n = N->n, h = (n + 1) >> 1;
    double acc[2] = {0.0, 0.0}, best[2] = {INFINITY, INFINITY};
    double W1[2] = {0.0, 0.0}, W0[2] = {0.0, 0.0}, C1[2] = {0.0, 0.0}, C0[2] = {0.0, 0.0};
    int32_t bi[2] = {-1, -1};
    for (int32_t j = 0; j < h; j++)
        for (int c = 0; c < 2; c++) {
            int32_t i = c * h + j;
            if (i >= n) break;
            const Agg *a = &N->agg[i];
            double p = acc[c] + a->minp;
            int lt = p < best[c];
            best[c] = lt ? p : best[c];
            bi[c] = lt ? i : bi[c];
            acc[c] += a->sum;
            W1[c] += a->w1; W0[c] += a->w0;
            if (!plain) { C1[c] += a->c1; C0[c] += a->c0; }
        }
    /* the second half's minimum wins only when strictly lower (ties: the lower key) */
    double p1 = acc[0] + best[1];
    int second = bi[1] >= 0 && (bi[0] < 0 || p1 < best[0]);
    g->minp = second ? p1 : best[0];
    g->argk = second ? N->agg[bi[1]].argk : (bi[0] >= 0 ? N->agg[bi[0]].argk : NAN);
    g->sum = acc[0] + acc[1];
    g->w1 = W1[0] + W1[1]; g->w0 = W0[0] + W0[1];
    if (plain) { g->c1 = g->w1; g->c0 = g->w0; } else { g->c1 = C1[0] + C1[1]; g->c0 = C0[0] + C0[1]; }
}

#define BIT(i) ((uint64_t)1 << (i))

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


static inline uint64_t bits_below(int32_t pos) { return pos >= 64 ? ~(uint64_t)0 : BIT(pos) - 1; }

/* Recompute the stale aggregates below node (recursion depth = the height, <= MAXH):
   only the children whose bit is set are visited. */
static void refresh(CTree *t, int32_t node, int level, Agg *out) {
    if (level == 0) {
        leaf_agg(t, &t->leaves[node], out);
        return;
    }
    Inner *N = &t->inners[node];
    uint64_t m = N->mask & bits_below(N->n);
    if (level == 1) {
        /* stale leaves: load the next ones while aggregating this one */
        uint64_t ahead = m;
        for (int k = 0; k < 2 && ahead; k++) {
            prefetch_leaf(t, N->child[__builtin_ctzll(ahead)]);
            ahead &= ahead - 1;
        }
        while (m) {
            int i = __builtin_ctzll(m);
            m &= m - 1;
            if (ahead) {
                prefetch_leaf(t, N->child[__builtin_ctzll(ahead)]);
                ahead &= ahead - 1;
            }
            leaf_agg(t, &t->leaves[N->child[i]], &N->agg[i]);
        }
    } else {
        while (m) {
            int i = __builtin_ctzll(m);
            m &= m - 1;
            refresh(t, N->child[i], level - 1, &N->agg[i]);
        }
    }
    N->mask = 0;
    inner_agg(N, out, t->plain);
}

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

/* The leaf at the end of the recorded path changed: recompute its aggregate now, while
   it is in cache, and mark only the inner nodes above it stale (its parent's entry is
   fresh). A later clean() then touches no leaf, which halves the memory traffic of a
   batch of scattered updates. */
static inline void settle_leaf(CTree *t, Leaf *L) {
    int l = t->height - 1;
    if (l >= 0) {
        Inner *P = &t->inners[t->pnode[l]];
        int32_t i = t->pidx[l];
        leaf_agg(t, L, &P->agg[i]);
        P->mask &= ~BIT(i);
    }
    mark_from(t, l - 1);
}

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
static int32_t descend(CTree *t, double key) {
    int32_t node = t->root;
    for (int l = 0; l < t->height; l++) {
        Inner *N = &t->inners[node];
        int32_t i = child_index(N, key);
        t->pnode[l] = node; t->pidx[l] = i;
        node = N->child[i];
    }
    return node;
}

/* A finger for sorted runs of keys: the last descent's path with the key range each
   node on it covers. The next key descends only from the deepest node whose range holds
   it (in a sorted batch, usually the same parent), until the tree's shape changes. */
typedef struct {
    int32_t node[MAXH], idx[MAXH];
    double lo[MAXH], hi[MAXH];
    unsigned long long gen;
    int valid;
} Finger;

static int32_t finger_descend(CTree *t, Finger *f, double key, int record) {
    int start = 0, resume = 0;
    int32_t node = t->root;
    double lo = -INFINITY, hi = INFINITY;
    if (f->valid && f->gen == t->sgen) {
        int l = t->height - 1;
        while (l >= 0 && !(key >= f->lo[l] && key < f->hi[l])) l--;
        if (l >= 0) {
            node = t->inners[f->node[l]].child[f->idx[l]];
            start = l + 1; lo = f->lo[l]; hi = f->hi[l];
        }
        /* the node at depth start is the one the finger took there: for a key at or right
           of the finger's child, scan its separators forward from that child */
        resume = start < t->height && key >= f->lo[start];
    }
    for (int l = start; l < t->height; l++) {
        const Inner *N = &t->inners[node];
        int32_t i;
        if (resume && l == start) {
            i = f->idx[l];
            while (i + 1 < N->n && N->sep[i + 1] <= key) i++;
        } else {
            i = child_index(N, key);
        }
        double clo = i ? N->sep[i] : lo, chi = i + 1 < N->n ? N->sep[i + 1] : hi;
        f->node[l] = node; f->idx[l] = i; f->lo[l] = clo; f->hi[l] = chi;
        lo = clo; hi = chi;
        node = N->child[i];
    }
    f->gen = t->sgen; f->valid = 1;
    if (record)
        for (int l = 0; l < t->height; l++) { t->pnode[l] = f->node[l]; t->pidx[l] = f->idx[l]; }
    return node;
}

/* ------------------------------------------------------------------ leaf slots */

static void leaf_lo_get(CTree *t, Leaf *L, int32_t i, double *l1, double *l0) {
    if (L->lo == NIL) { *l1 = 0.0; *l0 = 0.0; return; }
    *l1 = t->los[L->lo].w1[i]; *l0 = t->los[L->lo].w0[i];
}

/* needs a reserved lo block when the parts are non-zero and the leaf has none */
static void leaf_lo_set(CTree *t, Leaf *L, int32_t i, double l1, double l0) {
    if (L->lo == NIL) {
        if (l1 == 0.0 && l0 == 0.0) return;
        L->lo = new_lo(t);
    }
    t->los[L->lo].w1[i] = l1; t->los[L->lo].w0[i] = l0;
}

/* Open a gap at pos (n < LCAP). */
static void leaf_open(CTree *t, Leaf *L, int32_t pos) {
    int32_t k = L->n - pos;
    if (k > 0) {
        /* key and counts shifted in one loop (at most LCAP - 1 slots: three memmove calls
           cost more; measured, the selector step 5% faster) */
        for (int32_t j = L->n; j > pos; j--) {
            L->key[j] = L->key[j - 1]; L->c1[j] = L->c1[j - 1]; L->c0[j] = L->c0[j - 1];
        }
        if (!t->plain) {
            WeightBlock *W = &t->wts[L - t->leaves];
            memmove(&W->w1[pos + 1], &W->w1[pos], k * sizeof(double));
            memmove(&W->w0[pos + 1], &W->w0[pos], k * sizeof(double));
        }
        if (L->lo != NIL) {
            LoBlock *o = &t->los[L->lo];
            memmove(&o->w1[pos + 1], &o->w1[pos], k * sizeof(double));
            memmove(&o->w0[pos + 1], &o->w0[pos], k * sizeof(double));
        }
    }
    if (L->lo != NIL) { t->los[L->lo].w1[pos] = 0.0; t->los[L->lo].w0[pos] = 0.0; }
    L->n++;
}

static void leaf_close(CTree *t, Leaf *L, int32_t pos) {
    int32_t k = L->n - pos - 1;
    if (k > 0) {
        for (int32_t j = pos; j + 1 < L->n; j++) { /* (as in leaf_open) */
            L->key[j] = L->key[j + 1]; L->c1[j] = L->c1[j + 1]; L->c0[j] = L->c0[j + 1];
        }
        if (!t->plain) {
            WeightBlock *W = &t->wts[L - t->leaves];
            memmove(&W->w1[pos], &W->w1[pos + 1], k * sizeof(double));
            memmove(&W->w0[pos], &W->w0[pos + 1], k * sizeof(double));
        }
        if (L->lo != NIL) {
            LoBlock *o = &t->los[L->lo];
            memmove(&o->w1[pos], &o->w1[pos + 1], k * sizeof(double));
            memmove(&o->w0[pos], &o->w0[pos + 1], k * sizeof(double));
        }
    }
    L->n--;
}

/* Copy cnt slots src[s..] -> dst[d..] (dst has room; slots beyond are overwritten). */
static void leaf_copy(CTree *t, int32_t dst, int32_t d, int32_t src, int32_t s, int32_t cnt) {
    Leaf *D = &t->leaves[dst], *S = &t->leaves[src];
    memmove(&D->key[d], &S->key[s], cnt * sizeof(double));
    memmove(&D->c1[d], &S->c1[s], cnt * sizeof(uint32_t));
    memmove(&D->c0[d], &S->c0[s], cnt * sizeof(uint32_t));
    if (!t->plain) {
        memmove(&t->wts[dst].w1[d], &t->wts[src].w1[s], cnt * sizeof(double));
        memmove(&t->wts[dst].w0[d], &t->wts[src].w0[s], cnt * sizeof(double));
    }
    if (S->lo != NIL) {
        int any = 0;
        for (int32_t i = 0; i < cnt; i++) any |= t->los[S->lo].w1[s + i] != 0.0 || t->los[S->lo].w0[s + i] != 0.0;
        if (any && D->lo == NIL) { D->lo = new_lo(t); S = &t->leaves[src]; }
    }
    if (D->lo != NIL) {
        LoBlock *o = &t->los[D->lo];
        if (S->lo != NIL) {
            memmove(&o->w1[d], &t->los[S->lo].w1[s], cnt * sizeof(double));
            memmove(&o->w0[d], &t->los[S->lo].w0[s], cnt * sizeof(double));
        } else {
            memset(&o->w1[d], 0, cnt * sizeof(double));
            memset(&o->w0[d], 0, cnt * sizeof(double));
        }
    }
}

/* Shift slots of leaf i by delta (positive: right) starting at pos, keeping n. */
static void leaf_shift(CTree *t, int32_t i, int32_t from, int32_t to, int32_t cnt) {
    leaf_copy(t, i, to, i, from, cnt);
}

/* ------------------------------------------------------------------ inner entries */

static void inner_open(Inner *N, int32_t pos) {
    N->mask = (N->mask & bits_below(pos)) | ((N->mask & ~bits_below(pos)) << 1);
    int32_t k = N->n - pos;
    if (k > 0) {
        memmove(&N->sep[pos + 1], &N->sep[pos], k * sizeof(double));
        memmove(&N->child[pos + 1], &N->child[pos], k * sizeof(int32_t));
        memmove(&N->agg[pos + 1], &N->agg[pos], k * sizeof(Agg));
    }
    N->n++;
}

static void inner_close(Inner *N, int32_t pos) {
    N->mask = (N->mask & bits_below(pos)) | ((N->mask & ~bits_below(pos + 1)) >> 1);
    int32_t k = N->n - pos - 1;
    if (k > 0) {
        memmove(&N->sep[pos], &N->sep[pos + 1], k * sizeof(double));
        memmove(&N->child[pos], &N->child[pos + 1], k * sizeof(int32_t));
        memmove(&N->agg[pos], &N->agg[pos + 1], k * sizeof(Agg));
    }
    N->n--;
}

static void inner_copy(Inner *D, int32_t d, Inner *S, int32_t s, int32_t cnt) {
    uint64_t span = bits_below(cnt), moved = (S->mask >> s) & span;
    D->mask = (D->mask & ~(span << d)) | (moved << d);
    memmove(&D->sep[d], &S->sep[s], cnt * sizeof(double));
    memmove(&D->child[d], &S->child[s], cnt * sizeof(int32_t));
    memmove(&D->agg[d], &S->agg[s], cnt * sizeof(Agg));
}

/* ------------------------------------------------------------------ structure */

/* Insert child `c` with separator `sep` at position pos of the inner node at depth
   `l` of the recorded path; splits upward as needed. Space was reserved. */
static void inner_insert(CTree *t, int l, int32_t pos, double sep, int32_t c) {
    for (;;) {
        int32_t node = t->pnode[l];
        Inner *N = &t->inners[node];
        if (N->n < ICAP) {
            inner_open(N, pos);
            N->sep[pos] = sep; N->child[pos] = c;
            N->mask |= BIT(pos);
            return;
        }
        /* split: right half to a new node */
        int32_t r = new_inner(t);
        N = &t->inners[node];
        Inner *R = &t->inners[r];
        int32_t half = (ICAP + 1) / 2; /* after inserting there are ICAP + 1 entries */
        if (pos < half) {
            int32_t move = ICAP - (half - 1);
            inner_copy(R, 0, N, half - 1, move);
            R->n = move; N->n = half - 1;
            inner_open(N, pos);
            N->sep[pos] = sep; N->child[pos] = c;
            N->mask |= BIT(pos);
        } else {
            int32_t move = ICAP - half;
            inner_copy(R, 0, N, half, move);
            R->n = move; N->n = half;
            int32_t p = pos - half;
            inner_open(R, p);
            R->sep[p] = sep; R->child[p] = c;
            R->mask |= BIT(p);
        }
        N->mask &= bits_below(N->n);
        R->mask &= bits_below(R->n);
        double rsep = R->sep[0];
        if (l == 0) { /* new root */
            int32_t root = new_inner(t);
            Inner *T = &t->inners[root];
            T->n = 2;
            T->sep[0] = -INFINITY; T->child[0] = node;
            T->sep[1] = rsep; T->child[1] = r;
            T->mask = BIT(0) | BIT(1);
            t->root = root; t->height++;
            t->root_dirty = 1;
            return;
        }
        pos = t->pidx[l - 1] + 1; sep = rsep; c = r; l--;
    }
}

/* Split the full leaf on the recorded path while inserting key at pos: the new key gets
   an empty slot (counts 0) in one of the two halves. Appending at the right edge keeps the
   old leaf full (the new key starts the new one), prepending at the left edge likewise, so
   sorted input packs leaves fully; otherwise the halves are equal. Space was reserved. */
static void leaf_split_insert(CTree *t, int32_t leaf, int32_t pos, double key) {
    int rightmost = 1, leftmost = 1;
    for (int l = 0; l < t->height; l++) {
        if (t->pidx[l] != t->inners[t->pnode[l]].n - 1) rightmost = 0;
        if (t->pidx[l] != 0) leftmost = 0;
    }
    int32_t keep = (rightmost && pos == LCAP) ? LCAP : (leftmost && pos == 0) ? 0 : LCAP / 2;
    int32_t r = new_leaf(t);
    leaf_copy(t, r, 0, leaf, keep, LCAP - keep);
    Leaf *L = &t->leaves[leaf], *R = &t->leaves[r];
    R->n = LCAP - keep; L->n = keep;
    int left = keep == 0 || (keep < LCAP && pos <= keep);
    Leaf *D = left ? L : R;
    int32_t p = left ? pos : pos - keep;
    leaf_open(t, D, p);
    D->key[p] = key;
    set_hi(t, D, p, 0.0, 0.0);
    set_counts(D, p, 0, 0);
    double rsep = R->key[0];
    if (t->height == 0) {
        int32_t root = new_inner(t);
        Inner *T = &t->inners[root];
        T->n = 2;
        T->sep[0] = -INFINITY; T->child[0] = leaf;
        T->sep[1] = rsep; T->child[1] = r;
        T->mask = BIT(0) | BIT(1);
        t->root = root; t->height = 1;
        t->root_dirty = 1;
        return;
    }
    mark_path(t);
    inner_insert(t, t->height - 1, t->pidx[t->height - 1] + 1, rsep, r);
}

/* A full leaf on the recorded path passes keys to a sibling (same parent) with room,
   instead of splitting: leaves stay fuller (less memory, fewer levels). Returns 1 when
   it did. Space was reserved. */
static int leaf_spill(CTree *t, int32_t leaf) {
    int l = t->height - 1;
    int32_t pn = t->pnode[l], i = t->pidx[l];
    Inner *P = &t->inners[pn];
    if (i > 0) {
        int32_t sb = P->child[i - 1];
        int32_t room = LCAP - t->leaves[sb].n;
        if (room >= 4) {
            int32_t k = room / 2;
            leaf_copy(t, sb, t->leaves[sb].n, leaf, 0, k);
            t->leaves[sb].n += k;
            leaf_shift(t, leaf, k, 0, LCAP - k);
            t->leaves[leaf].n = LCAP - k;
            P->sep[i] = t->leaves[leaf].key[0];
            mark_path(t); /* first: it stops at an entry already marked */
            P->mask |= BIT(i - 1) | BIT(i);
            return 1;
        }
    }
    if (i + 1 < P->n) {
        int32_t sb = P->child[i + 1];
        int32_t ns = t->leaves[sb].n, room = LCAP - ns;
        if (room >= 4) {
            int32_t k = room / 2;
            leaf_shift(t, sb, 0, k, ns);
            leaf_copy(t, sb, 0, leaf, LCAP - k, k);
            t->leaves[sb].n = ns + k;
            t->leaves[leaf].n = LCAP - k;
            P->sep[i + 1] = t->leaves[sb].key[0];
            mark_path(t);
            P->mask |= BIT(i) | BIT(i + 1);
            return 1;
        }
    }
    return 0;
}

/* Rebalance the underfull node at depth d+1 of the path (child pidx[d] of pnode[d]). */
static void rebalance(CTree *t, int d) {
    for (; d >= 0; d--) {
        int32_t pn = t->pnode[d], i = t->pidx[d];
        Inner *P = &t->inners[pn];
        int leafy = d == t->height - 1;
        int32_t c = P->child[i];
        int32_t n = leafy ? t->leaves[c].n : t->inners[c].n;
        int32_t mn = leafy ? LMIN : IMIN;
        if (n >= mn) return;
        if (P->n < 2) return; /* only the root can have a single child: handled by the caller */
        int32_t li = i > 0 ? i - 1 : i, ri = li + 1; /* the pair (li, ri) */
        int32_t lc = P->child[li], rc = P->child[ri];
        P->mask |= BIT(li) | BIT(ri);
        if (leafy) {
            Leaf *A = &t->leaves[lc], *B = &t->leaves[rc];
            int32_t na = A->n, nb = B->n, tot = na + nb;
            if (tot <= LCAP) { /* merge B into A */
                leaf_copy(t, lc, na, rc, 0, nb);
                t->leaves[lc].n = tot;
                free_leaf(t, rc);
                inner_close(&t->inners[pn], ri);
            } else {
                int32_t want = tot / 2;
                if (na < want) { /* move B's first (want - na) to A's end */
                    int32_t k = want - na;
                    leaf_copy(t, lc, na, rc, 0, k);
                    t->leaves[lc].n = want;
                    leaf_shift(t, rc, k, 0, nb - k);
                    t->leaves[rc].n = nb - k;
                } else { /* move A's last (na - want) to B's front */
                    int32_t k = na - want;
                    leaf_shift(t, rc, 0, k, nb);
                    leaf_copy(t, rc, 0, lc, want, k);
                    t->leaves[rc].n = nb + k;
                    t->leaves[lc].n = want;
                }
                t->inners[pn].sep[ri] = t->leaves[rc].key[0];
            }
        } else {
            Inner *A = &t->inners[lc], *B = &t->inners[rc];
            int32_t na = A->n, nb = B->n, tot = na + nb;
            if (tot <= ICAP) {
                inner_copy(A, na, B, 0, nb);
                A->n = tot;
                free_inner(t, rc);
                inner_close(&t->inners[pn], ri);
            } else {
                int32_t want = tot / 2;
                if (na < want) {
                    int32_t k = want - na;
                    inner_copy(A, na, B, 0, k);
                    A->n = want;
                    inner_copy(B, 0, B, k, nb - k);
                    B->n = nb - k;
                } else {
                    int32_t k = na - want;
                    inner_copy(B, k, B, 0, nb);
                    inner_copy(B, 0, A, want, k);
                    B->n = nb + k;
                    A->n = want;
                }
                t->inners[pn].sep[ri] = B->sep[0];
                B->mask &= bits_below(B->n);
            }
            A->mask &= bits_below(A->n);
        }
    }
}

static void collapse_root(CTree *t) {
    while (t->height > 0 && t->inners[t->root].n == 1) {
        int32_t old = t->root;
        t->root = t->inners[old].child[0];
        free_inner(t, old);
        t->height--;
        t->root_dirty = 1;
    }
    if (t->height > 0) t->inners[t->root].sep[0] = -INFINITY;
}

/* The leaf at the end of the recorded path lost or changed keys: merge or rebalance it
   with a sibling when it fell below LMIN (the tree's shape changes), else settle its
   aggregate while it is in cache. */
static void leaf_changed(CTree *t, Leaf *L) {
    if (t->height > 0 && L->n < LMIN) {
        t->sgen++;
        mark_path(t);
        rebalance(t, t->height - 1);
        collapse_root(t);
    } else {
        settle_leaf(t, L);
    }
}

/* Add (dw1, dw0) weight and (dc1, dc0) events at key. dc are small integers (>= -2**32).
   Returns 0, or -1 with KeyError/ValueError/MemoryError set and the tree unchanged. */
static int upsert_leaf(CTree *t, int32_t leaf, double key, double dw1, double dw0, int64_t dc1, int64_t dc0);

static int upsert(CTree *t, double key, double dw1, double dw0, int64_t dc1, int64_t dc0) {
    int32_t leaf = descend(t, key);
    /* a large tree: ask for all of the leaf at once: its count (at the end), the keys the
       search reads and the slots the update writes then miss together rather than one
       after another (a small tree is in cache: the prefetches would only cost) */
    if (t->n_keys > PREFETCH_KEYS) prefetch_leaf(t, leaf);
    return upsert_leaf(t, leaf, key, dw1, dw0, dc1, dc0);
}

/* upsert with the descent to key's leaf already done (the path recorded). */
static int upsert_leaf(CTree *t, int32_t leaf, double key, double dw1, double dw0, int64_t dc1, int64_t dc0) {
    Leaf *L = &t->leaves[leaf];
    /* a small tree's leaf is in cache: count without branches (a binary search's branches
       mispredict about half the time on random keys) */
    int32_t pos = t->n_keys > PREFETCH_KEYS ? leaf_pos(L, key) : count_below(L, 0, key);
    int exists = pos < L->n && L->key[pos] == key;
    uint32_t o1 = 0, o0 = 0;
    if (exists) get_counts(L, pos, &o1, &o0);
    int64_t n1 = (int64_t)o1 + dc1, n0 = (int64_t)o0 + dc0;
    if (n1 < 0 || n0 < 0) {
        key_error(key);
        return -1;
    }
    if (n1 > UINT32_MAX || n0 > UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "more than 2**32 - 1 events of one class at one score");
        return -1;
    }
    if (!exists && n1 + n0 == 0) return 0;
    if (t->plain && (dw1 != (double)dc1 || dw0 != (double)dc0) && leave_plain(t) < 0) return -1;
    if (reserve(t, t->height + 3) < 0) return -1;
    t->version++;
    L = &t->leaves[leaf];
    if (!exists) {
        if (L->n == LCAP) t->sgen++;
        if (L->n == LCAP && t->height > 0 && leaf_spill(t, leaf)) {
            leaf = descend(t, key);
            L = &t->leaves[leaf];
            pos = leaf_pos(L, key);
        }
        if (L->n == LCAP) {
            leaf_split_insert(t, leaf, pos, key);
            leaf = descend(t, key); /* the key has its (empty) slot now */
            L = &t->leaves[leaf];
            pos = leaf_pos(L, key);
        } else {
            leaf_open(t, L, pos);
            L->key[pos] = key;
            set_hi(t, L, pos, 0.0, 0.0);
            set_counts(L, pos, 0, 0);
        }
        t->n_keys++;
    }
    if (n1 + n0 == 0) {
        leaf_close(t, L, pos);
        t->n_keys--;
        leaf_changed(t, L);
        return 0;
    }
    if (t->plain) { /* the weights are the counts (no lo parts): nothing else to add */
        set_counts(L, pos, (uint32_t)n1, (uint32_t)n0);
        settle_leaf(t, L);
        return 0;
    }
    double h1, h0, l1, l0;
    get_hi(t, L, pos, &h1, &h0);
    leaf_lo_get(t, L, pos, &l1, &l0);
    if (n1 == 0) { h1 = 0.0; l1 = 0.0; } else if (dw1 != 0.0) dd_add(&h1, &l1, dw1);
    if (n0 == 0) { h0 = 0.0; l0 = 0.0; } else if (dw0 != 0.0) dd_add(&h0, &l0, dw0);
    set_hi(t, L, pos, h1, h0);
    set_counts(L, pos, (uint32_t)n1, (uint32_t)n0);
    leaf_lo_set(t, L, pos, l1, l0);
    settle_leaf(t, L);
    return 0;
}

/* ------------------------------------------------------------------ sorted batches */

/* The events u of one key's run, applied to that key's state (hi/lo weights, counts) as
   upsert_leaf would apply them one by one: additions first, then removals (so counts
   never dip below zero), each weight added exactly, a class whose count reaches zero
   weighing exactly zero. Returns 0, or -1 with KeyError/ValueError set (nothing changed). */
typedef struct {
    double h1, l1, h0, l0;
    int64_t c1, c0;
} KeyState;

/* Event u removes (its counts are negative): a key's removals come after its additions. */
static inline int is_removal(const double *d1, const double *d0, Py_ssize_t u) { return d1[u] < 0 || d0[u] < 0; }

/* run_state without raising (callable without the GIL): -1 a removal of what is not
   held, -2 a count beyond 2**32 - 1. */
static int run_state_code(KeyState *s, const double *a1, const double *a0, const double *d1, const double *d0,
                          Py_ssize_t q, Py_ssize_t r) {
    for (int pass = 0; pass < 2; pass++)
        for (Py_ssize_t u = q; u < r; u++) {
            if (is_removal(d1, d0, u) != pass) continue;
            int64_t n1 = s->c1 + (int64_t)d1[u], n0 = s->c0 + (int64_t)d0[u];
            if (n1 < 0 || n0 < 0) return -1;
            if (n1 > UINT32_MAX || n0 > UINT32_MAX) return -2;
            if (s->c1 + s->c0 == 0 && n1 + n0 == 0) continue; /* nothing held, nothing added */
            if (n1 == 0) { s->h1 = 0.0; s->l1 = 0.0; } else if (a1[u] != 0.0) dd_add(&s->h1, &s->l1, a1[u]);
            if (n0 == 0) { s->h0 = 0.0; s->l0 = 0.0; } else if (a0[u] != 0.0) dd_add(&s->h0, &s->l0, a0[u]);
            s->c1 = n1; s->c0 = n0;
        }
    return 0;
}

/* Raise the error of run_state_code's code rc (< 0) for key. */
static void state_error(int rc, double key) {
    if (rc == -1) key_error(key);
    else PyErr_SetString(PyExc_ValueError, "more than 2**32 - 1 events of one class at one score");
}

/* The state of the key k[u] (its events u..v-1) in leaf L after those events: the key's
   slot is counted from *pos on (keys come sorted) and left in *pos, *exists says whether
   the key is in the leaf now. Returns run_state_code's code (no exception set). */
static inline int key_state(CTree *t, Leaf *L, const double *k, const double *a1, const double *a0,
                            const double *d1, const double *d0, Py_ssize_t u, Py_ssize_t v, int32_t *pos,
                            KeyState *s, int *exists) {
    double key = k[u];
    *pos = count_below(L, *pos, key);
    *exists = *pos < L->n && L->key[*pos] == key;
    *s = (KeyState){0.0, 0.0, 0.0, 0.0, 0, 0};
    if (*exists) {
        uint32_t o1, o0;
        get_counts(L, *pos, &o1, &o0);
        get_hi(t, L, *pos, &s->h1, &s->h0);
        s->c1 = o1; s->c0 = o0;
        leaf_lo_get(t, L, *pos, &s->l1, &s->l0);
    }
    return run_state_code(s, a1, a0, d1, d0, u, v);
}

/* Store state s in the (existing) slot pos of L; a new lo block needs reserved space. */
static inline void slot_write(CTree *t, Leaf *L, int32_t pos, const KeyState *s) {
    set_hi(t, L, pos, s->h1, s->h0);
    set_counts(L, pos, (uint32_t)s->c1, (uint32_t)s->c0);
    leaf_lo_set(t, L, pos, s->l1, s->l0);
}

/* The events of one key, one upsert each, in run_state's order (the structural path). */
static int run_upserts(CTree *t, const double *k, const double *a1, const double *a0, const double *d1,
                       const double *d0, Py_ssize_t q, Py_ssize_t r) {
    for (int pass = 0; pass < 2; pass++)
        for (Py_ssize_t u = q; u < r; u++) {
            if (is_removal(d1, d0, u) != pass) continue;
            if (upsert(t, k[u], a1[u], a0[u], (int64_t)d1[u], (int64_t)d0[u]) < 0) return -1;
        }
    return 0;
}

/* Apply per-event changes sorted by key (keys may repeat): the same end state as one
   upsert per event in this order, additions before removals at each key.

   The keys that fall in one leaf are applied to it in place, one pass over the leaf, and
   its aggregate is recomputed once while it is in cache; only a change of the tree's shape
   (a full leaf that must take a new key) goes through the one-event path. A second finger
   runs AHEAD events in front and prefetches their leaves, so the cache misses of scattered
   leaves overlap. O(m log_B n) worst case, O(m + touched leaves * B) when the keys are
   dense. Returns 0, or -1 with an exception set (removals must be of held events: a
   violation raises KeyError part way, after the keys before it were applied). */
static int apply_runs(CTree *t, const double *k, const double *a1, const double *a0, const double *d1,
                      const double *d0, Py_ssize_t m) {
    enum { AHEAD = 8 };
    Finger ahead = {0}, at = {0};
    Py_ssize_t qa = 0; /* next event whose leaf the prefetching finger loads */
    for (; qa < m && qa < AHEAD; qa++) prefetch_leaf_l2(t, finger_descend(t, &ahead, k[qa], 0));
    Py_ssize_t q = 0;
    int applied = 0; /* some change made: a failure from here on leaves the batch half done */
    while (q < m) {
        if (reserve(t, t->height + 3) < 0) goto fail;
        int32_t leaf = finger_descend(t, &at, k[q], 1);
        double hi = t->height ? at.hi[t->height - 1] : INFINITY;
        int last = hi == INFINITY; /* the rightmost leaf also takes a key of +inf */
        Leaf *L = &t->leaves[leaf];
        int32_t pos = 0;
        int changed = 0, structural = 0, failed = 0;
        while (q < m && (k[q] < hi || last)) {
            for (; qa < m && qa < q + AHEAD; qa++) prefetch_leaf_l2(t, finger_descend(t, &ahead, k[qa], 0));
            double key = k[q];
            Py_ssize_t r = q + 1;
            while (r < m && k[r] == key) r++;
            KeyState s;
            int exists, rc = key_state(t, L, k, a1, a0, d1, d0, q, r, &pos, &s, &exists);
            if (rc < 0) { state_error(rc, key); failed = 1; break; }
            int keep = s.c1 + s.c0 > 0;
            if (keep && !exists && L->n == LCAP) { structural = 1; break; } /* the one-event path */
            if (keep) {
                if (!exists) { leaf_open(t, L, pos); L->key[pos] = key; t->n_keys++; }
                slot_write(t, L, pos, &s);
                pos++;
                changed = 1;
            } else if (exists) {
                leaf_close(t, L, pos);
                t->n_keys--;
                changed = 1;
            }
            q = r;
        }
        if (changed) {
            t->version++;
            leaf_changed(t, L);
            applied = 1;
        }
        if (failed) goto fail;
        if (structural) {
            Py_ssize_t r = q + 1;
            while (r < m && k[r] == k[q]) r++;
            int rc = run_upserts(t, k, a1, a0, d1, d0, q, r);
            applied = 1; /* its first events may have gone in before a failure */
            if (rc < 0) goto fail;
            q = r;
        }
    }
    return 0;
fail:
    if (applied) t->broken = 1;
    return -1;
}

/* ------------------------------------------------------------------ two-thread batches */

/* A large sorted batch is applied by two threads: each takes the events of its own inner
   nodes of level 1 (the split falls between two of them), so the two never write the
   same leaf, the same count or lo block, or the same parent entry. Each leaf whose change
   leaves its shape alone (its key count stays within [LMIN, LCAP] and no lo block is
   needed) is changed in place and its aggregate settled in its parent, as apply_runs
   does; any other leaf's events are left to a serial apply_runs afterwards, as are the
   stale marks above level 1. Nothing here allocates, raises or touches a Python object:
   the second thread runs without the GIL, while the calling thread keeps it (so no other
   Python thread can reach this tree meanwhile). The end state holds the same keys, weights
   and counts as apply_runs would give (the per-key results do not depend on the order in
   which keys are applied); only where leaves split may differ. */

#define PAR_MIN 4096 /* below this many changes one thread does it all (a thread start costs ~50 us) */
#define SPIN_MAX 40000
static int batch_threads = 2; /* tests: 1 = always serial */
static long long two_thread_batches, deferred_runs, multi_key_leaves; /* tests: what the two-thread path did */

typedef struct {
    CTree *t;
    const double *k, *a1, *a0, *d1, *d0;
    Py_ssize_t q0, q1;   /* this half's events */
    Py_ssize_t *defer;   /* [q, r) pairs of events left to the serial pass */
    Py_ssize_t ndefer;
    int32_t *paths;      /* per level-1 node touched: the path above it (node, idx per depth) */
    Py_ssize_t npaths;
    Py_ssize_t dkeys;    /* change in the number of keys */
    Py_ssize_t multi;    /* leaves changed in place at two keys or more (tests) */
    PyThread_type_lock done;
    int finished;        /* set by the second thread as it ends (the first spins on it a while) */
} Half;

/* The events [q, r) all fall in leaf L: apply them in place if that keeps the leaf's
   shape (returns 1), else change nothing (returns 0). One pass plans each key's change (its
   slot, whether it is held now and after, its new state: key_state), then the plan is
   carried out: first the keys that leave, right to left (the slots planned for the keys on
   their left stay right), then the others left to right, each slot moved by the keys that
   left or came in on its left. The count never exceeds its final value, and the end state
   is the one apply_runs gives (a key's result does not depend on the order in which keys
   are applied). A leaf with more than PLAN_MAX keys changed is left to the serial pass. */
#define PLAN_MAX 40
typedef struct {
    KeyState s;
    Py_ssize_t u;   /* the key's first event */
    int32_t pos;    /* its slot in the leaf as it was: the number of keys below it */
    int8_t exists, keep;
} KeyPlan;

static int leaf_in_place(CTree *t, Leaf *L, Half *h, Py_ssize_t q, Py_ssize_t r) {
    const double *k = h->k;
    KeyPlan plan[PLAN_MAX];
    int np = 0;
    int32_t n = L->n, pos = 0;
    for (Py_ssize_t u = q, v; u < r; u = v) {
        for (v = u + 1; v < r && k[v] == k[u]; v++) {}
        if (np == PLAN_MAX) return 0;
        KeyPlan *p = &plan[np++];
        int exists;
        if (key_state(t, L, k, h->a1, h->a0, h->d1, h->d0, u, v, &pos, &p->s, &exists) < 0)
            return 0; /* the serial pass raises */
        int keep = p->s.c1 + p->s.c0 > 0;
        if (keep && L->lo == NIL && (p->s.l1 != 0.0 || p->s.l0 != 0.0)) return 0; /* would allocate */
        n += (keep && !exists) - (!keep && exists);
        p->u = u; p->pos = pos; p->exists = (int8_t)exists; p->keep = (int8_t)keep;
    }
    if (n < LMIN || n > LCAP) return 0;
    for (int j = np - 1; j >= 0; j--)
        if (plan[j].exists && !plan[j].keep) { leaf_close(t, L, plan[j].pos); h->dkeys--; }
    int32_t shift = 0;
    for (int j = 0; j < np; j++) {
        const KeyPlan *p = &plan[j];
        if (!p->keep) { shift -= p->exists; continue; }
        int32_t at = p->pos + shift;
        if (!p->exists) { leaf_open(t, L, at); L->key[at] = k[p->u]; h->dkeys++; shift++; }
        slot_write(t, L, at, &p->s); /* no lo block to allocate: checked above */
    }
    h->multi += np > 1;
    return 1;
}

/* One leaf's events, found by the finger that runs ahead: the leaf, its parent (the level-1
   node) and its slot there, the path above that node, and the leaf's first event. */
typedef struct {
    int32_t leaf, node1, idx1;
    Py_ssize_t q0;
    int32_t path[2 * (MAXH - 1)];
} LeafAhead;

static void half_run(void *arg) {
    enum { AHEAD = 6, RING = 16 }; /* AHEAD leaves (paired A/Bs at 1e6: 6 a little faster than 8 or 12) */
    _Static_assert(AHEAD < RING, "the ring holds the leaf at hand and AHEAD more");
    Half *h = arg;
    CTree *t = h->t;
    const double *k = h->k;
    int H = t->height; /* >= 2 */
    Finger ahead = {0};
    LeafAhead ring[RING];
    Py_ssize_t qa = h->q0;
    long head = 0, tail = 0;
    int32_t last = NIL, parent = NIL;
    for (;;) {
        /* the finger runs over the events until it knows AHEAD leaves past the one at hand,
           prefetching each leaf as it meets it */
        while (qa < h->q1 && head - tail <= AHEAD) {
            int32_t leaf = finger_descend(t, &ahead, k[qa], 0);
            if (leaf != last) {
                last = leaf;
                LeafAhead *e = &ring[head++ % RING];
                e->leaf = leaf; e->q0 = qa; e->node1 = ahead.node[H - 1]; e->idx1 = ahead.idx[H - 1];
                for (int l = 0; l < H - 1; l++) { e->path[2 * l] = ahead.node[l]; e->path[2 * l + 1] = ahead.idx[l]; }
                prefetch_leaf_l2(t, leaf);
            }
            qa++;
        }
        if (tail == head) break;
        const LeafAhead *e = &ring[tail % RING];
        Py_ssize_t q = e->q0, r = tail + 1 < head ? ring[(tail + 1) % RING].q0 : qa;
        Leaf *L = &t->leaves[e->leaf];
        if (leaf_in_place(t, L, h, q, r)) {
            Inner *P = &t->inners[e->node1];
            leaf_agg(t, L, &P->agg[e->idx1]);
            P->mask &= ~BIT(e->idx1);
            if (e->node1 != parent) { /* the path above this level-1 node, marked later */
                parent = e->node1;
                memcpy(h->paths + h->npaths * 2 * (H - 1), e->path, (size_t)(2 * (H - 1)) * sizeof(int32_t));
                h->npaths++;
            }
        } else {
            h->defer[2 * h->ndefer] = q; h->defer[2 * h->ndefer + 1] = r;
            h->ndefer++;
        }
        tail++;
    }
    __atomic_store_n(&h->finished, 1, __ATOMIC_RELEASE);
    if (h->done) PyThread_release_lock(h->done);
}

/* apply_runs with two threads (see above); falls back to apply_runs when the batch is
   small, the tree is shallow, or a thread or scratch memory is not to be had. */
static int apply_runs_two(CTree *t, const double *k, const double *a1, const double *a0, const double *d1,
                          const double *d0, Py_ssize_t m) {
    int H = t->height;
    if (batch_threads < 2 || m < PAR_MIN || H < 2) return apply_runs(t, k, a1, a0, d1, d0, m);
    /* split between two level-1 nodes, near the middle */
    Finger f = {0};
    finger_descend(t, &f, k[m / 2], 0);
    double bound = f.hi[H - 2] < INFINITY ? f.hi[H - 2] : f.lo[H - 2];
    Py_ssize_t lo = 0, hi = m; /* first event with key >= bound */
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (k[mid] < bound) lo = mid + 1; else hi = mid;
    }
    Py_ssize_t split = lo;
    if (split < PAR_MIN / 4 || m - split < PAR_MIN / 4) return apply_runs(t, k, a1, a0, d1, d0, m);
    /* everything the serial pass's first change needs is had before any change: a
       MemoryError then leaves the tree as it was, as with one thread */
    if (reserve(t, t->height + 3) < 0) return -1;
    Half half[2];
    Py_ssize_t npath = (Py_ssize_t)t->ninners + 1;
    Py_ssize_t *defer = PyMem_Malloc((size_t)m * 2 * sizeof(Py_ssize_t));
    int32_t *paths = PyMem_Malloc((size_t)npath * 2 * 2 * (H - 1) * sizeof(int32_t));
    double *buf = PyMem_Malloc((size_t)m * 5 * sizeof(double)); /* the leftover events, gathered */
    PyThread_type_lock done = PyThread_allocate_lock();
    if (!defer || !paths || !buf || !done) {
        PyMem_Free(defer); PyMem_Free(paths); PyMem_Free(buf);
        if (done) PyThread_free_lock(done);
        return apply_runs(t, k, a1, a0, d1, d0, m);
    }
    for (int j = 0; j < 2; j++) {
        Half *h = &half[j];
        h->t = t; h->k = k; h->a1 = a1; h->a0 = a0; h->d1 = d1; h->d0 = d0;
        h->q0 = j ? split : 0; h->q1 = j ? m : split;
        h->defer = defer + 2 * h->q0; h->ndefer = 0;
        h->paths = paths + (Py_ssize_t)j * npath * 2 * (H - 1); h->npaths = 0;
        h->dkeys = 0; h->multi = 0; h->done = NULL; h->finished = 0;
    }
    /* the lock is held until the second thread releases it at its end */
    half[1].done = done;
    PyThread_acquire_lock(done, WAIT_LOCK);
    if (PyThread_start_new_thread(half_run, &half[1]) == PYTHREAD_INVALID_THREAD_ID) {
        half[1].done = NULL; /* no thread: this one does both halves */
        PyThread_release_lock(done);
        half_run(&half[1]);
        half_run(&half[0]);
    } else {
        half_run(&half[0]);
        /* wait for the second half spinning, up to ~1 ms (a pause is ~25 ns here), before
           sleeping on the lock: a sleeping thread's wake-up cost about 7% of a batch at 10**6
           (paired A/Bs: 0.90-0.96 of the time with the spin) */
        for (int spin = 0; spin < SPIN_MAX && !__atomic_load_n(&half[1].finished, __ATOMIC_ACQUIRE); spin++) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        PyThread_acquire_lock(done, WAIT_LOCK); /* the second half is done */
        PyThread_release_lock(done);
    }
    PyThread_free_lock(done);
    two_thread_batches++;
    deferred_runs += half[0].ndefer + half[1].ndefer;
    multi_key_leaves += half[0].multi + half[1].multi;
    /* serial: the key count, the stale marks above level 1, then the leaves left over */
    /* a leaf changed in place records its level-1 node's path */
    int changed = half[0].npaths + half[1].npaths > 0, rc = 0;
    t->n_keys += half[0].dkeys + half[1].dkeys;
    if (changed) t->version++;
    for (int j = 0; j < 2; j++)
        for (Py_ssize_t g = 0; g < half[j].npaths; g++) {
            const int32_t *p = half[j].paths + g * 2 * (H - 1);
            for (int l = 0; l < H - 1; l++) { t->pnode[l] = p[2 * l]; t->pidx[l] = p[2 * l + 1]; }
            mark_from(t, H - 2);
        }
    /* the leaves left over: their events gathered (still sorted) into one apply_runs, whose
       finger and prefetching then run over all of them */
    Py_ssize_t left = 0;
    for (int j = 0; j < 2; j++)
        for (Py_ssize_t g = 0; g < half[j].ndefer; g++) left += half[j].defer[2 * g + 1] - half[j].defer[2 * g];
    if (left) {
        double *cols[5] = {buf, buf + left, buf + 2 * left, buf + 3 * left, buf + 4 * left};
        const double *from[5] = {k, a1, a0, d1, d0};
        Py_ssize_t o = 0;
        for (int j = 0; j < 2; j++)
            for (Py_ssize_t g = 0; g < half[j].ndefer; g++) {
                Py_ssize_t q = half[j].defer[2 * g], r = half[j].defer[2 * g + 1];
                for (int c = 0; c < 5; c++) memcpy(cols[c] + o, from[c] + q, (size_t)(r - q) * sizeof(double));
                o += r - q;
            }
        rc = apply_runs(t, cols[0], cols[1], cols[2], cols[3], cols[4], left);
    }
    /* a failure here (a MemoryError of a later split, or more than 2**32 - 1 events at one
       score) comes after the threads' changes: the batch is half applied */
    if (rc < 0 && changed) t->broken = 1; /* (apply_runs marks its own partial failures) */
    PyMem_Free(defer); PyMem_Free(paths); PyMem_Free(buf);
    return rc;
}

/* ------------------------------------------------------------------ revert predictor */

/* river.utils.Rolling, and callers like it, revert events in the order they added them, W
   events later. An unwindowed tree keeps the keys of its held events in that order (8 bytes
   an event), so when a revert removes the oldest one it knows the next revert's key and
   prefetches the leaf holding it: that leaf's cache misses then overlap the interpreter's
   work until the next revert arrives (measured, paired A/Bs at 10**6 distinct scores: the
   update + revert + get loop took 0.85-0.92 of the time, in either call order). A hint only: it
   never changes an answer. It prefetches only in a tree of more than PR_PREFETCH_KEYS keys:
   at 10**5 the descent it costs outweighed the misses it saved (1.03-1.07 of the time
   with it, 1.00-1.01 without). It stops for good (and frees its queue) when a revert is not of
   the oldest recorded key, when a change does not come in arrival order (apply_sorted:
   merges, checkpoints), or when it would hold more than 2 * n_keys + 65536 keys (many
   events on few scores: such a tree is in cache, and a prefetch would not help). Until
   2026-11-25 it began recording at the first revert, when the events already held were
   missing from it, and so never predicted one. */
#define PR_SLACK 65536
#define PR_PREFETCH_KEYS (1 << 18)

static void pr_stop(CTree *t) {
    PyMem_Free(t->pr_key);
    t->pr_key = NULL;
    t->pr_head = t->pr_size = t->pr_cap = 0;
    t->pr_state = 0;
}

/* An event with this key was added (after the tree took it). */
static void pr_push(CTree *t, double key) {
    if (!t->pr_state) return;
    if (t->pr_size >= 2 * t->n_keys + PR_SLACK) { pr_stop(t); return; }
    if (t->pr_size == t->pr_cap) {
        Py_ssize_t cap = t->pr_cap ? 2 * t->pr_cap : 1024;
        double *kk = PyMem_Malloc(cap * sizeof(double));
        if (!kk) { pr_stop(t); return; } /* a hint: no MemoryError for it */
        for (Py_ssize_t k = 0; k < t->pr_size; k++) kk[k] = t->pr_key[(t->pr_head + k) % t->pr_cap];
        PyMem_Free(t->pr_key);
        t->pr_key = kk; t->pr_cap = cap; t->pr_head = 0;
    }
    Py_ssize_t j = t->pr_head + t->pr_size;
    if (j >= t->pr_cap) j -= t->pr_cap;
    t->pr_key[j] = key;
    t->pr_size++;
}

/* An event with this key was removed (after the tree let it go): when it is the oldest
   recorded one, drop it and prefetch the leaf of the next one (a large tree only); else
   stop. */
static void pr_revert(CTree *t, double key) {
    if (!t->pr_state) return;
    if (t->pr_size == 0 || t->pr_key[t->pr_head] != key) { pr_stop(t); return; }
    t->pr_hits++;
    t->pr_head = t->pr_head + 1 == t->pr_cap ? 0 : t->pr_head + 1;
    t->pr_size--;
    if (t->pr_size == 0 || t->height == 0 || t->n_keys <= PR_PREFETCH_KEYS) return;
    int32_t leaf = descend(t, t->pr_key[t->pr_head]); /* (the recorded path is free: the revert is done) */
    int l = t->height - 1;
    __builtin_prefetch(&t->inners[t->pnode[l]].agg[t->pidx[l]], 1); /* the leaf's entry in its parent */
    prefetch_leaf(t, leaf);
}

/* ------------------------------------------------------------------ ring */

/* Grow the ring to hold need records: doubling, but not past hint (a count window's
   size + 1) unless need is larger. */
static int ring_grow(CTree *t, Py_ssize_t need, Py_ssize_t hint) {
    if (need <= t->qcap) return 0;
    Py_ssize_t cap = t->qcap ? t->qcap : 64;
    while (cap < need) cap *= 2;
    if (hint >= need && cap > hint) cap = hint;
    double *s = PyMem_Malloc(cap * sizeof(double)), *w = PyMem_Malloc(cap * sizeof(double));
    double *tt = t->ring == 2 ? PyMem_Malloc(cap * sizeof(double)) : NULL;
    uint8_t *y = PyMem_Malloc(cap);
    if (!s || !w || !y || (t->ring == 2 && !tt)) {
        PyMem_Free(s); PyMem_Free(w); PyMem_Free(tt); PyMem_Free(y);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < t->qsize; k++) {
        Py_ssize_t j = (t->qhead + k) % t->qcap;
        s[k] = t->qs[j]; w[k] = t->qw[j]; y[k] = t->qy[j];
        if (tt) tt[k] = t->qt[j];
    }
    PyMem_Free(t->qs); PyMem_Free(t->qw); PyMem_Free(t->qt); PyMem_Free(t->qy);
    t->qs = s; t->qw = w; t->qt = tt; t->qy = y; t->qcap = cap; t->qhead = 0;
    return 0;
}

static inline void ring_put(CTree *t, double s, int y, double w, double tm) {
    Py_ssize_t j = t->qhead + t->qsize;
    if (j >= t->qcap) j -= t->qcap;
    t->qs[j] = s; t->qy[j] = (uint8_t)y; t->qw[j] = w;
    if (t->qt) t->qt[j] = tm;
    t->qsize++;
}

/* ring_put of n events at once (the room made by the caller); w NULL: every weight 1. */
static void ring_put_many(CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t n) {
    Py_ssize_t j = t->qhead + t->qsize;
    if (j >= t->qcap) j -= t->qcap;
    for (Py_ssize_t done = 0; done < n;) {
        Py_ssize_t run = t->qcap - j < n - done ? t->qcap - j : n - done;
        memcpy(t->qs + j, s + done, (size_t)run * sizeof(double));
        memcpy(t->qy + j, y + done, (size_t)run);
        if (w) memcpy(t->qw + j, w + done, (size_t)run * sizeof(double));
        else for (Py_ssize_t u = 0; u < run; u++) t->qw[j + u] = 1.0;
        if (t->qt) for (Py_ssize_t u = 0; u < run; u++) t->qt[j + u] = 0.0;
        done += run;
        j = 0;
    }
    t->qsize += n;
}

/* Pop the oldest record and remove it from the tree (unless cancelled). */
static int ring_expire_one(CTree *t) {
    Py_ssize_t j = t->qhead;
    double s = t->qs[j], w = t->qw[j];
    int y = t->qy[j];
    if (y != CANCELLED) {
        if (upsert(t, s, y ? -w : 0.0, y ? 0.0 : -w, y ? -1 : 0, y ? 0 : -1) < 0) return -1;
    }
    t->qhead = j + 1 == t->qcap ? 0 : j + 1;
    t->qsize--;
    return 0;
}

/* ------------------------------------------------------------------ Python type */

static void reset(CTree *t) {
    PyMem_Free(t->leaves); PyMem_Free(t->inners); PyMem_Free(t->los); PyMem_Free(t->wts);
    t->leaves = NULL; t->inners = NULL; t->los = NULL; t->wts = NULL;
    t->wcap = 0; t->plain = 1;
    t->lcap = t->lused = t->nleaves = 0; t->lfree = NIL;
    t->icap = t->iused = t->ninners = 0; t->ifree = NIL;
    t->ocap = t->oused = t->nlos = 0; t->ofree = NIL;
    t->n_keys = 0; t->height = 0; t->root = NIL;
}

static int init_root(CTree *t) {
    if (reserve(t, 1) < 0) return -1;
    t->root = new_leaf(t);
    t->height = 0;
    return 0;
}

static int CTree_init(CTree *self, PyObject *args, PyObject *kwds) {
    double a, b;
    Py_ssize_t load = 0; /* accepted for signature compatibility, unused */
    int ring = 0;
    static char *kwlist[] = {"pos_coef", "neg_coef", "load", "ring", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "dd|ni", kwlist, &a, &b, &load, &ring)) return -1;
    if (ring < 0 || ring > 2) { PyErr_SetString(PyExc_ValueError, "ring must be 0, 1 or 2"); return -1; }
    reset(self);
    pr_stop(self);
    self->pr_state = ring == 0;
    PyMem_Free(self->qs); PyMem_Free(self->qw); PyMem_Free(self->qt); PyMem_Free(self->qy);
    self->qs = self->qw = self->qt = NULL; self->qy = NULL;
    self->qhead = self->qsize = self->qcap = 0;
    self->a = a; self->b = b; self->ring = ring;
    if (ring && ring_grow(self, 64, 0) < 0) return -1;
    return init_root(self);
}

static int CTree_traverse(CTree *self, visitproc visit, void *arg) {
    Py_VISIT(self->slow_update);
    Py_VISIT(self->slow_revert);
    Py_VISIT(self->slow_get);
    Py_VISIT(self->slow_threshold);
    Py_VISIT(self->ledger_at);
    return 0;
}

static int CTree_clear(CTree *self) {
    Py_CLEAR(self->slow_update);
    Py_CLEAR(self->slow_revert);
    Py_CLEAR(self->slow_get);
    Py_CLEAR(self->slow_threshold);
    Py_CLEAR(self->ledger_at);
    return 0;
}

static void CTree_dealloc(CTree *self) {
    PyObject_GC_UnTrack(self);
    CTree_clear(self);
    PyMem_Free(self->k0_tab); PyMem_Free(self->m1_tab);
    pr_stop(self);
    reset(self);
    PyMem_Free(self->qs); PyMem_Free(self->qw); PyMem_Free(self->qt); PyMem_Free(self->qy);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int parse3(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *sig, double *key,
                  int *pos, double *w) {
    if (nargs != want) { PyErr_Format(PyExc_TypeError, "%s", sig); return -1; }
    *key = PyFloat_AsDouble(args[0]);
    *pos = PyObject_IsTrue(args[1]);
    *w = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred() || *pos < 0) return -1;
    if (!isfinite(*key) || !isfinite(*w)) {
        PyErr_Format(PyExc_ValueError, "%s: the key and the weight must be finite", sig);
        return -1;
    }
    return 0;
}

static PyObject *CTree_add(CTree *self, PyObject *const *args, Py_ssize_t nargs) {
    double key, w; int pos;
    if (parse3(args, nargs, 3, "add(key, is_pos, w)", &key, &pos, &w) < 0) return NULL;
    if (upsert(self, key, pos ? w : 0.0, pos ? 0.0 : w, pos, !pos) < 0) return NULL;
    pr_push(self, key); /* (off in a windowed tree) */
    Py_RETURN_NONE;
}

static PyObject *CTree_remove(CTree *self, PyObject *const *args, Py_ssize_t nargs) {
    double key, w; int pos;
    if (parse3(args, nargs, 3, "remove(key, is_pos, w)", &key, &pos, &w) < 0) return NULL;
    if (upsert(self, key, pos ? -w : 0.0, pos ? 0.0 : -w, -pos, -!pos) < 0) return NULL;
    pr_revert(self, key);
    Py_RETURN_NONE;
}

static int window_push(CTree *self, double key, int pos, double w, Py_ssize_t limit) {
    if (self->qsize == self->qcap && ring_grow(self, self->qsize + 1, limit + 1) < 0) return -1;
    if (reserve(self, 2 * self->height + 8) < 0) return -1; /* the add and one expiry cannot fail */
    /* a large tree: start loading both leaves (the new event's and the expiring one's)
       before touching either, so their cache misses overlap (a small one is in cache: the
       extra descents would only cost). Measured: leaving the new event's prefetch to its
       upsert (one descent fewer) was about 10% slower at 10**6: the early prefetch gains lead time. */
    if (self->n_keys > PREFETCH_KEYS) {
        prefetch_leaf(self, descend(self, key));
        if (self->qsize >= limit && self->qsize) prefetch_leaf(self, descend(self, self->qs[self->qhead]));
    }
    if (upsert(self, key, pos ? w : 0.0, pos ? 0.0 : w, pos, !pos) < 0) return -1;
    ring_put(self, key, pos, w, 0.0);
    while (self->qsize > limit)
        if (ring_expire_one(self) < 0) return -1;
    return 0;
}

/* window_push(key, is_pos, w, limit): add the event, queue it, and expire the oldest
   queued events while more than limit are queued. One call per event. */
static PyObject *CTree_window_push(CTree *self, PyObject *const *args, Py_ssize_t nargs) {
    double key, w; int pos;
    if (parse3(args, nargs, 4, "window_push(key, is_pos, w, limit)", &key, &pos, &w) < 0) return NULL;
    Py_ssize_t limit = PyLong_AsSsize_t(args[3]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    if (self->ring != 1) { PyErr_SetString(PyExc_TypeError, "window_push needs a count ring"); return NULL; }
    if (window_push(self, key, pos, w, limit) < 0) return NULL;
    Py_RETURN_NONE;
}

/* ---- fast paths: StreamingThors binds these as its instance's update/revert/get. They
   take the common, already-valid arguments (a finite float score, a 0/1/bool label, a
   float weight) and hand anything else, unchanged, to the Python method, which
   validates and raises exactly as documented. ---- */

static int fast_label(PyObject *y) {
    if (y == Py_True) return 1;
    if (y == Py_False) return 0;
    if (PyLong_CheckExact(y)) {
        int overflow;
        long v = PyLong_AsLongAndOverflow(y, &overflow);
        if (!overflow && (v == 0 || v == 1)) return (int)v;
    }
    return -1;
}

/* (score, y[, w[, t]]) with keywords w=, t= ; returns 0 when the fast path applies */
static int fast_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, int allow_t, double *s, int *pos,
                     PyObject **w, PyObject **t) {
    *w = NULL; *t = NULL;
    if (nargs < 2 || nargs > 3 + allow_t) return -1;
    if (nargs > 2) *w = args[2];
    if (nargs > 3) *t = args[3];
    if (kwnames) {
        Py_ssize_t nk = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t i = 0; i < nk; i++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, i);
            if (!*w && PyUnicode_CompareWithASCIIString(name, "w") == 0) *w = args[nargs + i];
            else if (allow_t && !*t && PyUnicode_CompareWithASCIIString(name, "t") == 0) *t = args[nargs + i];
            else return -1;
        }
    }
    if (!PyFloat_CheckExact(args[0])) return -1;
    *s = PyFloat_AS_DOUBLE(args[0]);
    if (!isfinite(*s)) return -1;
    *pos = fast_label(args[1]);
    return *pos < 0 ? -1 : 0;
}

static PyObject *CTree_fast_update(CTree *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    double s, wv = 1.0;
    int pos;
    PyObject *w, *t;
    if (!self->slow_update) { PyErr_SetString(PyExc_RuntimeError, "fast_update before bind()"); return NULL; }
    if (refuse_broken(self) < 0) return NULL;
    if (self->busy || self->ring == 2 || fast_args(args, nargs, kwnames, 1, &s, &pos, &w, &t) < 0) goto slow;
    if (t && t != Py_None) goto slow;
    if (w) {
        if (!PyFloat_CheckExact(w)) goto slow;
        wv = PyFloat_AS_DOUBLE(w);
        if (!(wv >= self->wmin && wv > 0.0 && wv <= self->wmax && isfinite(wv))) goto slow;
    }
    if (self->ring == 1) {
        if (window_push(self, s, pos, wv, self->limit) < 0) return NULL;
    } else {
        if (wv != 1.0) goto slow; /* the weight ledger is kept in Python */
        if (upsert(self, s, pos ? 1.0 : 0.0, pos ? 0.0 : 1.0, pos, !pos) < 0) return NULL;
        pr_push(self, s);
    }
    if (self->n_updates < LLONG_MAX) self->n_updates++; /* saturating */
    Py_RETURN_NONE;
slow:
    return PyObject_Vectorcall(self->slow_update, args, nargs, kwnames);
}

static PyObject *CTree_fast_revert(CTree *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames) {
    double s;
    int pos;
    PyObject *w, *t;
    if (!self->slow_revert) { PyErr_SetString(PyExc_RuntimeError, "fast_revert before bind()"); return NULL; }
    if (refuse_broken(self) < 0) return NULL;
    if (self->busy || self->ring != 0 || fast_args(args, nargs, kwnames, 0, &s, &pos, &w, &t) < 0) goto slow;
    if (w && !(PyFloat_CheckExact(w) && PyFloat_AS_DOUBLE(w) == 1.0)) goto slow;
    if (self->ledger_at && PyDict_Size(self->ledger_at) != 0) goto slow;
    if (upsert(self, s, pos ? -1.0 : 0.0, pos ? 0.0 : -1.0, -pos, -!pos) < 0) {
        /* not held (the tree is unchanged): the Python method raises the documented error */
        if (!PyErr_ExceptionMatches(PyExc_KeyError)) return NULL;
        PyErr_Clear();
        goto slow;
    }
    pr_revert(self, s);
    Py_RETURN_NONE;
slow:
    return PyObject_Vectorcall(self->slow_revert, args, nargs, kwnames);
}

/* enter() / exit(): bracket a Python method working on the core; meanwhile the fast
   paths hand over to the (locked) Python methods, so a thread never sees a half-done
   batch. */
static PyObject *CTree_enter(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (refuse_broken(self) < 0) return NULL;
    self->busy++;
    Py_RETURN_NONE;
}
static PyObject *CTree_exit(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (self->busy > 0) self->busy--;
    Py_RETURN_NONE;
}

/* bind(slow_update, slow_revert, slow_get, ledger_at, limit, wmax[, slow_threshold[, wmin]]) */
static PyObject *CTree_bind(CTree *self, PyObject *args) {
    PyObject *u, *r, *g, *led, *th = NULL;
    Py_ssize_t limit;
    double wmax, wmin = 0.0;
    if (!PyArg_ParseTuple(args, "OOOOnd|Od", &u, &r, &g, &led, &limit, &wmax, &th, &wmin)) return NULL;
    if (led != Py_None && !PyDict_Check(led)) { PyErr_SetString(PyExc_TypeError, "ledger_at must be a dict"); return NULL; }
    if (th == Py_None) th = NULL;
    Py_XINCREF(th);
    Py_XSETREF(self->slow_threshold, th);
    Py_INCREF(u); Py_INCREF(r); Py_INCREF(g);
    Py_XSETREF(self->slow_update, u);
    Py_XSETREF(self->slow_revert, r);
    Py_XSETREF(self->slow_get, g);
    if (led == Py_None) { Py_CLEAR(self->ledger_at); } else { Py_INCREF(led); Py_XSETREF(self->ledger_at, led); }
    self->limit = limit; self->wmax = wmax; self->wmin = wmin;
    Py_RETURN_NONE;
}

/* time_push(key, is_pos, w, t, cutoff): add the event at time t (>= every queued time),
   queue it, and expire queued events with time <= cutoff. */
static PyObject *CTree_time_push(CTree *self, PyObject *const *args, Py_ssize_t nargs) {
    double key, w; int pos;
    if (parse3(args, nargs, 5, "time_push(key, is_pos, w, t, cutoff)", &key, &pos, &w) < 0) return NULL;
    double tm = PyFloat_AsDouble(args[3]), cutoff = PyFloat_AsDouble(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (self->ring != 2) { PyErr_SetString(PyExc_TypeError, "time_push needs a timed ring"); return NULL; }
    if (self->qsize == self->qcap && ring_grow(self, self->qsize + 1, 0) < 0) return NULL;
    if (reserve(self, 2 * self->height + 8) < 0) return NULL;
    if (upsert(self, key, pos ? w : 0.0, pos ? 0.0 : w, pos, !pos) < 0) return NULL;
    ring_put(self, key, pos, w, tm);
    while (self->qsize && self->qt[self->qhead] <= cutoff)
        if (ring_expire_one(self) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *CTree_expire_until(CTree *self, PyObject *arg) {
    double cutoff = PyFloat_AsDouble(arg);
    if (cutoff == -1.0 && PyErr_Occurred()) return NULL;
    if (self->ring != 2) { PyErr_SetString(PyExc_TypeError, "expire_until needs a timed ring"); return NULL; }
    while (self->qsize && self->qt[self->qhead] <= cutoff)
        if (ring_expire_one(self) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *CTree_held_at(CTree *self, PyObject *arg) {
    double key = PyFloat_AsDouble(arg);
    if (key == -1.0 && PyErr_Occurred()) return NULL;
    int32_t leaf = descend(self, key);
    Leaf *L = &self->leaves[leaf];
    int32_t pos = leaf_pos(L, key);
    if (pos < L->n && L->key[pos] == key) {
        uint32_t c1, c0;
        double h1, h0;
        get_counts(L, pos, &c1, &c0);
        get_hi(self, L, pos, &h1, &h0);
        return Py_BuildValue("(ddII)", h1, h0, (unsigned int)c1, (unsigned int)c0);
    }
    Py_RETURN_NONE;
}

/* held_at_exact(key) -> (w1_hi, w1_lo, w0_hi, w0_lo) or None */
static PyObject *CTree_held_at_exact(CTree *self, PyObject *arg) {
    double key = PyFloat_AsDouble(arg);
    if (key == -1.0 && PyErr_Occurred()) return NULL;
    int32_t leaf = descend(self, key);
    Leaf *L = &self->leaves[leaf];
    int32_t pos = leaf_pos(L, key);
    if (pos < L->n && L->key[pos] == key) {
        double h1, h0, l1, l0;
        get_hi(self, L, pos, &h1, &h0);
        leaf_lo_get(self, L, pos, &l1, &l0);
        return Py_BuildValue("(dddd)", h1, l1, h0, l0);
    }
    Py_RETURN_NONE;
}

static PyObject *CTree_best(CTree *self, PyObject *Py_UNUSED(ignored)) {
    clean(self);
    if (self->n_keys && self->top.minp < 0.0) return Py_BuildValue("(dd)", self->top.minp, self->top.argk);
    return Py_BuildValue("(dd)", 0.0, -INFINITY);
}

/* The threshold of a tree holding keys (-inf: all positive), its stale aggregates
   recomputed first. */
static inline double tree_threshold(CTree *t) {
    clean(t);
    return t->top.minp < 0.0 ? t->top.argk : -INFINITY;
}

static PyObject *CTree_threshold(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (refuse_broken(self) < 0) return NULL;
    if (self->n_keys == 0) Py_RETURN_NONE;
    return PyFloat_FromDouble(tree_threshold(self));
}

/* fast_get() -> threshold(), except while a Python method works on the core (busy): then
   the bound slow_threshold (the locked get()), which waits for that method to finish, so
   no thread reads a half-applied change (a period-mode update expiring late labels one at
   a time, a batch with a late label). */
static PyObject *CTree_fast_get(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (self->busy && self->slow_threshold) return PyObject_CallNoArgs(self->slow_threshold);
    return CTree_threshold(self, NULL);
}

/* cost() -> b * W0 + min(0, min prefix): the empirical cost at the threshold; None when empty */
static PyObject *CTree_cost(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (self->n_keys == 0) Py_RETURN_NONE;
    clean(self);
    double m = self->top.minp < 0.0 ? self->top.minp : 0.0;
    return PyFloat_FromDouble(self->b * self->top.w0 + m);
}

/* totals() -> (W1, W0, C1, C0) over every key */
static PyObject *CTree_totals(CTree *self, PyObject *Py_UNUSED(ignored)) {
    clean(self);
    if (self->n_keys == 0) return Py_BuildValue("(dddd)", 0.0, 0.0, 0.0, 0.0);
    return Py_BuildValue("(dddd)", self->top.w1, self->top.w0, self->top.c1, self->top.c0);
}

static PyObject *CTree_n_events(CTree *self, PyObject *Py_UNUSED(ignored)) {
    clean(self);
    if (self->n_keys == 0) return PyLong_FromLong(0);
    return PyLong_FromDouble(self->top.c1 + self->top.c0);
}

/* Mark every aggregate stale (recursion depth = the height). */
static void refresh_all(CTree *t, int32_t node, int level) {
    t->root_dirty = 1;
    if (level == 0) return;
    Inner *N = &t->inners[node];
    N->mask = bits_below(N->n);
    for (int32_t i = 0; i < N->n; i++) refresh_all(t, N->child[i], level - 1);
}

static PyObject *CTree_set_coefs(CTree *self, PyObject *args) {
    double a, b;
    if (!PyArg_ParseTuple(args, "dd", &a, &b)) return NULL;
    if (a != self->a || b != self->b) {
        self->a = a; self->b = b;
        refresh_all(self, self->root, self->height);
    }
    Py_RETURN_NONE;
}

/* ---- walking all keys in order (a loop with an explicit stack) ---- */

typedef struct {
    CTree *t;
    int32_t stack_node[MAXH], stack_idx[MAXH];
    int depth;
    int32_t leaf;
} Walk;

static int32_t walk_first(Walk *wk, CTree *t) {
    wk->t = t; wk->depth = 0;
    int32_t node = t->root;
    for (int l = 0; l < t->height; l++) {
        wk->stack_node[l] = node; wk->stack_idx[l] = 0;
        node = t->inners[node].child[0];
    }
    wk->depth = t->height;
    wk->leaf = node;
    return node;
}

static int32_t walk_next(Walk *wk) {
    CTree *t = wk->t;
    int l = wk->depth - 1;
    while (l >= 0 && wk->stack_idx[l] + 1 >= t->inners[wk->stack_node[l]].n) l--;
    if (l < 0) return NIL;
    wk->stack_idx[l]++;
    int32_t node = t->inners[wk->stack_node[l]].child[wk->stack_idx[l]];
    for (int k = l + 1; k < wk->depth; k++) {
        wk->stack_node[k] = node; wk->stack_idx[k] = 0;
        node = t->inners[node].child[0];
    }
    wk->leaf = node;
    return node;
}

/* export() -> bytes of 5 x n_keys float64: rows key, w1, w0, c1, c0 in key order */
static PyObject *CTree_export(CTree *self, PyObject *Py_UNUSED(ignored)) {
    Py_ssize_t n = self->n_keys, q = 0;
    PyObject *b = PyBytes_FromStringAndSize(NULL, 5 * n * (Py_ssize_t)sizeof(double));
    if (!b) return NULL;
    double *out = (double *)PyBytes_AS_STRING(b);
    Walk wk;
    for (int32_t leaf = walk_first(&wk, self); leaf != NIL; leaf = walk_next(&wk)) {
        Leaf *L = &self->leaves[leaf];
        for (int32_t i = 0; i < L->n; i++, q++) {
            out[q] = L->key[i];
            get_hi(self, L, i, &out[n + q], &out[2 * n + q]);
            uint32_t c1, c0;
            get_counts(L, i, &c1, &c0);
            out[3 * n + q] = c1; out[4 * n + q] = c0;
        }
    }
    return b;
}

/* export_lo() -> bytes of 2 x n_keys float64: the double-double low parts of w1, w0 */
static PyObject *CTree_export_lo(CTree *self, PyObject *Py_UNUSED(ignored)) {
    Py_ssize_t n = self->n_keys, q = 0;
    PyObject *b = PyBytes_FromStringAndSize(NULL, 2 * n * (Py_ssize_t)sizeof(double));
    if (!b) return NULL;
    double *out = (double *)PyBytes_AS_STRING(b);
    Walk wk;
    for (int32_t leaf = walk_first(&wk, self); leaf != NIL; leaf = walk_next(&wk)) {
        Leaf *L = &self->leaves[leaf];
        for (int32_t i = 0; i < L->n; i++, q++) {
            double l1, l0;
            leaf_lo_get(self, L, i, &l1, &l0);
            out[q] = l1; out[n + q] = l0;
        }
    }
    return b;
}

/* ---- bulk changes ---- */

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

/* Start rebuilding t for at most nmax keys, plain (every row's weights its counts, no low
   parts) or not, at most nlo rows with low parts. The arenas are grown first (reused: a
   rebuild touches no fresh pages; a failed realloc leaves the old block, and so the old tree,
   intact), then the tree is emptied. Returns 0, or -1 with MemoryError set and the tree
   unchanged. */
static int build_begin(Builder *B, CTree *t, Py_ssize_t nmax, int plain, Py_ssize_t nlo) {
    Py_ssize_t nl = nmax ? (nmax + FILL - 1) / FILL : 1;
    if (nl > INT32_MAX / 4) { PyErr_SetString(PyExc_MemoryError, "too many distinct scores"); return -1; }
    if (nlo > nl) nlo = nl; /* (at most one block a leaf) */
    Py_ssize_t ni_max = nl / (IFILL - 1) + 2 * MAXH; /* every inner level, rounded up */
    B->t = t; B->nl = 0; B->n = 0; B->L = NULL;
    B->level = PyMem_Malloc((size_t)(nl + 1) * sizeof(int32_t));
    B->lsep = PyMem_Malloc((size_t)(nl + 1) * sizeof(double));
    B->agg = PyMem_Malloc((size_t)(nl + 1) * sizeof(Agg));
    if (!B->level || !B->lsep || !B->agg) goto nomem;
    /* grow what is too small first; only when every grow has succeeded is an arena far too
       big shrunk (a shrink that fails just keeps the bigger block) */
    if (t->lcap < nl + 16) {
        Leaf *p = PyMem_Realloc(t->leaves, (size_t)(nl + 16) * sizeof(Leaf));
        if (!p) goto nomem;
        t->leaves = p; t->lcap = (int32_t)(nl + 16);
    }
    if (t->icap < ni_max) {
        Inner *p = PyMem_Realloc(t->inners, (size_t)ni_max * sizeof(Inner));
        if (!p) goto nomem;
        t->inners = p; t->icap = (int32_t)ni_max;
    }
    if (t->ocap < nlo + 16) {
        LoBlock *p = PyMem_Realloc(t->los, (size_t)(nlo + 16) * sizeof(LoBlock));
        if (!p) goto nomem;
        t->los = p; t->ocap = (int32_t)(nlo + 16);
    }
    /* (while plain, a block held here is unused) */
    if (!plain && t->wcap < t->lcap && resize_weights(t, t->lcap) < 0) goto nomem;
    if (t->lcap / 4 > nl + 16) {
        Leaf *p = PyMem_Realloc(t->leaves, (size_t)(nl + 16) * sizeof(Leaf));
        if (p) { t->leaves = p; t->lcap = (int32_t)(nl + 16); }
    }
    if (t->icap / 4 > ni_max) {
        Inner *p = PyMem_Realloc(t->inners, (size_t)ni_max * sizeof(Inner));
        if (p) { t->inners = p; t->icap = (int32_t)ni_max; }
    }
    if (t->ocap / 4 > nlo + 16) {
        LoBlock *p = PyMem_Realloc(t->los, (size_t)(nlo + 16) * sizeof(LoBlock));
        if (p) { t->los = p; t->ocap = (int32_t)(nlo + 16); }
    }
    if (!plain && t->wcap > t->lcap) resize_weights(t, t->lcap); /* as long as the leaves, no longer */
    t->lused = 0; t->lfree = NIL; t->nleaves = 0;
    t->iused = 0; t->ifree = NIL; t->ninners = 0;
    t->oused = 0; t->ofree = NIL; t->nlos = 0;
    t->plain = plain; /* plain again when every row's weights are its counts */
    if (plain) { PyMem_Free(t->wts); t->wts = NULL; t->wcap = 0; }
    return 0;
nomem:
    PyMem_Free(B->level); PyMem_Free(B->lsep); PyMem_Free(B->agg);
    B->level = NULL; B->lsep = NULL; B->agg = NULL;
    PyErr_NoMemory();
    return -1;
}

/* Append the row of the next key (above every key before it). */
static inline void build_key(Builder *B, double key, double h1, double l1, double h0, double l0, uint32_t c1,
                             uint32_t c0) {
    CTree *t = B->t;
    Leaf *L = B->L;
    if (!L || L->n == FILL) {
        if (L) leaf_agg(t, L, &B->agg[B->nl - 1]);
        int32_t li = new_leaf(t);
        L = B->L = &t->leaves[li];
        B->level[B->nl] = li; B->lsep[B->nl] = key;
        B->nl++;
    }
    int32_t i = L->n++;
    L->key[i] = key;
    set_counts(L, i, c1, c0);
    set_hi(t, L, i, h1, h0);
    if (l1 != 0.0 || l0 != 0.0) {
        if (L->lo == NIL) L->lo = new_lo(t);
        t->los[L->lo].w1[i] = l1; t->los[L->lo].w0[i] = l0;
    }
    B->n++;
}

/* Close the rebuild: the last leaf, when short, takes half of the keys of the two last leaves;
   the inner levels, each node's aggregates computed from its children's (as clean would). */
static void build_end(Builder *B) {
    CTree *t = B->t;
    if (!B->nl) { /* no key: one empty leaf */
        B->level[0] = new_leaf(t); B->lsep[0] = -INFINITY; B->nl = 1;
    }
    Py_ssize_t nl = B->nl;
    if (nl > 1) {
        int32_t p = B->level[nl - 2], q = B->level[nl - 1];
        Leaf *P = &t->leaves[p], *Q = &t->leaves[q];
        if (Q->n < LMIN) {
            int32_t r = Q->n, k = (P->n + r) / 2 - r;
            leaf_shift(t, q, 0, k, r);
            leaf_copy(t, q, 0, p, P->n - k, k);
            P = &t->leaves[p]; Q = &t->leaves[q];
            P->n -= k; Q->n += k;
            B->lsep[nl - 1] = Q->key[0];
            leaf_agg(t, P, &B->agg[nl - 2]);
        }
    }
    leaf_agg(t, &t->leaves[B->level[nl - 1]], &B->agg[nl - 1]);
    t->n_keys = B->n;
    int32_t *level = B->level;
    double *lsep = B->lsep;
    Agg *agg = B->agg;
    Py_ssize_t cnt_nodes = nl;
    int h = 0;
    while (cnt_nodes > 1) {
        Py_ssize_t np_ = (cnt_nodes + IFILL - 1) / IFILL;
        Py_ssize_t c = 0;
        for (Py_ssize_t j = 0; j < np_; j++) {
            Py_ssize_t m = cnt_nodes / np_ + (j < cnt_nodes % np_);
            int32_t ni = new_inner(t);
            Inner *N = &t->inners[ni];
            for (Py_ssize_t i = 0; i < m; i++, c++) { N->sep[i] = lsep[c]; N->child[i] = level[c]; N->agg[i] = agg[c]; }
            N->n = (int32_t)m;
            double s0 = N->sep[0];
            level[j] = ni; lsep[j] = s0;
            inner_agg(N, &agg[j], t->plain); /* (children j.. read: j <= their first index) */
        }
        cnt_nodes = np_;
        h++;
    }
    t->root = level[0]; t->height = h;
    if (h > 0) t->inners[t->root].sep[0] = -INFINITY;
    t->top = agg[0];
    t->root_dirty = 0;
    PyMem_Free(B->level); PyMem_Free(B->lsep); PyMem_Free(B->agg);
    B->level = NULL; B->lsep = NULL; B->agg = NULL;
}

/* Rebuild from sorted arrays (key, w1 hi/lo, w0 hi/lo, c1, c0) of n distinct keys. Returns 0,
   or -1 with MemoryError set and the tree unchanged. */
static int build_from(CTree *t, const double *k, const double *h1, const double *l1, const double *h0,
                      const double *l0, const double *c1, const double *c0, Py_ssize_t n) {
    Py_ssize_t nlo = 0;
    int rows_plain = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        nlo += (l1[i] != 0.0 || l0[i] != 0.0);
        rows_plain &= l1[i] == 0.0 && l0[i] == 0.0 && h1[i] == c1[i] && h0[i] == c0[i];
    }
    Builder B;
    if (build_begin(&B, t, n, rows_plain, nlo) < 0) return -1;
    for (Py_ssize_t i = 0; i < n; i++) build_key(&B, k[i], h1[i], l1[i], h0[i], l0[i], (uint32_t)c1[i], (uint32_t)c0[i]);
    build_end(&B);
    return 0;
}

/* A batch of m changes into a tree of n keys is merged and rebuilt when n < REBUILD_RATIO
   * m, else applied leaf by leaf. Measured (10k-event window batches, i.e. m = 20,000
   changes, two threads, 2 cores): equal costs near n = 5m; at n = 10m leaf by leaf is
   1.5x faster (0.21 against 0.31 us/event), at n = 2.5m the rebuild is 1.3x faster. */
#define REBUILD_RATIO 6
static Py_ssize_t rebuild_ratio = REBUILD_RATIO; /* (_set_rebuild_ratio: benchmarks and tests) */

/* Apply per-event (or per-key) changes sorted by key (keys may repeat): small batches
   leaf by leaf (apply_runs), large ones (next to the tree) by merging them into the sorted
   export and rebuilding, O(n + m). Returns 0, or -1 with an exception set. */
static int apply_sorted_impl(CTree *self, const double *k, const double *a1, const double *a0, const double *d1,
                             const double *d0, Py_ssize_t m, int two_threads) {
    Py_ssize_t n = self->n_keys;
    if (!(m > 64 && m * rebuild_ratio > n)) {
        /* a change whose weight is not its count ends the plain mode (before anything
           changes; a rebuild below decides from its rows instead) */
        for (Py_ssize_t q = 0; q < m && self->plain; q++)
            if ((a1[q] != d1[q] || a0[q] != d0[q]) && leave_plain(self) < 0) return -1;
        return two_threads ? apply_runs_two(self, k, a1, a0, d1, d0, m) : apply_runs(self, k, a1, a0, d1, d0, m);
    }
    /* merge the sorted deltas into the sorted export and rebuild: O(n + m) */
    int rc = -1;
    Py_ssize_t cap = n + m;
    double *ex = PyMem_Malloc((size_t)(cap ? cap : 1) * 7 * sizeof(double));
    if (!ex) { PyErr_NoMemory(); return -1; }
    double *K = ex, *H1 = ex + cap, *L1 = ex + 2 * cap, *H0 = ex + 3 * cap, *L0 = ex + 4 * cap,
           *C1 = ex + 5 * cap, *C0 = ex + 6 * cap;
    Py_ssize_t o = 0, j = 0;
    Walk wk;
    int32_t leaf = walk_first(&wk, self);
    int32_t i = 0;
    for (;;) {
        while (leaf != NIL && i >= self->leaves[leaf].n) { leaf = walk_next(&wk); i = 0; }
        double tk = leaf != NIL ? self->leaves[leaf].key[i] : INFINITY;
        int have_tree = leaf != NIL;
        if (!have_tree && j >= m) break;
        double key = have_tree && (j >= m || tk <= k[j]) ? tk : k[j];
        double h1 = 0, l1 = 0, h0 = 0, l0 = 0, c1 = 0, c0 = 0;
        if (have_tree && tk == key) {
            Leaf *L = &self->leaves[leaf];
            uint32_t o1, o0;
            get_counts(L, i, &o1, &o0);
            get_hi(self, L, i, &h1, &h0);
            c1 = o1; c0 = o0;
            leaf_lo_get(self, L, i, &l1, &l0);
            i++;
        }
        for (; j < m && k[j] == key; j++) {
            c1 += d1[j]; c0 += d0[j];
            if (a1[j] != 0.0) dd_add(&h1, &l1, a1[j]);
            if (a0[j] != 0.0) dd_add(&h0, &l0, a0[j]);
        }
        if (c1 < 0 || c0 < 0) {
            key_error(key);
            goto out;
        }
        if (c1 > 4294967295.0 || c0 > 4294967295.0) {
            PyErr_SetString(PyExc_ValueError, "more than 2**32 - 1 events of one class at one score");
            goto out;
        }
        if (c1 + c0 == 0) continue;
        if (c1 == 0) h1 = l1 = 0.0;
        if (c0 == 0) h0 = l0 = 0.0;
        K[o] = key; H1[o] = h1; L1[o] = l1; H0[o] = h0; L0[o] = l0; C1[o] = c1; C0[o] = c0;
        o++;
    }
    if (build_from(self, K, H1, L1, H0, L0, C1, C0, o) < 0) goto out;
    self->version++;
    rc = 0;
out:
    PyMem_Free(ex);
    return rc;
}

/* apply_sorted(keys, dw1, dw0, dc1, dc0): per-event (or per-key) deltas sorted by key
   (keys may repeat); five float64 buffers of one length. Internal: removals must be of
   held events. */
static PyObject *CTree_apply_sorted(CTree *self, PyObject *args) {
    Py_buffer bufs[5];
    int got = 0;
    PyObject *res = NULL;
    if (refuse_broken(self) < 0) return NULL;
    if (PyTuple_GET_SIZE(args) != 5) { PyErr_SetString(PyExc_TypeError, "apply_sorted takes 5 arrays"); return NULL; }
    for (; got < 5; got++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, got), &bufs[got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
        if (bufs[got].itemsize != 8 || bufs[got].len != bufs[0].len || strcmp(bufs[got].format, "d") != 0) {
            PyBuffer_Release(&bufs[got]);
            PyErr_SetString(PyExc_TypeError, "apply_sorted needs contiguous float64 arrays of one length");
            goto done;
        }
    }
    {
        Py_ssize_t m = bufs[0].len / 8;
        double *k = bufs[0].buf, *a1 = bufs[1].buf, *a0 = bufs[2].buf, *d1 = bufs[3].buf, *d0 = bufs[4].buf;
        for (Py_ssize_t q = 0; q < m; q++) {
            if (!isfinite(k[q]) || (q && k[q] < k[q - 1]) || d1[q] != floor(d1[q]) || d0[q] != floor(d0[q]) ||
                fabs(d1[q]) > 4294967295.0 || fabs(d0[q]) > 4294967295.0 || !isfinite(a1[q]) || !isfinite(a0[q])) {
                PyErr_SetString(PyExc_ValueError,
                                "apply_sorted: keys must be finite and sorted, weights finite, counts integers");
                goto done;
            }
        }
        /* one thread: these deltas may hold removals of what is not held, and one thread
           raises at the first of them with the keys before it applied and nothing after */
        pr_stop(self); /* (not in arrival order) */
        if (apply_sorted_impl(self, k, a1, a0, d1, d0, m, 0) < 0) goto done;
    }
    res = Py_None; Py_INCREF(res);
done:
    for (int q = 0; q < got; q++) PyBuffer_Release(&bufs[q]);
    return res;
}

/* Sortable bits of a double (ascending as the double; -0.0 as +0.0). */
static inline uint64_t sort_bits(double d) {
    uint64_t u;
    d += 0.0; /* -0.0 + 0.0 = 0.0: one key, so one digit pattern (the sort is stable) */
    memcpy(&u, &d, 8);
    return (u >> 63) ? ~u : u | ((uint64_t)1 << 63);
}

/* One stable LSD pass on the 11-bit digit at bit sh of k1, carrying src along into dst;
   skipped (returns 0) when every key has the same digit. hist is the digit's histogram,
   turned into offsets here. */
static int radix_pass(int sh, uint32_t *hist, Py_ssize_t m, uint64_t **k1, uint64_t **k2, uint32_t **src,
                      uint32_t **dst) {
    if (hist[((*k1)[0] >> sh) & 2047] == (uint32_t)m) return 0; /* one digit: nothing to move */
    uint32_t s = 0;
    for (int d = 0; d < 2048; d++) { uint32_t c = hist[d]; hist[d] = s; s += c; }
    for (Py_ssize_t i = 0; i < m; i++) {
        uint32_t at = hist[((*k1)[i] >> sh) & 2047]++;
        (*k2)[at] = (*k1)[i]; (*dst)[at] = (*src)[i];
    }
    uint64_t *tk = *k1; *k1 = *k2; *k2 = tk;
    uint32_t *to = *src; *src = *dst; *dst = to;
    return 1;
}

/* order[0..m) = the positions of key[0..m) in ascending key order, stable (equal keys keep
   their order). An LSD radix sort on the 22 bits (33 from 2**17 keys on) of the keys'
   sortable bits below the highest bit in which they differ, then an insertion pass that
   orders the keys sharing those bits: few in practice, so two or three passes instead of
   six. When that pass has moved more than 2m keys (keys crowded together), it stops and all
   six digits are sorted: O(m) worst case. 20 bytes of scratch per key. Returns 0, or -1 with
   MemoryError set. */
static int radix_order(const double *key, Py_ssize_t m, uint32_t *order) {
    if (m <= 32) { /* insertion sort */
        for (Py_ssize_t i = 0; i < m; i++) {
            uint32_t v = (uint32_t)i;
            Py_ssize_t j = i;
            while (j > 0 && key[order[j - 1]] > key[v]) { order[j] = order[j - 1]; j--; }
            order[j] = v;
        }
        return 0;
    }
    uint64_t *kb = PyMem_Malloc((size_t)m * 2 * sizeof(uint64_t));
    uint32_t *o2 = PyMem_Malloc((size_t)m * sizeof(uint32_t));
    uint32_t hist[3][2048]; /* (on the stack: every digit's only when crowded keys need them) */
    if (!kb || !o2) { PyMem_Free(kb); PyMem_Free(o2); PyErr_NoMemory(); return -1; }
    memset(hist, 0, sizeof hist);
    uint64_t *k1 = kb, *k2 = kb + m, b0 = sort_bits(key[0]), differ = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        uint64_t b = sort_bits(key[i]);
        k1[i] = b; order[i] = (uint32_t)i;
        differ |= b ^ b0;
    }
    uint32_t *src = order, *dst = o2;
    int lo = 0, done = 1;
    if (differ) {
        int hb = 63 - __builtin_clzll(differ), digits = m < ((Py_ssize_t)1 << 17) ? 2 : 3, nd = 0;
        lo = hb + 1 - 11 * digits;
        if (lo < 0) lo = 0;
        for (int sh = lo; sh <= hb; sh += 11) nd++;
        for (Py_ssize_t i = 0; i < m; i++)
            for (int g = 0; g < nd; g++) hist[g][(k1[i] >> (lo + 11 * g)) & 2047]++;
        for (int g = 0; g < nd; g++) radix_pass(lo + 11 * g, hist[g], m, &k1, &k2, &src, &dst);
    }
    /* the keys that share the bits sorted on are adjacent now: order them by insertion */
    Py_ssize_t moves = 0, budget = 2 * m;
    for (Py_ssize_t i = 1; lo && i < m && done; i++) {
        uint64_t v = k1[i];
        if (k1[i - 1] <= v) continue;
        uint32_t o = src[i];
        Py_ssize_t j = i;
        while (j > 0 && k1[j - 1] > v) { k1[j] = k1[j - 1]; src[j] = src[j - 1]; j--; }
        k1[j] = v; src[j] = o;
        moves += i - j;
        if (moves > budget) done = 0;
    }
    if (!done) { /* crowded keys: a full LSD sort (stable, so equal keys keep their order) */
        uint32_t (*all)[2048] = PyMem_Calloc(6, sizeof *all);
        if (!all) { PyMem_Free(kb); PyMem_Free(o2); PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = 0; i < m; i++)
            for (int p = 0; p < 6; p++) all[p][(k1[i] >> (11 * p)) & 2047]++;
        for (int p = 0; p < 6; p++) radix_pass(11 * p, all[p], m, &k1, &k2, &src, &dst);
        PyMem_Free(all);
    }
    if (src != order) memcpy(order, src, (size_t)m * sizeof(uint32_t));
    PyMem_Free(kb); PyMem_Free(o2);
    return 0;
}

/* Apply m events (key, is_pos, w, sign +1 add / -1 remove; sign NULL: all added) given
   in any order: sorted here (radix_order), then applied by apply_sorted_impl. */
static int apply_events(CTree *t, const double *key, const uint8_t *y, const double *w, const int8_t *sign,
                        Py_ssize_t m) {
    if (m == 0) return 0;
    if (m > (Py_ssize_t)UINT32_MAX) { PyErr_SetString(PyExc_MemoryError, "batch too large"); return -1; }
    uint32_t *order = PyMem_Malloc((size_t)m * sizeof(uint32_t));
    double *buf = PyMem_Malloc((size_t)m * 5 * sizeof(double));
    int rc = -1;
    if (!order || !buf) { PyErr_NoMemory(); goto out; }
    if (radix_order(key, m, order) < 0) goto out;
    double *k = buf, *a1 = buf + m, *a0 = buf + 2 * m, *d1 = buf + 3 * m, *d0 = buf + 4 * m;
    for (Py_ssize_t q = 0; q < m; q++) {
        uint32_t i = order[q];
        double sg = sign ? (double)sign[i] : 1.0, sw = w ? sg * w[i] : sg;
        k[q] = key[i];
        a1[q] = y[i] ? sw : 0.0; a0[q] = y[i] ? 0.0 : sw;
        d1[q] = y[i] ? sg : 0.0; d0[q] = y[i] ? 0.0 : sg;
    }
    rc = apply_sorted_impl(t, k, a1, a0, d1, d0, m, 1);
out:
    PyMem_Free(order); PyMem_Free(buf);
    return rc;
}

/* ------------------------------------------------------------------ batches by key */

/* A batch whose events repeat few distinct scores is aggregated by key before it touches the
   tree: one hash lookup per event instead of a sort of the events. Per key and class, the
   added and the removed events are counted and their weights summed as double-double numbers
   (dd_add): a sum of unit weights is its count, so only a class that meets another weight is
   summed, starting from its count. The keys are then sorted, and either each key's counts are
   changed in place (counts_in_place: a plain tree whose keys all stay held) or the tree takes
   one row per key for its additions and one for its removals, in key order, through
   apply_sorted_impl (which applies a key's additions before its removals, as it does per-event
   rows; a sum whose low part is not zero goes to the tree as a second row, after the first).
   On the exactness condition (every per-score sum fits a double-double) the tree then holds the
   very pairs the per-event rows give it: an exact sum has one renormalised double-double,
   whatever the order of its terms. A batch of many distinct keys is told by its first events
   (no repeat among the first AGG_FIRST, or more than 15/16 of the first AGG_PROBE distinct) and
   sorted instead, as is one of more than AGG_MAX keys or of more keys than half its events
   (too few rows saved to pay for the hashing, and the sorted events of a large batch can take
   two threads). */
#define AGG_MAX 16384         /* most distinct keys a batch is aggregated over */
#define AGG_MIN 256           /* smaller batches are sorted (nothing to gain) */
#define AGG_PROBE 1024        /* more distinct keys than 15/16 of the first AGG_PROBE events: sorted instead */
#define AGG_FIRST 128         /* (as is a batch whose first AGG_FIRST events are all distinct: told at once) */
#define AGG_PROBE_REBUILD 256 /* (AGG_PROBE for a batch that rebuilds the tree: sorting its values is cheap) */
static long long keyed_batches, replaced_batches; /* tests: batches applied by key, batches that rebuilt the tree */

typedef struct {
    double key;    /* the first of its events (of the signed zeros, the one that came first) */
    uint32_t n[4]; /* events: class 1 added, class 0 added, class 1 removed, class 0 removed */
    uint32_t wt;   /* bit c: the weights of n[c] are summed in sum[c] (one of them was not 1) */
    int32_t pad;
} KeyRow;

typedef struct {
    uint64_t bits; /* the key's bits (of 0.0 for both zeros) */
    int64_t row;   /* 1 + index of the key's row, 0: free */
} KeySlot;

typedef struct {
    KeySlot *slot;    /* open addressing, linear probing */
    uint32_t mask;    /* slots - 1 (a power of two, at least eight times the rows' capacity) */
    KeyRow *row;
    double (*sum)[8]; /* per row: hi parts [0, 4), lo parts [4, 8) of summed weights (allocated when needed) */
    Py_ssize_t d, cap, limit; /* rows used, allocated, most allowed */
} KeyTable;

static void kt_free(KeyTable *T) {
    PyMem_Free(T->slot); PyMem_Free(T->row); PyMem_Free(T->sum);
    T->slot = NULL; T->row = NULL; T->sum = NULL;
}

static inline uint64_t key_bits(double key) {
    uint64_t u;
    key += 0.0; /* -0.0 + 0.0 = 0.0: one key */
    memcpy(&u, &key, 8);
    return u;
}

static inline uint32_t kt_hash(uint64_t u, uint32_t mask) {
    u ^= u >> 33; u *= 0xff51afd7ed558ccdULL; u ^= u >> 33; u *= 0xc4ceb9fe1a85ec53ULL; /* murmur3's finaliser */
    u ^= u >> 33;
    return (uint32_t)u & mask;
}

/* Room for cap rows (rows kept, slots rebuilt). Returns 0, or -1 with MemoryError set. */
static int kt_grow(KeyTable *T, Py_ssize_t cap) {
    uint32_t slots = 64;
    while ((Py_ssize_t)slots < 8 * cap) slots *= 2; /* at most an eighth full: short probes (paired A/Bs: a quarter 1.10x, a half 1.27x the time) */
    KeySlot *sl = PyMem_Calloc(slots, sizeof(KeySlot));
    KeyRow *row = sl ? PyMem_Realloc(T->row, (size_t)cap * sizeof(KeyRow)) : NULL;
    if (!row) { PyMem_Free(sl); PyErr_NoMemory(); return -1; }
    T->row = row;
    if (T->sum) {
        double (*sum)[8] = PyMem_Realloc(T->sum, (size_t)cap * sizeof *T->sum);
        if (!sum) { PyMem_Free(sl); PyErr_NoMemory(); return -1; }
        T->sum = sum;
    }
    PyMem_Free(T->slot);
    T->slot = sl; T->mask = slots - 1; T->cap = cap;
    for (Py_ssize_t i = 0; i < T->d; i++) {
        uint64_t u = key_bits(T->row[i].key);
        uint32_t h = kt_hash(u, T->mask);
        while (T->slot[h].row) h = (h + 1) & T->mask;
        T->slot[h].bits = u; T->slot[h].row = i + 1;
    }
    return 0;
}

/* A table for at most limit keys. Returns 0, or -1 with MemoryError set. */
static int kt_init(KeyTable *T, Py_ssize_t limit) {
    T->slot = NULL; T->row = NULL; T->sum = NULL;
    T->d = 0; T->cap = 0; T->limit = limit;
    return kt_grow(T, limit < 256 ? limit : 256);
}

/* The row of key (added, with no events, when new). Returns its index, -1 when the table is
   full (nothing added), -2 with MemoryError set. */
static inline Py_ssize_t kt_row(KeyTable *T, double key) {
    uint64_t u = key_bits(key);
    uint32_t h = kt_hash(u, T->mask);
    for (;;) {
        KeySlot *e = &T->slot[h];
        if (e->row && e->bits == u) return e->row - 1;
        if (!e->row) break;
        h = (h + 1) & T->mask;
    }
    if (T->d == T->cap) {
        if (T->cap == T->limit) return -1;
        if (kt_grow(T, 2 * T->cap < T->limit ? 2 * T->cap : T->limit) < 0) return -2;
        h = kt_hash(u, T->mask);
        while (T->slot[h].row) h = (h + 1) & T->mask;
    }
    Py_ssize_t i = T->d++;
    T->slot[h].bits = u; T->slot[h].row = i + 1;
    KeyRow *r = &T->row[i];
    r->key = key; r->n[0] = r->n[1] = r->n[2] = r->n[3] = 0; r->wt = 0;
    return i;
}

/* Count one event of kind c (see KeyRow.n) at key, weight w. Returns 0, 1 when the table is
   full (nothing counted), -1 with MemoryError set. */
static inline int kt_add(KeyTable *T, double key, int c, double w) {
    Py_ssize_t i = kt_row(T, key);
    if (i < 0) return i == -1 ? 1 : -1;
    KeyRow *r = &T->row[i];
    r->n[c]++;
    if (w != 1.0 || (r->wt >> c & 1)) {
        if (!T->sum && !(T->sum = PyMem_Malloc((size_t)T->cap * sizeof *T->sum))) { PyErr_NoMemory(); return -1; }
        double *sm = T->sum[i];
        if (!(r->wt >> c & 1)) { sm[c] = (double)(r->n[c] - 1); sm[4 + c] = 0.0; r->wt |= 1u << c; }
        dd_add(&sm[c], &sm[4 + c], w);
    }
    return 0;
}

/* Row i's summed weight of kind c: hi and lo parts. */
static inline void kt_weight(const KeyTable *T, Py_ssize_t i, int c, double *hi, double *lo) {
    const KeyRow *r = &T->row[i];
    if (r->wt >> c & 1) { *hi = T->sum[i][c]; *lo = T->sum[i][4 + c]; }
    else { *hi = (double)r->n[c]; *lo = 0.0; }
}

/* The rows' keys in ascending order (order[0..d)). Returns 0, or -1 with MemoryError set. */
static int kt_order(const KeyTable *T, uint32_t *order) {
    double *keys = PyMem_Malloc((size_t)(T->d ? T->d : 1) * sizeof(double));
    if (!keys) { PyErr_NoMemory(); return -1; }
    for (Py_ssize_t i = 0; i < T->d; i++) keys[i] = T->row[i].key;
    int rc = radix_order(keys, T->d, order);
    PyMem_Free(keys);
    return rc;
}

/* Count the batch into T: the added events s, y, w [q0, q1) (w NULL: every weight 1), then the
   removal of the e_old oldest ring records (cancelled ones skipped). Returns 0 when counted, 1
   when the batch has too many distinct keys (more than AGG_MAX, no repeat among the first
   AGG_FIRST events, or more than 15/16 of the first `probe` distinct; T part filled), -1 with
   MemoryError set. */
static int kt_count(KeyTable *T, CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t q0,
                    Py_ssize_t q1, Py_ssize_t e_old, Py_ssize_t probe) {
    Py_ssize_t seen = 0, probe_keys = probe - probe / 16;
    if (!w) { /* every weight 1: counts only */
        for (Py_ssize_t q = q0; q < q1; q++) {
            Py_ssize_t i = kt_row(T, s[q]);
            if (i < 0) return i == -1 ? 1 : -1;
            T->row[i].n[y[q] ? 0 : 1]++;
            if (++seen <= probe && (seen == AGG_FIRST ? T->d == AGG_FIRST : seen == probe && T->d > probe_keys)) return 1;
        }
    } else {
        for (Py_ssize_t q = q0; q < q1; q++) {
            int rc = kt_add(T, s[q], y[q] ? 0 : 1, w[q]);
            if (rc) return rc;
            if (++seen <= probe && (seen == AGG_FIRST ? T->d == AGG_FIRST : seen == probe && T->d > probe_keys)) return 1;
        }
    }
    Py_ssize_t j = t->qhead, left = e_old; /* the ring's oldest e_old records: up to two runs */
    while (left > 0) {
        Py_ssize_t run = t->qcap - j < left ? t->qcap - j : left;
        if (t->plain) { /* every weight held is 1 */
            for (Py_ssize_t u = j; u < j + run; u++) {
                uint8_t yy = t->qy[u];
                if (yy == CANCELLED) continue;
                Py_ssize_t i = kt_row(T, t->qs[u]);
                if (i < 0) return i == -1 ? 1 : -1;
                T->row[i].n[yy ? 2 : 3]++;
                if (++seen <= probe && (seen == AGG_FIRST ? T->d == AGG_FIRST : seen == probe && T->d > probe_keys)) return 1;
            }
        } else {
            for (Py_ssize_t u = j; u < j + run; u++) {
                uint8_t yy = t->qy[u];
                if (yy == CANCELLED) continue;
                int rc = kt_add(T, t->qs[u], yy ? 2 : 3, t->qw[u]);
                if (rc) return rc;
                if (++seen <= probe && (seen == AGG_FIRST ? T->d == AGG_FIRST : seen == probe && T->d > probe_keys)) return 1;
            }
        }
        left -= run;
        j = 0;
    }
    return 0;
}

/* The common case of a window over few scores: a plain tree (every weight 1), a batch of unit
   weights, and every key of the batch held before and after it. Each key's counts are then
   changed in place, in one walk over the leaves in key order (after one that checks), and
   only the changed leaves and their ancestors are marked stale: no rows, no rebuild (paired
   A/Bs, 1,001 scores in a window of 10**6: 0.86 of the time of the rows path). order: T's rows
   in ascending key order. Returns 1 when done, 0 when not applicable (nothing changed). */
static int counts_in_place(CTree *t, const KeyTable *T, const uint32_t *order) {
    Py_ssize_t d = T->d;
    if (!t->plain || T->sum || !d || d > t->n_keys) return 0;
    for (int pass = 0; pass < 2; pass++) { /* 0: check, 1: write */
        Walk wk;
        int32_t leaf = walk_first(&wk, t), pos = 0;
        int touched = 0;
        for (Py_ssize_t j = 0; j < d; j++) {
            const KeyRow *r = &T->row[order[j]];
            double key = r->key;
            Leaf *L = &t->leaves[leaf];
            for (;;) {
                while (pos < L->n && L->key[pos] < key) pos++;
                if (pos < L->n) break;
                if (touched) { /* the leaf just left changed: stale, with its ancestors */
                    for (int l = wk.depth - 1; l >= 0; l--) {
                        Inner *N = &t->inners[wk.stack_node[l]];
                        uint64_t bit = BIT(wk.stack_idx[l]);
                        if (N->mask & bit) break;
                        N->mask |= bit;
                    }
                    touched = 0;
                }
                if ((leaf = walk_next(&wk)) == NIL) return 0; /* (only while checking) */
                L = &t->leaves[leaf];
                pos = 0;
            }
            int64_t n1 = (int64_t)L->c1[pos] + r->n[0] - r->n[2], n0 = (int64_t)L->c0[pos] + r->n[1] - r->n[3];
            if (!pass) {
                if (L->key[pos] != key || n1 < 0 || n0 < 0 || n1 + n0 == 0 || n1 > UINT32_MAX || n0 > UINT32_MAX)
                    return 0;
            } else {
                set_counts(L, pos, (uint32_t)n1, (uint32_t)n0);
                touched = 1;
            }
        }
        if (touched)
            for (int l = wk.depth - 1; l >= 0; l--) {
                Inner *N = &t->inners[wk.stack_node[l]];
                uint64_t bit = BIT(wk.stack_idx[l]);
                if (N->mask & bit) break;
                N->mask |= bit;
            }
    }
    t->root_dirty = 1;
    t->version++;
    return 1;
}

/* Apply a batch by key when it repeats keys enough (see above): the added events s, y, w
   [q0, q1) (w NULL: every weight 1) and the removal of the e_old oldest ring records (the ring
   itself is the caller's). Returns 1 when applied, 0 when the batch was left alone (too few
   events or too many distinct keys: sort it instead; nothing changed), -1 with an exception
   set (as apply_sorted_impl raises). */
static int apply_keyed(CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t q0, Py_ssize_t q1,
                       Py_ssize_t e_old) {
    Py_ssize_t m = (q1 - q0) + e_old;
    if (m < AGG_MIN) return 0;
    KeyTable T;
    if (kt_init(&T, m < AGG_MAX ? m : AGG_MAX) < 0) return -1;
    int rc = kt_count(&T, t, s, y, w, q0, q1, e_old, AGG_PROBE);
    if (rc || T.d > m / 2) { kt_free(&T); return rc < 0 ? -1 : 0; } /* (more keys than half the changes: sorted) */
    Py_ssize_t d = T.d, cap = 4 * d;
    uint32_t *order = PyMem_Malloc((size_t)(d ? d : 1) * sizeof(uint32_t));
    double *buf = PyMem_Malloc((size_t)(cap ? cap : 1) * 5 * sizeof(double));
    rc = -1;
    if (!order || !buf) { PyErr_NoMemory(); goto out; }
    if (kt_order(&T, order) < 0) goto out;
    if (counts_in_place(t, &T, order)) {
        rc = 1;
        keyed_batches++;
        goto out;
    }
    double *k = buf, *a1 = buf + cap, *a0 = buf + 2 * cap, *d1 = buf + 3 * cap, *d0 = buf + 4 * cap;
    Py_ssize_t o = 0;
    for (Py_ssize_t j = 0; j < d; j++) {
        Py_ssize_t i = order[j];
        const KeyRow *r = &T.row[i];
        for (int rem = 0; rem < 2; rem++) { /* its additions, then its removals */
            int c1 = 2 * rem, c0 = 2 * rem + 1;
            if (!(r->n[c1] | r->n[c0])) continue;
            double g = rem ? -1.0 : 1.0, h1, l1, h0, l0;
            kt_weight(&T, i, c1, &h1, &l1);
            kt_weight(&T, i, c0, &h0, &l0);
            k[o] = r->key; a1[o] = g * h1; a0[o] = g * h0; d1[o] = g * r->n[c1]; d0[o] = g * r->n[c0]; o++;
            if (l1 != 0.0 || l0 != 0.0) { /* the low parts: weight only */
                k[o] = r->key; a1[o] = g * l1; a0[o] = g * l0; d1[o] = 0.0; d0[o] = 0.0; o++;
            }
        }
    }
    rc = apply_sorted_impl(t, k, a1, a0, d1, d0, o, 1) < 0 ? -1 : 1;
    keyed_batches += rc == 1;
out:
    kt_free(&T);
    PyMem_Free(order); PyMem_Free(buf);
    return rc;
}

/* ---- a batch that replaces the whole window */

static inline double unsort_bits(uint64_t u) {
    u = (u >> 63) ? u & ~((uint64_t)1 << 63) : ~u;
    double d;
    memcpy(&d, &u, 8);
    return d;
}

/* One stable LSD pass on the 11-bit digit at bit sh of the values src -> dst (skipped when
   every value has the same digit); h is the digit's histogram, turned into offsets here. */
static void values_pass(int sh, uint32_t *h, Py_ssize_t m, uint64_t **src, uint64_t **dst) {
    if (h[((*src)[0] >> sh) & 2047] == (uint32_t)m) return;
    uint32_t o = 0;
    for (int d = 0; d < 2048; d++) { uint32_t c = h[d]; h[d] = o; o += c; }
    const uint64_t *a = *src;
    uint64_t *b = *dst;
    for (Py_ssize_t i = 0; i < m; i++) { uint64_t v = a[i]; b[h[(v >> sh) & 2047]++] = v; }
    uint64_t *x = *src; *src = *dst; *dst = x;
}

/* One stable pass on the 8-bit digit at bit sh of the c values src -> dst (a bucket in cache). */
static void values_pass8(int sh, const uint64_t *src, uint64_t *dst, Py_ssize_t c) {
    uint32_t h[256] = {0};
    for (Py_ssize_t i = 0; i < c; i++) h[(src[i] >> sh) & 255]++;
    uint32_t o = 0;
    for (int d = 0; d < 256; d++) { uint32_t k = h[d]; h[d] = o; o += k; }
    for (Py_ssize_t i = 0; i < c; i++) { uint64_t v = src[i]; dst[h[(v >> sh) & 255]++] = v; }
}

/* From this many values on, radix_values sorts most significant digit first (paired A/Bs of
   a batch that replaces a window of 10**6: 0.82 of the time of two LSD passes; at 10**5, where
   the LSD passes run in cache, the same time with 2**18 and 1.24x with 2**16). */
#define RADIX_MSD (1 << 18)

/* Sort m values (sort_bits) ascending: a radix sort on the 22 bits below the highest bit in
   which the values differ (two LSD passes of 11 bits; from RADIX_MSD values on, one pass on the
   top 11 bits into buckets and then each bucket, in cache, on the 16 bits below), then an
   insertion pass for the values that share those bits (few, unless they crowd: when that pass
   has moved more than 2m, every digit is sorted instead, so O(m) whatever the values). Values
   only, no positions carried (radix_order carries them). tmp: room for m values. Returns the
   array that holds the result (a or tmp), or NULL with MemoryError set. */
static uint64_t *radix_values(uint64_t *a, uint64_t *tmp, Py_ssize_t m) {
    if (m <= 32) {
        for (Py_ssize_t i = 1; i < m; i++) {
            uint64_t v = a[i];
            Py_ssize_t j = i;
            while (j > 0 && a[j - 1] > v) { a[j] = a[j - 1]; j--; }
            a[j] = v;
        }
        return a;
    }
    uint64_t differ = 0;
    for (Py_ssize_t i = 1; i < m; i++) differ |= a[i] ^ a[0];
    if (!differ) return a;
    int hb = 63 - __builtin_clzll(differ);
    uint32_t hist[2][2048]; /* (on the stack: a calloc of all six digits' cost more than a pass at 10**4) */
    memset(hist, 0, sizeof hist);
    uint64_t *src = a, *dst = tmp;
    int lo;
    if (m < RADIX_MSD) { /* two LSD passes (22 bits) */
        lo = hb + 1 - 22;
        if (lo < 0) lo = 0;
        int nd = 0;
        for (int sh = lo; sh <= hb; sh += 11) nd++;
        for (Py_ssize_t i = 0; i < m; i++) {
            uint64_t v = a[i];
            for (int g = 0; g < nd; g++) hist[g][(v >> (lo + 11 * g)) & 2047]++;
        }
        for (int g = 0; g < nd; g++) values_pass(lo + 11 * g, hist[g], m, &src, &dst);
    } else { /* one pass on the top 11 bits, then each bucket in cache on the 16 bits below */
        int sh0 = hb - 10 > 0 ? hb - 10 : 0;
        lo = sh0 - 16 > 0 ? sh0 - 16 : 0;
        uint32_t *end = hist[0], *start = hist[1];
        for (Py_ssize_t i = 0; i < m; i++) end[(a[i] >> sh0) & 2047]++;
        uint32_t o = 0;
        for (int d = 0; d < 2048; d++) { uint32_t c = end[d]; start[d] = end[d] = o; o += c; }
        for (Py_ssize_t i = 0; i < m; i++) { uint64_t v = a[i]; tmp[end[(v >> sh0) & 2047]++] = v; }
        for (int d = 0; d < 2048 && sh0; d++) {
            Py_ssize_t b = start[d], c = (Py_ssize_t)end[d] - b;
            if (c <= 32) continue; /* (the insertion pass below orders it) */
            if (c <= 1024) { /* one 8-bit digit, back in place */
                values_pass8(sh0 - 8 > 0 ? sh0 - 8 : 0, tmp + b, a + b, c);
                memcpy(tmp + b, a + b, (size_t)c * sizeof(uint64_t));
            } else { /* two */
                values_pass8(lo, tmp + b, a + b, c);
                values_pass8(lo + 8, a + b, tmp + b, c);
            }
        }
        src = tmp; dst = a;
    }
    Py_ssize_t moves = 0, budget = 2 * m;
    int done = 1;
    for (Py_ssize_t i = 1; lo && i < m && done; i++) {
        uint64_t v = src[i];
        if (src[i - 1] <= v) continue;
        Py_ssize_t j = i;
        while (j > 0 && src[j - 1] > v) { src[j] = src[j - 1]; j--; }
        src[j] = v;
        moves += i - j;
        if (moves > budget) done = 0;
    }
    if (!done) { /* crowded values: every digit */
        uint32_t (*all)[2048] = PyMem_Calloc(6, sizeof *all);
        if (!all) { PyErr_NoMemory(); return NULL; }
        for (Py_ssize_t i = 0; i < m; i++)
            for (int p = 0; p < 6; p++) all[p][(src[i] >> (11 * p)) & 2047]++;
        for (int p = 0; p < 6; p++) values_pass(11 * p, all[p], m, &src, &dst);
        PyMem_Free(all);
    }
    return src;
}

/* The zero score a rebuild keeps: the one the tree held (tzero; 1.0 when it held none), else
   the first of the batch's s[q0, q1) to arrive (the batch holds one). */
static double zero_of(const double *s, Py_ssize_t q0, Py_ssize_t q1, double tzero) {
    if (tzero != 1.0) return tzero;
    for (Py_ssize_t q = q0; q < q1; q++)
        if (s[q] == 0.0) return s[q];
    return 0.0;
}

/* A count window's batch at least as long as the window expires every record the ring holds:
   the tree then holds exactly the batch's kept events s, y, w [q0, q1) (w NULL: every weight
   1), and is built from them (O(m) once they are ordered by key: straight into the leaves, or
   through build_from) instead of being changed by the removal of every held event and the
   addition of the new ones. Each key's
   weights are summed from zero with dd_add, as a fresh tree fed those events holds them
   (history independence: on the exactness condition, the rows of any other path). The keys
   are ordered by hashing when they repeat (as apply_keyed counts them), else by sorting: their
   values alone when every weight is 1 (positives apart, to count them), their positions when
   the weights must be summed in arrival order. A zero score keeps the representation the tree
   held (0.0 or -0.0) when it held a zero score, as an update does; else the first to arrive.
   Returns 1 when done, 0 when not applicable (the tree holds events the ring does not: nothing
   changed), -1 with MemoryError set (nothing changed; no count can pass 2**32 - 1, a batch
   having at most that many events). The ring is the caller's. */
static int replace_all(CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t q0,
                       Py_ssize_t q1) {
    /* every held event is a live ring record (a count window's tree holds nothing else: checked) */
    clean(t);
    double held = t->n_keys ? t->top.c1 + t->top.c0 : 0.0;
    Py_ssize_t live = 0, j = t->qhead, left = t->qsize;
    while (left > 0) {
        Py_ssize_t run = t->qcap - j < left ? t->qcap - j : left;
        for (Py_ssize_t u = j; u < j + run; u++) live += t->qy[u] != CANCELLED;
        left -= run;
        j = 0;
    }
    if (held != (double)live) return 0;
    double tzero = 1.0; /* the zero score the tree holds (1.0: none) */
    if (t->n_keys) {
        const Leaf *L = &t->leaves[descend(t, 0.0)];
        int32_t pos = leaf_pos(L, 0.0);
        if (pos < L->n && L->key[pos] == 0.0) tzero = L->key[pos];
    }
    Py_ssize_t m = q1 - q0; /* (<= UINT32_MAX: no count can overflow) */
    int rc = -1, unit = 1;
    KeyTable T = {0};
    uint32_t *order = NULL;
    double *buf = NULL;
    uint64_t *vals = NULL;
    for (Py_ssize_t q = q0; w && q < q1 && unit; q++) unit = w[q] == 1.0;
    int keyed = 0;
    if (m >= AGG_MIN) {
        if (kt_init(&T, m < AGG_MAX ? m : AGG_MAX) < 0) goto out;
        int c = kt_count(&T, t, s, y, w, q0, q1, 0, AGG_PROBE_REBUILD);
        if (c < 0) goto out;
        keyed = c == 0 && T.d <= m / 2;
        if (!keyed) kt_free(&T);
    }
    if (!keyed && unit) {
        /* the values of the positives' keys and of the negatives' keys, sorted apart, then
           merged straight into the new leaves: a key's run in each list is its count of that
           class. The positives fill vals[0, m1) upwards, the negatives vals[m1 + 1, m + 1)
           downwards (no branch on the label: each event is written to both lists' next slots,
           and the other list's write is overwritten later or lands on the spare slot m1);
           scratch from m + 1 on. */
        vals = PyMem_Malloc((size_t)(2 * m + 1) * sizeof(uint64_t));
        if (!vals) { PyErr_NoMemory(); goto out; }
        Py_ssize_t g1 = 0, g0 = 0;
        for (Py_ssize_t q = q0; q < q1; q++) {
            uint64_t b = sort_bits(s[q]);
            Py_ssize_t p = y[q] != 0;
            vals[g1] = b; vals[m - g0] = b;
            g1 += p; g0 += 1 - p;
        }
        Py_ssize_t n1 = g1, n0 = g0;
        uint64_t *sp = radix_values(vals, vals + m + 1, n1);
        uint64_t *sn = sp ? radix_values(vals + n1 + 1, vals + m + 1 + n1, n0) : NULL;
        if (!sp || !sn) goto out;
        Builder B;
        if (build_begin(&B, t, m, 1, 0) < 0) goto out;
        /* (build_key inlined by hand: the leaf at hand and its count in registers; a plain
           tree's rows are a key and two counts) */
        Leaf *L = NULL;
        int32_t ln = FILL;
        Py_ssize_t i1 = 0, i0 = 0, nkeys = 0;
#define EMIT(KEY, C1, C0) do {                                                                  \
            if (ln == FILL) {                                                                  \
                if (L) { L->n = ln; leaf_agg(t, L, &B.agg[B.nl - 1]); }                        \
                int32_t li_ = new_leaf(t);                                                     \
                L = &t->leaves[li_];                                                           \
                B.level[B.nl] = li_; B.lsep[B.nl] = (KEY); B.nl++;                             \
                ln = 0;                                                                        \
            }                                                                                  \
            L->key[ln] = (KEY); L->c1[ln] = (C1); L->c0[ln] = (C0); ln++; nkeys++;             \
        } while (0)
        for (;;) { /* the negatives' keys in order, each after the positives' keys below it */
            uint64_t v = i0 < n0 ? sn[i0] : ~(uint64_t)0;
            while (i1 < n1 && sp[i1] < v) { /* positives only */
                uint64_t u = sp[i1];
                Py_ssize_t a1 = i1;
                while (++i1 < n1 && sp[i1] == u) {}
                double key = unsort_bits(u);
                if (key == 0.0) key = zero_of(s, q0, q1, tzero);
                EMIT(key, (uint32_t)(i1 - a1), 0);
            }
            if (i0 == n0) break;
            Py_ssize_t a0 = i0, a1 = i1;
            while (++i0 < n0 && sn[i0] == v) {}
            while (i1 < n1 && sp[i1] == v) i1++;
            double key = unsort_bits(v);
            if (key == 0.0) key = zero_of(s, q0, q1, tzero);
            EMIT(key, (uint32_t)(i1 - a1), (uint32_t)(i0 - a0));
        }
#undef EMIT
        if (L) L->n = ln;
        B.L = L; B.n = nkeys;
        build_end(&B);
    } else {
        /* rows (key, weights hi and lo, counts) in key order, then built */
        Py_ssize_t cap = keyed ? T.d : m, nk = 0;
        buf = PyMem_Malloc((size_t)(cap ? cap : 1) * 7 * sizeof(double));
        order = PyMem_Malloc((size_t)(cap ? cap : 1) * sizeof(uint32_t));
        if (!buf || !order) { PyErr_NoMemory(); goto out; }
        double *K = buf, *H1 = buf + cap, *L1 = buf + 2 * cap, *H0 = buf + 3 * cap, *L0 = buf + 4 * cap,
               *C1 = buf + 5 * cap, *C0 = buf + 6 * cap;
        if (keyed) {
            if (kt_order(&T, order) < 0) goto out;
            for (Py_ssize_t g = 0; g < T.d; g++) {
                Py_ssize_t i = order[g];
                K[nk] = T.row[i].key;
                kt_weight(&T, i, 0, &H1[nk], &L1[nk]);
                kt_weight(&T, i, 1, &H0[nk], &L0[nk]);
                C1[nk] = T.row[i].n[0]; C0[nk] = T.row[i].n[1];
                nk++;
            }
        } else {
            if (radix_order(s + q0, m, order) < 0) goto out;
            for (Py_ssize_t g = 0; g < m;) { /* runs of equal keys, in arrival order within a run */
                double key = s[q0 + order[g]], h1 = 0.0, l1 = 0.0, h0 = 0.0, l0 = 0.0, c1 = 0.0, c0 = 0.0;
                for (; g < m && s[q0 + order[g]] == key; g++) {
                    Py_ssize_t q = q0 + order[g];
                    if (y[q]) { c1 += 1.0; dd_add(&h1, &l1, w[q]); }
                    else { c0 += 1.0; dd_add(&h0, &l0, w[q]); }
                }
                K[nk] = key; H1[nk] = h1; L1[nk] = l1; H0[nk] = h0; L0[nk] = l0; C1[nk] = c1; C0[nk] = c0;
                nk++;
            }
        }
        for (Py_ssize_t g = 0; g < nk; g++)
            if (K[g] == 0.0 && tzero != 1.0) K[g] = tzero; /* a zero the tree holds keeps its sign */
        if (build_from(t, K, H1, L1, H0, L0, C1, C0, nk) < 0) goto out;
    }
    t->version++;
    t->sgen++;
    replaced_batches++;
    rc = 1;
out:
    kt_free(&T);
    PyMem_Free(order); PyMem_Free(buf); PyMem_Free(vals);
    return rc;
}

/* Buffers (float64 s, uint8 y, float64 w or None: every weight 1) of one length m, for the
   batch entry points; b[2].buf is NULL for None. */
static int event_buffers(PyObject *args, Py_ssize_t want, Py_buffer *b, Py_ssize_t *m, const char *sig) {
    const char *fmt[3] = {"d", "B", "d"};
    if (PyTuple_GET_SIZE(args) != want) { PyErr_SetString(PyExc_TypeError, sig); return -1; }
    int nb = PyTuple_GET_ITEM(args, 2) == Py_None ? 2 : 3;
    b[2].buf = NULL; b[2].obj = NULL;
    for (int g = 0; g < nb; g++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, g), &b[g], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            for (int q = 0; q < g; q++) PyBuffer_Release(&b[q]);
            return -1;
        }
        if (strcmp(b[g].format, fmt[g]) != 0 || b[g].len / b[g].itemsize != b[0].len / 8) {
            for (int q = 0; q <= g; q++) PyBuffer_Release(&b[q]);
            PyErr_Format(PyExc_TypeError, "%s: float64 s, uint8 y (0/1), float64 w (or None) of one length", sig);
            return -1;
        }
    }
    *m = b[0].len / 8;
    const uint8_t *y = b[1].buf;
    const double *s = b[0].buf, *w = b[2].buf;
    int bad = 0;
    for (Py_ssize_t q = 0; q < *m; q++) bad |= (y[q] > 1) | !isfinite(s[q]);
    for (Py_ssize_t q = 0; w && q < *m; q++) bad |= !(w[q] > 0.0) | !isfinite(w[q]);
    if (bad) {
        for (int g = 0; g < 3; g++) PyBuffer_Release(&b[g]);
        PyErr_Format(PyExc_ValueError, "%s: labels must be 0 or 1, scores finite, weights finite and > 0", sig);
        return -1;
    }
    return 0;
}

/* add_many(s, y, w): add m events (validated by the caller), in any order. */
static PyObject *CTree_add_many(CTree *self, PyObject *args) {
    Py_buffer b[3];
    Py_ssize_t m;
    if (refuse_broken(self) < 0) return NULL;
    if (event_buffers(args, 3, b, &m, "add_many(s, y, w)") < 0) return NULL;
    int rc = -1;
    if (m > (Py_ssize_t)UINT32_MAX) PyErr_SetString(PyExc_MemoryError, "batch too large");
    else rc = apply_keyed(self, b[0].buf, b[1].buf, b[2].buf, 0, m, 0);
    rc = rc < 0 ? -1 : rc ? 0 : apply_events(self, b[0].buf, b[1].buf, b[2].buf, NULL, m);
    if (rc == 0)
        for (Py_ssize_t q = 0; q < m && self->pr_state; q++) pr_push(self, ((const double *)b[0].buf)[q]);
    else
        pr_stop(self); /* (a batch that failed part way) */
    for (int g = 0; g < 3; g++) PyBuffer_Release(&b[g]);
    if (rc < 0) return NULL;
    Py_RETURN_NONE;
}

/* The tree's change of a count window's batch, event by event (sorted, then applied): the new
   events s, y, w [q0, q1) (an event added and expired within the batch changes nothing) and
   the removal of the e_old oldest ring records (cancelled ones skipped). The ring is the
   caller's. Returns 0, or -1 with an exception set. */
static int apply_window_events(CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t q0,
                               Py_ssize_t q1, Py_ssize_t e_old) {
    Py_ssize_t cap = (q1 - q0) + e_old;
    double *ev = PyMem_Malloc((size_t)(cap ? cap : 1) * (2 * sizeof(double) + 2));
    if (!ev) { PyErr_NoMemory(); return -1; }
    double *ek = ev, *ew = ev + cap;
    uint8_t *ey = (uint8_t *)(ev + 2 * cap);
    int8_t *es = (int8_t *)(ey + cap);
    Py_ssize_t c = 0;
    for (Py_ssize_t q = q0; q < q1; q++) { ek[c] = s[q]; ew[c] = w ? w[q] : 1.0; ey[c] = y[q]; es[c] = 1; c++; }
    for (Py_ssize_t q = 0; q < e_old; q++) {
        Py_ssize_t j = (t->qhead + q) % t->qcap;
        if (t->qy[j] == CANCELLED) continue;
        ek[c] = t->qs[j]; ew[c] = t->qw[j]; ey[c] = t->qy[j]; es[c] = -1; c++;
    }
    int rc = apply_events(t, ek, ey, ew, es, c);
    PyMem_Free(ev);
    return rc;
}

/* window_push_many(s, y, w, limit): update_many of a count window in one call: the events
   are queued and the oldest beyond limit expire, as window_push would do one by one; the
   tree takes the net change: rebuilt from the batch when every queued record expires
   (replace_all), else by key when the batch repeats few keys (apply_keyed), else as one
   sorted batch of per-event changes (apply_window_events). */
static PyObject *CTree_window_push_many(CTree *self, PyObject *args) {
    Py_buffer b[3];
    Py_ssize_t m;
    if (self->ring != 1) { PyErr_SetString(PyExc_TypeError, "window_push_many needs a count ring"); return NULL; }
    if (refuse_broken(self) < 0) return NULL;
    if (event_buffers(args, 4, b, &m, "window_push_many(s, y, w, limit)") < 0) return NULL;
    PyObject *res = NULL;
    Py_ssize_t limit = PyLong_AsSsize_t(PyTuple_GET_ITEM(args, 3));
    if (limit == -1 && PyErr_Occurred()) goto done;
    if (limit < 1) { PyErr_SetString(PyExc_ValueError, "limit must be >= 1"); goto done; }
    if (m > (Py_ssize_t)UINT32_MAX) { PyErr_SetString(PyExc_MemoryError, "batch too large"); goto done; }
    {
        const double *s = b[0].buf, *w = b[2].buf;
        const uint8_t *y = b[1].buf;
        Py_ssize_t total = self->qsize + m, k = total > limit ? total - limit : 0;
        Py_ssize_t e_old = k < self->qsize ? k : self->qsize, e_new = k - e_old; /* expired: old records, new events */
        Py_ssize_t keep = total - k;
        if (ring_grow(self, keep > self->qsize ? keep : self->qsize, limit + 1) < 0) goto done;
        int how = e_old == self->qsize ? replace_all(self, s, y, w, e_new, m) : 0;
        if (how == 0) how = apply_keyed(self, s, y, w, e_new, m, e_old);
        if (how == 0) how = apply_window_events(self, s, y, w, e_new, m, e_old);
        if (how < 0) goto done;
        /* the ring: drop the expired records, queue the new events that stay */
        self->qhead = self->qcap ? (self->qhead + e_old) % self->qcap : 0;
        self->qsize -= e_old;
        ring_put_many(self, s + e_new, y + e_new, w ? w + e_new : NULL, m - e_new);
    }
    res = Py_None; Py_INCREF(res);
done:
    for (int g = 0; g < 3; g++) PyBuffer_Release(&b[g]);
    return res;
}

/* ---- queries on part of the key range ---- */

/* totals_upto(key) -> (w1, w0, c1, c0) summed over keys <= key. O(log n). */
static PyObject *CTree_totals_upto(CTree *self, PyObject *arg) {
    double key = PyFloat_AsDouble(arg);
    if (key == -1.0 && PyErr_Occurred()) return NULL;
    clean(self);
    double acc[4] = {0, 0, 0, 0};
    int32_t node = self->root;
    for (int l = 0; l < self->height; l++) {
        Inner *N = &self->inners[node];
        int32_t i = child_index(N, key);
        for (int32_t j = 0; j < i; j++) {
            acc[0] += N->agg[j].w1; acc[1] += N->agg[j].w0; acc[2] += N->agg[j].c1; acc[3] += N->agg[j].c0;
        }
        node = N->child[i];
    }
    Leaf *L = &self->leaves[node];
    for (int32_t i = 0; i < L->n && L->key[i] <= key; i++) {
        uint32_t c1, c0;
        double h1, h0;
        get_counts(L, i, &c1, &c0);
        get_hi(self, L, i, &h1, &h0);
        acc[0] += h1; acc[1] += h0; acc[2] += c1; acc[3] += c0;
    }
    return Py_BuildValue("(dddd)", acc[0], acc[1], acc[2], acc[3]);
}

/* min over keys k in [lo, hi) of the prefix sum up to and including k; the subtree
   `node` (at `level`) holds keys in [L, R) and starts after prefix acc. Returns the
   prefix after the subtree. Recursion depth <= height. */
static double range_min(CTree *t, int32_t node, int level, double acc, double L, double R, double lo, double hi,
                        double *best, double *bk) {
    if (level == 0) {
        Leaf *F = &t->leaves[node];
        double a = t->a, b = t->b;
        for (int32_t i = 0; i < F->n; i++) {
            double h1, h0;
            get_hi(t, F, i, &h1, &h0);
            acc += a * h1 - b * h0;
            if (F->key[i] >= lo && F->key[i] < hi && acc < *best) { *best = acc; *bk = F->key[i]; }
        }
        return acc;
    }
    Inner *N = &t->inners[node];
    for (int32_t i = 0; i < N->n; i++) {
        double cl = i ? N->sep[i] : L, cr = i + 1 < N->n ? N->sep[i + 1] : R;
        const Agg *g = &t->inners[node].agg[i];
        if (cr <= lo || cl >= hi) { acc += g->sum; continue; }
        if (cl >= lo && cr <= hi) {
            double p = acc + g->minp;
            if (p < *best) { *best = p; *bk = g->argk; }
            acc += g->sum;
            continue;
        }
        acc = range_min(t, t->inners[node].child[i], level - 1, acc, cl, cr, lo, hi, best, bk);
    }
    return acc;
}

/* range_min for a range bounded on one side by a rank, in one descent (no kth first, no
   recursion): lower = 1, the keys from the one holding the k-th negative on (max_fpr);
   lower = 0, the keys below the one holding the k-th positive (max_fnr). Candidates are
   compared in key order, ties to the lower key, as range_min does: going down, the ones
   on the left of the path (lower = 0) come before the deeper ones, and the ones on its
   right (lower = 1) after them. O(height * ICAP + LCAP). */
static void rank_min(CTree *t, int lower, double k, double *best, double *bk) {
    double acc = 0.0, cnt = 0.0, a = t->a, b = t->b;
    int32_t node = t->root;
    for (int l = 0; l < t->height; l++) {
        const Inner *N = &t->inners[node];
        int32_t i = 0, n = N->n;
        for (; i < n; i++) {
            const Agg *g = &N->agg[i];
            double c = lower ? g->c0 : g->c1;
            if (cnt + c >= k) break;
            cnt += c;
            if (!lower) {
                double p = acc + g->minp;
                if (p < *best) { *best = p; *bk = g->argk; }
            }
            acc += g->sum;
        }
        if (i == n) return; /* fewer than k: no key in range (lower), or every key (the loop took them) */
        if (lower) { /* the children right of the path: before the deeper keys' candidates in a tie */
            double loc = INFINITY, lk = NAN, r = acc + N->agg[i].sum;
            for (int32_t j = i + 1; j < n; j++) {
                double p = r + N->agg[j].minp;
                if (p < loc) { loc = p; lk = N->agg[j].argk; }
                r += N->agg[j].sum;
            }
            if (!isnan(lk) && loc <= *best) { *best = loc; *bk = lk; }
        }
        node = N->child[i];
    }
    Leaf *L = &t->leaves[node];
    int32_t i = 0, n = L->n;
    for (; i < n; i++) {
        uint32_t c1, c0;
        get_counts(L, i, &c1, &c0);
        if (cnt + (lower ? c0 : c1) >= k) break;
        cnt += lower ? c0 : c1;
        double h1, h0;
        get_hi(t, L, i, &h1, &h0);
        acc += a * h1 - b * h0;
        if (!lower && acc < *best) { *best = acc; *bk = L->key[i]; }
    }
    if (!lower || i == n) return;
    double loc = INFINITY, lk = NAN;
    for (; i < n; i++) {
        double h1, h0;
        get_hi(t, L, i, &h1, &h0);
        acc += a * h1 - b * h0;
        if (acc < loc) { loc = acc; lk = L->key[i]; }
    }
    if (!isnan(lk) && loc <= *best) { *best = loc; *bk = lk; }
}

/* The Neyman-Pearson choice among the held keys (n_keys > 0): the cheapest key from the one
   holding the k0-th negative on (k0 > 0) and, when np1, below the one holding the
   (m1 + 1)-th positive; with k0 = 0 the threshold -inf (the empty prefix, 0) is admissible
   too and wins ties. *best = INFINITY when nothing is admissible. get()'s plain answer when
   it is admissible (read off the root, so the two modes then agree to the bit: the walks
   below sum in another order, and could differ from it at a near-tie of inexact sums); else
   one descent by rank for one bound (rank_min), or the range walk for two. O(log n). Both
   np_get and the Python slow path (np_best) choose here, so they agree to the bit too. */
static double kth(CTree *self, int cls, double k);
static void np_choose(CTree *t, long long k0, int np1, long long m1, double *best, double *key) {
    clean(t);
    if (k0 == 0 && !(t->top.minp < 0.0)) { *best = 0.0; *key = -INFINITY; return; } /* no key below 0 */
    double lo = k0 > 0 ? kth(t, 0, (double)k0) : -INFINITY;
    double hi = np1 ? kth(t, 1, (double)m1 + 1.0) : INFINITY;
    if (t->top.argk >= lo && t->top.argk < hi) { *best = t->top.minp; *key = t->top.argk; return; }
    *best = k0 == 0 ? 0.0 : INFINITY; *key = k0 == 0 ? -INFINITY : NAN;
    if (k0 > 0 && !np1) rank_min(t, 1, (double)k0, best, key);
    else if (k0 == 0 && np1) rank_min(t, 0, (double)m1 + 1.0, best, key);
    else range_min(t, t->root, t->height, 0.0, -INFINITY, INFINITY, lo, hi, best, key);
}

/* np_best(k0, np1, m1) -> (min prefix, key): np_choose (inf, nan when nothing is admissible). */
static PyObject *CTree_np_best(CTree *self, PyObject *args) {
    long long k0, m1;
    int np1;
    double best = INFINITY, key = NAN;
    if (!PyArg_ParseTuple(args, "LpL", &k0, &np1, &m1)) return NULL;
    if (k0 < 0 || m1 < 0) { PyErr_SetString(PyExc_ValueError, "np_best: ranks must be >= 0"); return NULL; }
    if (refuse_broken(self) < 0) return NULL;
    if (self->n_keys) np_choose(self, k0, np1, m1, &best, &key);
    return Py_BuildValue("(dd)", best, key);
}

/* range_best(lo, hi) -> (min prefix, key) over keys in [lo, hi); (inf, nan) when none. O(log n). */
static PyObject *CTree_range_best(CTree *self, PyObject *args) {
    double lo, hi, best = INFINITY, key = NAN;
    if (!PyArg_ParseTuple(args, "dd", &lo, &hi)) return NULL;
    clean(self);
    if (self->n_keys) range_min(self, self->root, self->height, 0.0, -INFINITY, INFINITY, lo, hi, &best, &key);
    return Py_BuildValue("(dd)", best, key);
}

/* The smallest key at which the running count of class cls (1 or 0) reaches k (>= 1);
   inf when it never does. O(log n); the aggregates must be clean. */
static double kth(CTree *self, int cls, double k) {
    double acc = 0.0;
    int32_t node = self->root;
    if (self->n_keys == 0) return INFINITY;
    for (int l = 0; l < self->height; l++) {
        Inner *N = &self->inners[node];
        int32_t i = 0;
        for (; i < N->n; i++) {
            double c = cls ? N->agg[i].c1 : N->agg[i].c0;
            if (acc + c >= k) break;
            acc += c;
        }
        if (i == N->n) return INFINITY;
        node = N->child[i];
    }
    Leaf *L = &self->leaves[node];
    for (int32_t i = 0; i < L->n; i++) {
        uint32_t c1, c0;
        get_counts(L, i, &c1, &c0);
        acc += cls ? c1 : c0;
        if (acc >= k) return L->key[i];
    }
    return INFINITY;
}

/* rank_best(lower, k) -> (min prefix, key): range_best over the keys from the k-th
   negative's on (lower = 1) or below the k-th positive's (lower = 0), in one descent
   (rank_min; tests compare it with range_best). */
static PyObject *CTree_rank_best(CTree *self, PyObject *args) {
    int lower;
    double k, best = INFINITY, key = NAN;
    if (!PyArg_ParseTuple(args, "pd", &lower, &k)) return NULL;
    if (!(k >= 1.0)) { PyErr_SetString(PyExc_ValueError, "rank_best: k must be >= 1"); return NULL; }
    clean(self);
    if (self->n_keys) rank_min(self, lower, k, &best, &key);
    return Py_BuildValue("(dd)", best, key);
}

/* kth_key(cls, k) -> the smallest key at which the running count of class cls (1 or 0)
   reaches k (>= 1); inf when it never does. O(log n). */
static PyObject *CTree_kth_key(CTree *self, PyObject *args) {
    int cls;
    double k;
    if (!PyArg_ParseTuple(args, "id", &cls, &k)) return NULL;
    clean(self);
    return PyFloat_FromDouble(kth(self, cls, k));
}

/* set_np_tables(np0, k0_base, k0 (int64 buffer), np1, m1_base, m1 (int64 buffer)):
   min_count0 for count0 = k0_base + i, max_count1 for count1 = m1_base + i (-1: too few) */
static int copy_table(PyObject *obj, long long **tab, Py_ssize_t *len) {
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return -1;
    if (b.itemsize != 8 || (strcmp(b.format, "q") != 0 && strcmp(b.format, "l") != 0)) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_TypeError, "np tables must be int64 arrays");
        return -1;
    }
    Py_ssize_t n = b.len / 8;
    long long *t = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(long long));
    if (!t) { PyBuffer_Release(&b); PyErr_NoMemory(); return -1; }
    memcpy(t, b.buf, (size_t)n * 8);
    PyBuffer_Release(&b);
    PyMem_Free(*tab);
    *tab = t; *len = n;
    return 0;
}

static PyObject *CTree_set_np_tables(CTree *self, PyObject *args) {
    int np0, np1;
    Py_ssize_t b0, b1;
    PyObject *t0, *t1;
    if (!PyArg_ParseTuple(args, "inOinO", &np0, &b0, &t0, &np1, &b1, &t1)) return NULL;
    if (copy_table(t0, &self->k0_tab, &self->k0_len) < 0 || copy_table(t1, &self->m1_tab, &self->m1_len) < 0)
        return NULL;
    self->np0 = np0; self->np1 = np1; self->k0_base = b0; self->m1_base = b1;
    Py_RETURN_NONE;
}

/* np_get() -> the Neyman-Pearson threshold (None when empty), from the rank tables; when
   the class counts are outside the tables (or nothing is admissible) it calls the Python
   slow path, which refills the tables or raises. O(log n). */
static PyObject *CTree_np_get(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (refuse_broken(self) < 0) return NULL;
    if (self->n_keys == 0) Py_RETURN_NONE;
    if (!self->slow_get) { PyErr_SetString(PyExc_RuntimeError, "np_get before bind()"); return NULL; }
    if (self->busy) goto slow;
    clean(self);
    double c0 = self->top.c0, c1 = self->top.c1;
    long long k0 = 0, m1 = (long long)c1;
    if (self->np0) {
        Py_ssize_t i = (Py_ssize_t)c0 - self->k0_base;
        if (i < 0 || i >= self->k0_len || self->k0_tab[i] < 0) goto slow;
        k0 = self->k0_tab[i];
    }
    if (self->np1) {
        Py_ssize_t i = (Py_ssize_t)c1 - self->m1_base;
        if (i < 0 || i >= self->m1_len || self->m1_tab[i] < 0) goto slow;
        m1 = self->m1_tab[i];
    }
    {
        double best, key;
        np_choose(self, k0, self->np1, m1, &best, &key);
        if (best == INFINITY) goto slow;
        return PyFloat_FromDouble(key);
    }
slow:
    return PyObject_CallNoArgs(self->slow_get);
}

/* ---- ring access from Python ---- */

static PyObject *CTree_q_len(CTree *self, PyObject *Py_UNUSED(ignored)) { return PyLong_FromSsize_t(self->qsize); }

static PyObject *CTree_q_push_many(CTree *self, PyObject *args) {
    /* q_push_many(s, y, w, t): float64, uint8, float64, float64 (t ignored without time) */
    Py_buffer b[4];
    int got = 0;
    PyObject *res = NULL;
    const char *fmt[4] = {"d", "B", "d", "d"};
    if (PyTuple_GET_SIZE(args) != 4) { PyErr_SetString(PyExc_TypeError, "q_push_many(s, y, w, t)"); return NULL; }
    for (; got < 4; got++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(args, got), &b[got], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) goto done;
        if (strcmp(b[got].format, fmt[got]) != 0 || b[got].len / b[got].itemsize != b[0].len / 8) {
            PyBuffer_Release(&b[got]);
            PyErr_SetString(PyExc_TypeError, "q_push_many: float64 s, uint8 y, float64 w, float64 t of one length");
            goto done;
        }
    }
    {
        Py_ssize_t m = b[0].len / 8;
        if (ring_grow(self, self->qsize + m, 0) < 0) goto done;
        double *s = b[0].buf, *w = b[2].buf, *tt = b[3].buf;
        uint8_t *y = b[1].buf;
        for (Py_ssize_t q = 0; q < m; q++) ring_put(self, s[q], y[q], w[q], tt[q]);
    }
    res = Py_None; Py_INCREF(res);
done:
    for (int q = 0; q < got; q++) PyBuffer_Release(&b[q]);
    return res;
}

/* q_arrays(lo, hi) -> bytes (s, w, t as float64 rows) and bytes (y) of records lo..hi-1, oldest first */
static PyObject *CTree_q_arrays(CTree *self, PyObject *args) {
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "nn", &lo, &hi)) return NULL;
    if (lo < 0 || hi > self->qsize || lo > hi) { PyErr_SetString(PyExc_IndexError, "q_arrays range"); return NULL; }
    Py_ssize_t m = hi - lo;
    PyObject *f = PyBytes_FromStringAndSize(NULL, 3 * m * (Py_ssize_t)sizeof(double));
    PyObject *yb = PyBytes_FromStringAndSize(NULL, m);
    if (!f || !yb) { Py_XDECREF(f); Py_XDECREF(yb); return NULL; }
    double *o = (double *)PyBytes_AS_STRING(f);
    uint8_t *oy = (uint8_t *)PyBytes_AS_STRING(yb);
    for (Py_ssize_t k = 0; k < m; k++) {
        Py_ssize_t j = (self->qhead + lo + k) % self->qcap;
        o[k] = self->qs[j]; o[m + k] = self->qw[j]; o[2 * m + k] = self->qt ? self->qt[j] : 0.0;
        oy[k] = self->qy[j];
    }
    PyObject *r = Py_BuildValue("(NN)", f, yb);
    return r;
}

/* q_drop(k): forget the k oldest records without touching the tree */
static PyObject *CTree_q_drop(CTree *self, PyObject *arg) {
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k < 0 || k > self->qsize) { PyErr_SetString(PyExc_IndexError, "q_drop count"); return NULL; }
    self->qhead = self->qcap ? (self->qhead + k) % self->qcap : 0;
    self->qsize -= k;
    Py_RETURN_NONE;
}

/* q_count_expired(cutoff) -> number of oldest records with time <= cutoff */
static PyObject *CTree_q_count_expired(CTree *self, PyObject *arg) {
    double cutoff = PyFloat_AsDouble(arg);
    if (cutoff == -1.0 && PyErr_Occurred()) return NULL;
    if (!self->qt) return PyLong_FromLong(0);
    Py_ssize_t lo = 0, hi = self->qsize;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (self->qt[(self->qhead + mid) % self->qcap] <= cutoff) lo = mid + 1; else hi = mid;
    }
    return PyLong_FromSsize_t(lo);
}

static PyObject *CTree_q_oldest_time(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (!self->qsize || !self->qt) Py_RETURN_NONE;
    return PyFloat_FromDouble(self->qt[self->qhead]);
}

/* q_find(s, y, w) -> position (0 = oldest) of the oldest live record equal to it, or -1. O(n). */
static PyObject *CTree_q_find(CTree *self, PyObject *args) {
    double s, w;
    int y;
    if (!PyArg_ParseTuple(args, "did", &s, &y, &w)) return NULL;
    for (Py_ssize_t k = 0; k < self->qsize; k++) {
        Py_ssize_t j = (self->qhead + k) % self->qcap;
        if (self->qs[j] == s && self->qy[j] == y && self->qw[j] == w) return PyLong_FromSsize_t(k);
    }
    return PyLong_FromLong(-1);
}

static PyObject *CTree_q_time_at(CTree *self, PyObject *arg) {
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k < 0 || k >= self->qsize || !self->qt) { PyErr_SetString(PyExc_IndexError, "q_time_at"); return NULL; }
    return PyFloat_FromDouble(self->qt[(self->qhead + k) % self->qcap]);
}

static PyObject *CTree_q_cancel(CTree *self, PyObject *arg) {
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k < 0 || k >= self->qsize) { PyErr_SetString(PyExc_IndexError, "q_cancel position"); return NULL; }
    self->qy[(self->qhead + k) % self->qcap] = CANCELLED;
    Py_RETURN_NONE;
}

static PyObject *CTree_get_n_keys(CTree *self, void *closure) { return PyLong_FromSsize_t(self->n_keys); }
static PyObject *CTree_get_height(CTree *self, void *closure) { return PyLong_FromLong(self->height); }
static PyObject *CTree_get_ring(CTree *self, void *closure) { return PyLong_FromLong(self->ring); }
static PyObject *CTree_get_n_updates(CTree *self, void *closure) { return PyLong_FromLongLong(self->n_updates); }
static PyObject *CTree_get_version(CTree *self, void *closure) { return PyLong_FromUnsignedLongLong(self->version); }
static int CTree_set_n_updates(CTree *self, PyObject *v, void *closure) {
    if (!v) { PyErr_SetString(PyExc_TypeError, "cannot delete n_updates"); return -1; }
    long long x = PyLong_AsLongLong(v);
    if (x == -1 && PyErr_Occurred()) return -1;
    if (x < 0) { PyErr_SetString(PyExc_ValueError, "n_updates must be >= 0"); return -1; }
    self->n_updates = x;
    return 0;
}

static PyObject *CTree_nbytes(CTree *self, PyObject *Py_UNUSED(ignored)) {
    Py_ssize_t b = (Py_ssize_t)self->lcap * sizeof(Leaf) + (Py_ssize_t)self->icap * sizeof(Inner) +
                   (Py_ssize_t)self->ocap * sizeof(LoBlock) + (Py_ssize_t)self->wcap * sizeof(WeightBlock);
    b += self->qcap * (Py_ssize_t)(2 * sizeof(double) + 1 + (self->qt ? sizeof(double) : 0));
    b += self->pr_cap * (Py_ssize_t)sizeof(double);
    return PyLong_FromSsize_t(b);
}

/* Two aggregates are the same, field by field (NaN argk: both NaN). */
static int agg_equal(const Agg *e, const Agg *g) {
    return e->sum == g->sum && e->minp == g->minp && e->w1 == g->w1 && e->w0 == g->w0 && e->c1 == g->c1 &&
           e->c0 == g->c0 && (e->argk == g->argk || (e->argk != e->argk && g->argk != g->argk));
}

/* check() -> None: verify every structural invariant (tests); raises AssertionError. O(n). */
static int check_node(CTree *t, int32_t node, int level, double lo, double hi, int is_root, Agg *out, Py_ssize_t *keys) {
    if (level == 0) {
        Leaf *L = &t->leaves[node];
        /* sorted input leaves the edge leaves short: at most two leaves below LMIN */
        if (L->n > LCAP || (!is_root && L->n == 0)) return -1;
        if (!is_root && L->n < LMIN) keys[1]++;
        for (int32_t i = 0; i < L->n; i++) {
            if (!(L->key[i] >= lo && L->key[i] < hi)) return -2;
            if (i && !(L->key[i - 1] < L->key[i])) return -3;
            uint32_t c1, c0;
            double h1, h0;
            get_counts(L, i, &c1, &c0);
            get_hi(t, L, i, &h1, &h0);
            if (c1 + (uint64_t)c0 == 0) return -4;
            if ((c1 == 0 && h1 != 0.0) || (c0 == 0 && h0 != 0.0)) return -5;
            if (t->plain) { /* the weights are the counts: no lo parts */
                double l1, l0;
                leaf_lo_get(t, L, i, &l1, &l0);
                if (l1 != 0.0 || l0 != 0.0) return -12;
            }
        }
        keys[0] += L->n;
        Agg g;
        leaf_agg(t, L, &g);
        *out = g;
        return 0;
    }
    Inner *N = &t->inners[node];
    if (!is_root && (N->n < IMIN || N->n > ICAP)) return -6;
    if (is_root && N->n < 2) return -7;
    for (int32_t i = 0; i < N->n; i++) {
        double cl = i ? N->sep[i] : lo, cr = i + 1 < N->n ? N->sep[i + 1] : hi;
        if (i && !(N->sep[i] >= lo && N->sep[i] < hi)) return -8;
        Agg g;
        int r = check_node(t, t->inners[node].child[i], level - 1, cl, cr, 0, &g, keys);
        if (r < 0) return r;
        N = &t->inners[node];
        Agg *e = &N->agg[i];
        if (!agg_equal(e, &g)) return -9;
    }
    inner_agg(N, out, t->plain);
    return 0;
}

static PyObject *CTree_check(CTree *self, PyObject *Py_UNUSED(ignored)) {
    clean(self);
    Agg g;
    Py_ssize_t keys[2] = {0, 0};
    int r = check_node(self, self->root, self->height, -INFINITY, INFINITY, 1, &g, keys);
    /* the root's aggregate as stored (read only while the tree holds keys) */
    if (r == 0 && self->n_keys && !agg_equal(&self->top, &g)) r = -14;
    if (r == 0 && keys[0] != self->n_keys) r = -10;
    if (r == 0 && keys[1] > 2) r = -11;
    if (r == 0 && !self->plain && self->wcap < self->lused) r = -13; /* a leaf in use without weights */
    if (r < 0) { PyErr_Format(PyExc_AssertionError, "tree invariant %d broken", r); return NULL; }
    Py_RETURN_NONE;
}

/* stats() -> dict of the structure's sizes (leaves, inner nodes, lo blocks, ring; used
   and allocated) for memory accounting and tests. */
static PyObject *CTree_stats(CTree *self, PyObject *Py_UNUSED(ignored)) {
    return Py_BuildValue("{s:n,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:n,s:n,s:n,s:n,s:n,s:i,s:i,s:n}", "n_keys", self->n_keys,
                         "leaves", self->nleaves, "leaf_slots", self->lcap, "inners", self->ninners,
                         "inner_slots", self->icap, "lo_blocks", self->nlos, "lo_slots", self->ocap,
                         "height", self->height, "ring_capacity", self->qcap, "leaf_bytes", (Py_ssize_t)sizeof(Leaf),
                         "inner_bytes", (Py_ssize_t)sizeof(Inner), "lo_bytes", (Py_ssize_t)sizeof(LoBlock),
                         "ring_record_bytes", (Py_ssize_t)(2 * sizeof(double) + 1 + (self->qt ? sizeof(double) : 0)),
                         "plain", self->plain, "weight_slots", self->wcap, "weight_bytes", (Py_ssize_t)sizeof(WeightBlock));
}

/* _predictor() -> (recording, keys queued, reverts predicted): tests only. */
static PyObject *CTree_predictor(CTree *self, PyObject *Py_UNUSED(ignored)) {
    return Py_BuildValue("(inL)", self->pr_state, self->pr_size, self->pr_hits);
}

/* _predictor_keys() -> the queued keys, oldest first: tests only. O(queued). */
static PyObject *CTree_predictor_keys(CTree *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(self->pr_size);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < self->pr_size; k++) {
        PyObject *v = PyFloat_FromDouble(self->pr_key[(self->pr_head + k) % self->pr_cap]);
        if (!v) { Py_DECREF(out); return NULL; }
        PyList_SET_ITEM(out, k, v);
    }
    return out;
}

static PyObject *CTree_get_b(CTree *self, void *closure) { return PyFloat_FromDouble(self->b); }
static PyObject *CTree_get_a(CTree *self, void *closure) { return PyFloat_FromDouble(self->a); }

static PyMethodDef CTree_methods[] = {
    {"add", (PyCFunction)(void (*)(void))CTree_add, METH_FASTCALL, "add(key, is_pos, w): add one event"},
    {"remove", (PyCFunction)(void (*)(void))CTree_remove, METH_FASTCALL, "remove(key, is_pos, w): remove one held event"},
    {"window_push", (PyCFunction)(void (*)(void))CTree_window_push, METH_FASTCALL,
     "window_push(key, is_pos, w, limit): add, queue, expire beyond limit"},
    {"time_push", (PyCFunction)(void (*)(void))CTree_time_push, METH_FASTCALL,
     "time_push(key, is_pos, w, t, cutoff): add, queue with time, expire times <= cutoff"},
    {"expire_until", (PyCFunction)CTree_expire_until, METH_O, "expire_until(cutoff): expire queued times <= cutoff"},
    {"held_at", (PyCFunction)CTree_held_at, METH_O, "held_at(key) -> (w1, w0, c1, c0) or None"},
    {"held_at_exact", (PyCFunction)CTree_held_at_exact, METH_O, "held_at_exact(key) -> (w1 hi, w1 lo, w0 hi, w0 lo)"},
    {"best", (PyCFunction)CTree_best, METH_NOARGS, "best() -> (min prefix, key or -inf)"},
    {"threshold", (PyCFunction)CTree_threshold, METH_NOARGS, "threshold() -> key, -inf, or None when empty"},
    {"cost", (PyCFunction)CTree_cost, METH_NOARGS, "cost() -> empirical cost at the threshold, None when empty"},
    {"totals", (PyCFunction)CTree_totals, METH_NOARGS, "totals() -> (W1, W0, C1, C0)"},
    {"n_events", (PyCFunction)CTree_n_events, METH_NOARGS, "n_events() -> events held"},
    {"set_coefs", (PyCFunction)CTree_set_coefs, METH_VARARGS, "set_coefs(a, b): O(n) on the next read"},
    {"apply_sorted", (PyCFunction)CTree_apply_sorted, METH_VARARGS, "apply_sorted(keys, dw1, dw0, dc1, dc0)"},
    {"add_many", (PyCFunction)CTree_add_many, METH_VARARGS, "add_many(s, y, w): add events given in any order"},
    {"window_push_many", (PyCFunction)CTree_window_push_many, METH_VARARGS,
     "window_push_many(s, y, w, limit): queue events, expire the oldest beyond limit, one sorted batch"},
    {"totals_upto", (PyCFunction)CTree_totals_upto, METH_O, "totals_upto(key) -> (w1, w0, c1, c0)"},
    {"range_best", (PyCFunction)CTree_range_best, METH_VARARGS, "range_best(lo, hi) -> (min prefix, key) over lo <= key < hi"},
    {"kth_key", (PyCFunction)CTree_kth_key, METH_VARARGS, "kth_key(cls, k) -> smallest key where class count reaches k"},
    {"np_best", (PyCFunction)CTree_np_best, METH_VARARGS,
     "np_best(k0, np1, m1) -> (min prefix, key): the Neyman-Pearson choice for rank bounds k0 and (when np1) m1"},
    {"rank_best", (PyCFunction)CTree_rank_best, METH_VARARGS,
     "rank_best(lower, k) -> (min prefix, key) from the k-th negative's key on (lower) or below the k-th positive's"},
    {"export", (PyCFunction)CTree_export, METH_NOARGS, "export() -> bytes (5 x n float64)"},
    {"export_lo", (PyCFunction)CTree_export_lo, METH_NOARGS, "export_lo() -> bytes (2 x n float64)"},
    {"nbytes", (PyCFunction)CTree_nbytes, METH_NOARGS, "bytes held by the node arenas, the ring and the revert predictor's queue"},
    {"stats", (PyCFunction)CTree_stats, METH_NOARGS, "stats() -> dict of structure sizes"},
    {"_predictor", (PyCFunction)CTree_predictor, METH_NOARGS, "_predictor() -> (recording, keys queued, hits); tests"},
    {"_predictor_keys", (PyCFunction)CTree_predictor_keys, METH_NOARGS, "_predictor_keys() -> queued keys; tests"},
    {"enter", (PyCFunction)CTree_enter, METH_NOARGS, "enter(): a Python method works on the core"},
    {"exit", (PyCFunction)CTree_exit, METH_NOARGS, "exit(): it is done"},
    {"bind", (PyCFunction)CTree_bind, METH_VARARGS,
     "bind(slow_update, slow_revert, slow_get, ledger_at, limit, wmax[, slow_threshold[, wmin]])"},
    {"fast_get", (PyCFunction)CTree_fast_get, METH_NOARGS, "fast_get() -> threshold() (the locked get() while busy)"},
    {"fast_update", (PyCFunction)(void (*)(void))CTree_fast_update, METH_FASTCALL | METH_KEYWORDS,
     "fast_update(score, y, w=1.0, t=None): StreamingThors.update's fast path"},
    {"fast_revert", (PyCFunction)(void (*)(void))CTree_fast_revert, METH_FASTCALL | METH_KEYWORDS,
     "fast_revert(score, y, w=1.0): StreamingThors.revert's fast path (no window)"},
    {"set_np_tables", (PyCFunction)CTree_set_np_tables, METH_VARARGS, "set_np_tables(np0, k0_base, k0, np1, m1_base, m1)"},
    {"np_get", (PyCFunction)CTree_np_get, METH_NOARGS, "np_get() -> Neyman-Pearson threshold (fast path)"},
    {"check", (PyCFunction)CTree_check, METH_NOARGS, "check(): verify the invariants (tests)"},
    {"q_len", (PyCFunction)CTree_q_len, METH_NOARGS, "queued records"},
    {"q_push_many", (PyCFunction)CTree_q_push_many, METH_VARARGS, "q_push_many(s, y, w, t): queue records"},
    {"q_arrays", (PyCFunction)CTree_q_arrays, METH_VARARGS, "q_arrays(lo, hi) -> (bytes s|w|t, bytes y)"},
    {"q_drop", (PyCFunction)CTree_q_drop, METH_O, "q_drop(k): forget the k oldest records"},
    {"q_count_expired", (PyCFunction)CTree_q_count_expired, METH_O, "q_count_expired(cutoff)"},
    {"q_oldest_time", (PyCFunction)CTree_q_oldest_time, METH_NOARGS, "time of the oldest record"},
    {"q_find", (PyCFunction)CTree_q_find, METH_VARARGS, "q_find(s, y, w) -> position or -1"},
    {"q_time_at", (PyCFunction)CTree_q_time_at, METH_O, "q_time_at(k) -> time of record k"},
    {"q_cancel", (PyCFunction)CTree_q_cancel, METH_O, "q_cancel(k): mark record k removed"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef CTree_getset[] = {
    {"n_keys", (getter)CTree_get_n_keys, NULL, "number of distinct keys", NULL},
    {"height", (getter)CTree_get_height, NULL, "levels of inner nodes above the leaves", NULL},
    {"ring", (getter)CTree_get_ring, NULL, "0: no expiry ring, 1: count window, 2: time window", NULL},
    {"n_updates", (getter)CTree_get_n_updates, (setter)CTree_set_n_updates, "update calls accepted", NULL},
    {"version", (getter)CTree_get_version, NULL, "raised by every change of the held events", NULL},
    {"_a", (getter)CTree_get_a, NULL, "positive coefficient", NULL},
    {"_b", (getter)CTree_get_b, NULL, "negative coefficient", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CTreeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "thors_stream._ctree.CTree",
    .tp_doc = "B+-tree of distinct scores with O(1) minimum prefix sum and an expiry ring (compiled backend).",
    .tp_basicsize = sizeof(CTree),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)CTree_traverse,
    .tp_clear = (inquiry)CTree_clear,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)CTree_init,
    .tp_dealloc = (destructor)CTree_dealloc,
    .tp_methods = CTree_methods,
    .tp_getset = CTree_getset,
};

/* ---- window selection (thors_stream.selection.WindowSelector's hot path) ---- */

static inline uint64_t xorshift64s(uint64_t *s) {
    uint64_t x = *s;
    x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static inline double unit_draw(uint64_t *s) { return (double)(xorshift64s(s) >> 11) * (1.0 / 9007199254740992.0); }

static int draw_index(const double *ps, int n, uint64_t *rng) {
    double z = 0.0;
    for (int i = 0; i < n; i++) z += ps[i];
    double r = unit_draw(rng) * z;
    int last = -1;
    for (int i = 0; i < n; i++) {
        if (ps[i] > 0.0) last = i;
        r -= ps[i];
        if (r < 0.0 && ps[i] > 0.0) return i;
    }
    return last < 0 ? n - 1 : last;
}

/* AdaHedge weights over cumulative costs (follow the leaders while gap == 0). */
static void ada_weights(const double *log_prior, const double *costs, int n, double gap, double *p) {
    double top = -INFINITY;
    if (gap <= 0.0) {
        double best = INFINITY;
        for (int i = 0; i < n; i++) if (costs[i] < best) best = costs[i];
        for (int i = 0; i < n; i++) p[i] = costs[i] == best ? log_prior[i] : -INFINITY;
    } else {
        /* relative to the least cost: eta * cost can be ~1e16 times a log prior's size */
        double eta = log((double)n) / gap, least = INFINITY;
        for (int i = 0; i < n; i++) if (costs[i] < least) least = costs[i];
        for (int i = 0; i < n; i++) p[i] = log_prior[i] - eta * (costs[i] - least);
    }
    for (int i = 0; i < n; i++) if (p[i] > top) top = p[i];
    double z = 0.0;
    for (int i = 0; i < n; i++) { p[i] = p[i] == -INFINITY ? 0.0 : exp(p[i] - top); z += p[i]; }
    for (int i = 0; i < n; i++) p[i] /= z;
}

#define MAXK 64

/* selector_step(fixed, score, is_pos, w) -> the chosen candidate's threshold after the event
   fixed = (trees, default_threshold, fn_cost, fp_cost, leader, state), built once by the
   selector. One labelled event for K = len(trees) windows plus the default candidate:
   charge each candidate its cost at its current threshold, update AdaHedge (cumulative
   mixability gap, weights) and the candidate in use, then let every window learn the
   event. state: a bytearray of float64 updated in place, [log_prior (K + 1), costs (K + 1),
   p (K + 1), gap, expected_cost, cost, chosen, rng] (rng: the xorshift64* state's bits);
   a bytearray, not a numpy array, because its bytes are reached without the buffer
   protocol (a numpy export costs ~0.1 us a call). Returns what the selector's get() gives
   next: the chosen window's threshold (-inf: all positive), or the default threshold for
   the default candidate or an empty window. Arguments are valid (the Python side checks
   them). */
static PyObject *selector_step(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) { PyErr_SetString(PyExc_TypeError, "selector_step takes 4 arguments"); return NULL; }
    PyObject *fixed = args[0];
    if (!PyTuple_Check(fixed) || PyTuple_GET_SIZE(fixed) != 6) {
        PyErr_SetString(PyExc_TypeError, "selector_step: fixed must be (trees, default, fn, fp, leader, state)");
        return NULL;
    }
    PyObject *trees = PyTuple_GET_ITEM(fixed, 0), *buf = PyTuple_GET_ITEM(fixed, 5);
    if (!PyTuple_Check(trees)) { PyErr_SetString(PyExc_TypeError, "selector_step: trees must be a tuple"); return NULL; }
    double dthr = PyFloat_AsDouble(PyTuple_GET_ITEM(fixed, 1)), s = PyFloat_AsDouble(args[1]);
    int pos = PyObject_IsTrue(args[2]);
    double w = PyFloat_AsDouble(args[3]), fn = PyFloat_AsDouble(PyTuple_GET_ITEM(fixed, 2));
    double fp = PyFloat_AsDouble(PyTuple_GET_ITEM(fixed, 3));
    int leader = PyObject_IsTrue(PyTuple_GET_ITEM(fixed, 4));
    if (PyErr_Occurred() || pos < 0 || leader < 0) return NULL;
    Py_ssize_t K = PyTuple_GET_SIZE(trees);
    int n = (int)K + 1;
    if (K < 1 || n > MAXK) { PyErr_SetString(PyExc_ValueError, "selector_step: 1..63 windows"); return NULL; }
    if (!PyByteArray_Check(buf) || PyByteArray_GET_SIZE(buf) != (3 * n + 5) * 8) {
        PyErr_SetString(PyExc_TypeError, "selector_step: state must be a bytearray of 3 * (K + 1) + 5 float64");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < K; i++) {
        PyObject *t = PyTuple_GET_ITEM(trees, i);
        if (!PyObject_TypeCheck(t, &CTreeType) || ((CTree *)t)->ring != 1) {
            PyErr_SetString(PyExc_TypeError, "selector_step: trees must be count-window CTree objects");
            return NULL;
        }
        if (refuse_broken((CTree *)t) < 0) return NULL;
    }
    {
        double *log_prior = (double *)PyByteArray_AS_STRING(buf), *costs = log_prior + n, *p = costs + n;
        double *scal = p + n;
        uint64_t *rng = (uint64_t *)(scal + 4);
        double loss[MAXK], c = pos ? fn * w : fp * w;
        int any = 0;
        for (Py_ssize_t i = 0; i < K; i++) {
            CTree *t = (CTree *)PyTuple_GET_ITEM(trees, i);
            double thr = t->n_keys ? tree_threshold(t) : dthr;
            loss[i] = ((s <= thr) == (pos != 0)) ? c : 0.0;
            any |= loss[i] != 0.0;
        }
        loss[K] = ((s <= dthr) == (pos != 0)) ? c : 0.0;
        any |= loss[K] != 0.0;
        int same = 1; /* every candidate loses alike: the weights and the gap do not move */
        for (int i = 1; i < n; i++) same &= loss[i] == loss[0];
        if (any && same) {
            for (int i = 0; i < n; i++) costs[i] += loss[0];
            scal[1] += loss[0];
            scal[2] += loss[0];
        } else if (any) {
            double h = 0.0, m, gap = scal[0];
            for (int i = 0; i < n; i++) h += p[i] * loss[i];
            if (gap <= 0.0) {
                m = INFINITY;
                for (int i = 0; i < n; i++) if (p[i] > 0.0 && loss[i] < m) m = loss[i];
            } else {
                /* shifted by the least loss among candidates of positive weight, so z >= that
                   weight > 0 (weightless candidates are left out: 0 * exp(+huge) is NaN) */
                double eta = log((double)n) / gap, lo = INFINITY, z = 0.0;
                for (int i = 0; i < n; i++) if (p[i] > 0.0 && loss[i] < lo) lo = loss[i];
                for (int i = 0; i < n; i++) if (p[i] > 0.0) z += p[i] * exp(-eta * (loss[i] - lo));
                m = lo - log(z) / eta;
            }
            if (h > m) scal[0] += h - m;
            for (int i = 0; i < n; i++) costs[i] += loss[i];
            scal[1] += h;
            int chosen = (int)scal[3];
            scal[2] += loss[chosen];
            double np_[MAXK];
            ada_weights(log_prior, costs, n, scal[0], np_);
            if (leader) {
                int best = 0;
                for (int i = 1; i < n; i++) if (np_[i] > np_[best]) best = i;
                chosen = best;
            } else if (!(p[chosen] > 0.0 && unit_draw(rng) * p[chosen] < np_[chosen])) {
                double gain[MAXK], tot = 0.0;
                for (int i = 0; i < n; i++) { gain[i] = np_[i] > p[i] ? np_[i] - p[i] : 0.0; tot += gain[i]; }
                if (tot > 0.0) chosen = draw_index(gain, n, rng);
            }
            for (int i = 0; i < n; i++) p[i] = np_[i];
            scal[3] = (double)chosen;
        }
        for (Py_ssize_t i = 0; i < K; i++) {
            CTree *t = (CTree *)PyTuple_GET_ITEM(trees, i);
            if (window_push(t, s, pos, w, t->limit) < 0) return NULL;
            if (t->n_updates < LLONG_MAX) t->n_updates++;
        }
        /* the chosen window's threshold, as StreamingThors.get() reads it (the next step
           cleans that tree anyway) */
        int chosen = (int)scal[3];
        CTree *t = chosen < K ? (CTree *)PyTuple_GET_ITEM(trees, chosen) : NULL;
        return PyFloat_FromDouble(t && t->n_keys ? tree_threshold(t) : dthr);
    }
}

/* _set_batch_threads(n): tests only; 1 applies every batch in one thread, 2 (the default)
   lets large batches use two (see apply_runs_two). Returns the previous setting. */
static PyObject *set_batch_threads(PyObject *Py_UNUSED(module), PyObject *arg) {
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    int old = batch_threads;
    batch_threads = n >= 2 ? 2 : 1;
    return PyLong_FromLong(old);
}

/* _set_rebuild_ratio(r): benchmarks and tests only; a batch of m changes into a tree of n
   keys is rebuilt when n < r * m (0: never, a huge r: always). Returns the previous r. */
static PyObject *set_rebuild_ratio(PyObject *Py_UNUSED(module), PyObject *arg) {
    Py_ssize_t r = PyLong_AsSsize_t(arg);
    if (r == -1 && PyErr_Occurred()) return NULL;
    if (r < 0 || r > ((Py_ssize_t)1 << 40)) { PyErr_SetString(PyExc_ValueError, "ratio must be in 0..2**40"); return NULL; }
    Py_ssize_t old = rebuild_ratio;
    rebuild_ratio = r;
    return PyLong_FromSsize_t(old);
}

/* _set_simd(on) -> the previous setting: tests only; 0 aggregates plain leaves with the
   scalar body, 1 with AVX2 where the CPU has it (elsewhere the setting stays 0). */
static PyObject *set_simd(PyObject *Py_UNUSED(module), PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0) return NULL;
#ifdef HAVE_AVX2_AGG
    int old = simd_agg;
    simd_agg = on && __builtin_cpu_supports("avx2");
    return PyBool_FromLong(old);
#else
    return PyBool_FromLong(0);
#endif
}

/* _batch_counters() -> (batches applied by two threads, leaf runs they left to the serial
   pass, leaves they changed in place at two keys or more) since the module was loaded;
   tests only. */
static PyObject *batch_counters(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored)) {
    return Py_BuildValue("(LLL)", two_thread_batches, deferred_runs, multi_key_leaves);
}

/* _path_counters() -> (batches applied by key, batches that rebuilt the tree from a batch that
   replaced the whole window) since the module was loaded; tests only. */
static PyObject *path_counters(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored)) {
    return Py_BuildValue("(LL)", keyed_batches, replaced_batches);
}

/* _fail_reserve_after(n): tests only, make the n+1-th later reserve() fail (-1: never). */
static PyObject *set_fail_reserve_after(PyObject *Py_UNUSED(module), PyObject *arg) {
    long long n = PyLong_AsLongLong(arg);
    if (n == -1 && PyErr_Occurred()) return NULL;
    fail_reserve_after = n < 0 ? -1 : n;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"selector_step", (PyCFunction)(void (*)(void))selector_step, METH_FASTCALL,
     "selector_step(fixed, score, is_pos, w) -> threshold"},
    {"_set_simd", (PyCFunction)set_simd, METH_O, "_set_simd(on) -> previous; tests only"},
    {"_batch_counters", (PyCFunction)batch_counters, METH_NOARGS,
     "_batch_counters() -> (two-thread batches, runs deferred to the serial pass, leaves changed in place at two keys or more); tests only"},
    {"_path_counters", (PyCFunction)path_counters, METH_NOARGS,
     "_path_counters() -> (batches applied by key, batches that rebuilt the tree from a whole-window batch); tests only"},
    {"_set_batch_threads", (PyCFunction)set_batch_threads, METH_O,
     "_set_batch_threads(n): tests only; 1 = every batch in one thread, 2 = large batches in two; returns the old value"},
    {"_set_rebuild_ratio", (PyCFunction)set_rebuild_ratio, METH_O,
     "_set_rebuild_ratio(r): benchmarks and tests; rebuild a tree of n keys for m changes when n < r * m; returns the old r"},
    {"_fail_reserve_after", (PyCFunction)set_fail_reserve_after, METH_O,
     "_fail_reserve_after(n): tests only; the n+1-th later reserve() raises MemoryError (-1: never)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef ctree_module = {
    PyModuleDef_HEAD_INIT, "_ctree", "Compiled core of thors_stream: B+-tree prefix minimum and expiry ring.", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__ctree(void) {
#ifdef HAVE_AVX2_AGG
    __builtin_cpu_init();
    simd_agg = __builtin_cpu_supports("avx2") ? 1 : 0;
#endif
    if (PyType_Ready(&CTreeType) < 0) return NULL;
    PyObject *m = PyModule_Create(&ctree_module);
    if (!m) return NULL;
    Py_INCREF(&CTreeType);
    if (PyModule_AddObject(m, "CTree", (PyObject *)&CTreeType) < 0) {
        Py_DECREF(&CTreeType);
        Py_DECREF(m);
        return NULL;
    }
    /* THORS_STREAM_BATCH_THREADS=1: every batch in the calling thread (see apply_runs_two);
       =2: large batches in two threads. Unset: two, unless the process may run on one CPU
       only (a second thread would then only take turns with the first, and the first's
       spin-wait would keep it off the CPU). */
    const char *bt = getenv("THORS_STREAM_BATCH_THREADS");
    if (bt && strcmp(bt, "1") == 0) batch_threads = 1;
    else if (bt && strcmp(bt, "2") == 0) batch_threads = 2;
#ifdef __linux__
    else {
        cpu_set_t cpus;
        if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) < 2) batch_threads = 1;
    }
#endif
    PyModule_AddIntConstant(m, "LEAF_CAPACITY", LCAP);
    PyModule_AddIntConstant(m, "INNER_CAPACITY", ICAP);
    return m;
}
