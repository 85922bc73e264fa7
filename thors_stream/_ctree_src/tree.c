/* tree.c: the B+-tree: arenas, aggregates and their refresh, leaf and inner slots, split / spill / merge, upsert. */
#include "ctree.h"

/* Tests only: make the n+1-th later reserve() (or leave_plain()) fail with MemoryError
   (-1: never). */
long long fail_reserve_after = -1;

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
int resize_weights(CTree *t, int32_t cap) {
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
int leave_plain(CTree *t) {
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

/* Make room for k new leaves, inner nodes and lo blocks (before any structural change). */
int reserve(CTree *t, int32_t k) {
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

static void free_inner(CTree *t, int32_t i) {
    t->inners[i].next_free = t->ifree;
    t->ifree = i;
    t->ninners--;
}

void key_error(double key) {
    PyObject *k = PyFloat_FromDouble(key);
    if (k) { PyErr_Format(PyExc_KeyError, "no held event of that label has score %R", k); Py_DECREF(k); }
}

/* ------------------------------------------------------------------ aggregates */

/* Join the four quarters' running sums, minima (bi: the slot of each quarter's minimum, -1
   for none) and class sums into g's sum, minimum and weights, in key order (ties: the lower
   key). Returns the slot of the minimum (-1: none); the caller sets g->argk from it. Leaves
   and inner nodes alike. */
static inline int32_t join_quarters(const double *acc, const double *best, const int32_t *bi, const double *W1,
                                    const double *W0, Agg *g) {
    double off = 0.0, gbest = INFINITY;
    int32_t gbi = -1;
    for (int c = 0; c < 4; c++) {
        if (bi[c] >= 0) {
            double p = off + best[c];
            if (p < gbest) { gbest = p; gbi = bi[c]; }
        }
        off += acc[c];
    }
    g->sum = off; g->minp = gbest;
    g->w1 = ((W1[0] + W1[1]) + W1[2]) + W1[3]; g->w0 = ((W0[0] + W0[1]) + W0[2]) + W0[3];
    return gbi;
}

/* A leaf's quarters joined: the minimum's key from its slot. */
static inline void join_leaf_quarters(const Leaf *L, const double *acc, const double *best, const int32_t *bi,
                                      const double *W1, const double *W0, Agg *g) {
    int32_t gbi = join_quarters(acc, best, bi, W1, W0, g);
    g->argk = gbi >= 0 ? L->key[gbi] : NAN;
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
    join_leaf_quarters(L, acc, best, bi, W1, W0, g);

#ifdef HAVE_AVX2_AGG
int simd_agg = 0; /* (see ctree.h) */

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
    join_leaf_quarters(L, A, B, slots, S1, S0, g);
    g->c1 = g->w1; g->c0 = g->w0;
    return 1;
}
#endif

void leaf_agg(CTree *t, Leaf *L, Agg *g) {
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

/* An inner node's quarters joined (see join_quarters): the minimum's key from its child's
   aggregate, and the class totals summed in the same order (copied from the weights when
   plain: the counts are the weights, see leaf_agg). */
static inline void join_inner_quarters(const Inner *N, const double *acc, const double *best, const int32_t *bi,
                                       const double *W1, const double *W0, const double *C1, const double *C0,
                                       int plain, Agg *g) {
    int32_t gbi = join_quarters(acc, best, bi, W1, W0, g);
    g->argk = gbi >= 0 ? N->agg[gbi].argk : NAN;
    if (plain) { g->c1 = g->w1; g->c0 = g->w0; }
    else { g->c1 = ((C1[0] + C1[1]) + C1[2]) + C1[3]; g->c0 = ((C0[0] + C0[1]) + C0[2]) + C0[3]; }
}

#ifdef HAVE_AVX2_AGG
/* inner_agg with AVX2: the four quarters are the four lanes of one vector, each doing the
   scalar body's operations in its order (a child past n adds +0.0, as there), so the
   aggregate is the scalar one bit for bit (tests/test_simd_agg.py). Each step loads, per
   lane, the child's (sum, minp), (w1, w0) and, unless plain, (c1, c0) pairs and transposes
   them in registers; children n .. 4 * ceil(n / 4) - 1 (< ICAP) are read and masked out.
   The four chains of dependent additions are half as long as the scalar body's two
   (which is what a per-event read at 10**6 keys waits on, some seven nodes a read). */
__attribute__((target("avx2")))
static void inner_agg_avx2(const Inner *N, Agg *g, int plain) {
    int32_t n = N->n, qs = (n + 3) >> 2;
    __m256d nn = _mm256_set1_pd((double)n), one = _mm256_set1_pd(1.0);
    __m256d idx = _mm256_setr_pd(0.0, (double)qs, 2.0 * qs, 3.0 * qs);
    __m256d acc = _mm256_setzero_pd(), best = _mm256_set1_pd(INFINITY), bi = _mm256_set1_pd(-1.0);
    __m256d W1 = _mm256_setzero_pd(), W0 = _mm256_setzero_pd(), C1 = _mm256_setzero_pd(), C0 = _mm256_setzero_pd();
#define PAIRS(FIELD, LO, HI) do {                                                              \
        __m256d x = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(&a0->FIELD)), \
                                         _mm_loadu_pd(&a2->FIELD), 1);                      \
        __m256d y = _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(&a1->FIELD)), \
                                         _mm_loadu_pd(&a3->FIELD), 1);                      \
        LO = _mm256_and_pd(_mm256_unpacklo_pd(x, y), in);                                   \
        HI = _mm256_and_pd(_mm256_unpackhi_pd(x, y), in);                                   \
    } while (0)
    for (int32_t j = 0; j < qs; j++) {
        const Agg *a0 = &N->agg[j], *a1 = &N->agg[qs + j], *a2 = &N->agg[2 * qs + j], *a3 = &N->agg[3 * qs + j];
        __m256d in = _mm256_cmp_pd(idx, nn, _CMP_LT_OQ), s, m, w1, w0;
        PAIRS(sum, s, m); /* sum and minp are adjacent, as are w1 and w0, and c1 and c0 */
        PAIRS(w1, w1, w0);
        __m256d p = _mm256_add_pd(acc, m);
        __m256d lt = _mm256_and_pd(in, _mm256_cmp_pd(p, best, _CMP_LT_OQ));
        best = _mm256_blendv_pd(best, p, lt);
        bi = _mm256_blendv_pd(bi, idx, lt);
        acc = _mm256_add_pd(acc, s);
        W1 = _mm256_add_pd(W1, w1); W0 = _mm256_add_pd(W0, w0);
        if (!plain) {
            __m256d c1, c0;
            PAIRS(c1, c1, c0);
            C1 = _mm256_add_pd(C1, c1); C0 = _mm256_add_pd(C0, c0);
        }
        idx = _mm256_add_pd(idx, one);
    }
#undef PAIRS
    double A[4], B[4], I[4], S1[4], S0[4], K1[4], K0[4];
    _mm256_storeu_pd(A, acc); _mm256_storeu_pd(B, best); _mm256_storeu_pd(I, bi);
    _mm256_storeu_pd(S1, W1); _mm256_storeu_pd(S0, W0); _mm256_storeu_pd(K1, C1); _mm256_storeu_pd(K0, C0);
    int32_t slots[4] = {(int32_t)I[0], (int32_t)I[1], (int32_t)I[2], (int32_t)I[3]};
    join_inner_quarters(N, A, B, slots, S1, S0, K1, K0, plain, g);
}
#endif

void inner_agg(Inner *N, Agg *g, int plain) {
    /* As leaf_agg: the children in four consecutive quarters summed side by side, the
       running minimum selected rather than branched on (a branch on it mispredicted about
       once a call), then joined in key order. Every sum formed is a sum of consecutive
       children's sums. In a plain tree the class counts are the weights (the same sums,
       see leaf_agg): they are copied, not summed again. With AVX2 the quarters are the
       lanes of one vector (inner_agg_avx2, the same result bit for bit). */
#ifdef HAVE_AVX2_AGG
    if (simd_agg) { inner_agg_avx2(N, g, plain); return; }
#endif
    int32_t n = N->n, qs = (n + 3) >> 2;
    double acc[4] = {0.0, 0.0, 0.0, 0.0}, best[4] = {INFINITY, INFINITY, INFINITY, INFINITY};
    double W1[4] = {0.0, 0.0, 0.0, 0.0}, W0[4] = {0.0, 0.0, 0.0, 0.0};
    double C1[4] = {0.0, 0.0, 0.0, 0.0}, C0[4] = {0.0, 0.0, 0.0, 0.0};
    int32_t bi[4] = {-1, -1, -1, -1};
    for (int32_t j = 0; j < qs; j++)
        for (int c = 0; c < 4; c++) {
            int32_t i = c * qs + j;
            if (i >= n) continue; /* (the vector body adds +0.0 there: the same sums) */
            const Agg *a = &N->agg[i];
            double p = acc[c] + a->minp;
            int lt = p < best[c];
            best[c] = lt ? p : best[c];
            bi[c] = lt ? i : bi[c];
            acc[c] += a->sum;
            W1[c] += a->w1; W0[c] += a->w0;
            if (!plain) { C1[c] += a->c1; C0[c] += a->c0; }
        }
    join_inner_quarters(N, acc, best, bi, W1, W0, C1, C0, plain, g);
}

/* Recompute the stale aggregates below node (recursion depth = the height, <= MAXH):
   only the children whose bit is set are visited. */
void refresh(CTree *t, int32_t node, int level, Agg *out) {
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

/* ------------------------------------------------------------------ leaf slots */

/* Open a gap at pos (n < LCAP). */
void leaf_open(CTree *t, Leaf *L, int32_t pos) {
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

void leaf_close(CTree *t, Leaf *L, int32_t pos) {
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
void leaf_copy(CTree *t, int32_t dst, int32_t d, int32_t src, int32_t s, int32_t cnt) {
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
void leaf_shift(CTree *t, int32_t i, int32_t from, int32_t to, int32_t cnt) {
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
void leaf_changed(CTree *t, Leaf *L) {
    if (t->height > 0 && L->n < LMIN) {
        t->sgen++;
        mark_path(t);
        rebalance(t, t->height - 1);
        collapse_root(t);
    } else {
        settle_leaf(t, L);
    }
}

/* upsert with the descent to key's leaf already done (the path recorded). */
int upsert_leaf(CTree *t, int32_t leaf, double key, double dw1, double dw0, int64_t dc1, int64_t dc0) {
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

/* ---- walking all keys in order (a loop with an explicit stack) ---- */

int32_t walk_first(Walk *wk, CTree *t) {
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

int32_t walk_next(Walk *wk) {
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
