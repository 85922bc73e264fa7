/* keyed.c: batches aggregated by key (the key table, apply_keyed) and the batch replacing the window (replace_all). */
#include "ctree.h"

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
long long keyed_batches, replaced_batches; /* tests: batches applied by key, batches that rebuilt the tree */

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
    int unit = t->plain && ring_unit_weights(t, e_old); /* (a plain tree may hold events of other weights) */
    while (left > 0) {
        Py_ssize_t run = t->qcap - j < left ? t->qcap - j : left;
        if (unit) { /* every expiring record weighs 1 */
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

/* The common case of a window over few scores: a plain tree (weights equal to counts), a batch
   of unit weights leaving unit-weight records (no weights summed in T), and every key of the
   batch held before and after it. Each key's counts are then
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
int apply_keyed(CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t q0, Py_ssize_t q1,
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

/* The zero score a rebuild keeps: the one the tree held (tzero; 1.0 when it held none), else
   the first of the batch's s[q0, q1) to arrive (the batch holds one). */
static double zero_of(const double *s, Py_ssize_t q0, Py_ssize_t q1, double tzero) {
    return tzero != 1.0 ? tzero : first_zero(s, q0, q1);
}

/* The merge of the positives' sorted values sp[a1, b1) and the negatives' sn[a0, b0) into new
   leaves of FILL keys (a key's run in each list is its count of that class), numbered from leaf0
   on (every index from there on free: a rebuild's arena, bump-allocated), listed in level, lsep
   and agg from index 0 (the aggregate of every leaf but the last). No allocation, no Python
   object: a second thread may run it. A zero key takes zero_of's representation. */
typedef struct {
    CTree *t;
    const uint64_t *sp, *sn;
    Py_ssize_t a1, b1, a0, b0;
    const double *s;
    Py_ssize_t q0, q1;
    double tzero;
    int32_t leaf0;
    int32_t *level;
    double *lsep;
    Agg *agg;
    Py_ssize_t nl, nkeys; /* out: leaves and keys made */
} __attribute__((aligned(128))) EmitJob;

static void emit_range(void *arg) {
    EmitJob *j = arg;
    CTree *t = j->t;
    const uint64_t *sp = j->sp, *sn = j->sn;
    Py_ssize_t i1 = j->a1, i0 = j->a0, n1 = j->b1, n0 = j->b0, nl = 0, nkeys = 0;
    Leaf *L = NULL;
    int32_t ln = FILL;
#define EMIT(KEY, C1, C0) do {                                                                  \
        if (ln == FILL) {                                                                      \
            if (L) { L->n = ln; leaf_agg(t, L, &j->agg[nl - 1]); }                             \
            int32_t li_ = j->leaf0 + (int32_t)nl;                                              \
            L = &t->leaves[li_];                                                               \
            L->n = 0; L->lo = NIL; L->next_free = NIL;                                         \
            j->level[nl] = li_; j->lsep[nl] = (KEY); nl++;                                     \
            ln = 0;                                                                            \
        }                                                                                      \
        L->key[ln] = (KEY); L->c1[ln] = (C1); L->c0[ln] = (C0); ln++; nkeys++;                 \
    } while (0)
    for (;;) { /* the negatives' keys in order, each after the positives' keys below it */
        uint64_t v = i0 < n0 ? sn[i0] : ~(uint64_t)0;
        while (i1 < n1 && sp[i1] < v) { /* positives only */
            uint64_t u = sp[i1];
            Py_ssize_t c1 = i1;
            while (++i1 < n1 && sp[i1] == u) {}
            double key = unsort_bits(u);
            if (key == 0.0) key = zero_of(j->s, j->q0, j->q1, j->tzero);
            EMIT(key, (uint32_t)(i1 - c1), 0);
        }
        if (i0 == n0) break;
        Py_ssize_t c0 = i0, c1 = i1;
        while (++i0 < n0 && sn[i0] == v) {}
        while (i1 < n1 && sp[i1] == v) i1++;
        double key = unsort_bits(v);
        if (key == 0.0) key = zero_of(j->s, j->q0, j->q1, j->tzero);
        EMIT(key, (uint32_t)(i1 - c1), (uint32_t)(i0 - c0));
    }
#undef EMIT
    if (L) L->n = ln;
    j->nl = nl; j->nkeys = nkeys;
}

/* From this many events on, a rebuild from sorted values makes its leaves in two parts, the
   upper one on a second thread (when two are allowed). */
#define EMIT_TWO (1 << 19)

/* The leaves of B from the sorted values (emit_range): in one part, or in two (keys below the
   negatives' median value, and the others on a second thread) whose leaves are then listed in
   order, the unused indices between them freed, and the first part's last leaf given keys from
   the second's first when it is short. */
static void emit_all(Builder *B, CTree *t, const uint64_t *sp, Py_ssize_t n1, const uint64_t *sn, Py_ssize_t n0,
                     const double *s, Py_ssize_t q0, Py_ssize_t q1, double tzero) {
    EmitJob job[2];
    for (int g = 0; g < 2; g++) {
        EmitJob *j = &job[g];
        j->t = t; j->sp = sp; j->sn = sn; j->s = s; j->q0 = q0; j->q1 = q1; j->tzero = tzero;
        j->nl = j->nkeys = 0;
    }
    Py_ssize_t s1 = n1, s0 = n0; /* the first part: sp[0, s1), sn[0, s0) */
    int32_t lub = 0;              /* the first part's leaves: indices [0, lub) */
    if (n1 + n0 >= EMIT_TWO && batch_threads >= 2 && n0 >= 2) {
        uint64_t mid = sn[n0 / 2];
        Py_ssize_t lo = 0, hi = n0 / 2;
        while (lo < hi) { Py_ssize_t md = (lo + hi) / 2; if (sn[md] < mid) lo = md + 1; else hi = md; }
        s0 = lo;
        lo = 0; hi = n1;
        while (lo < hi) { Py_ssize_t md = (lo + hi) / 2; if (sp[md] < mid) lo = md + 1; else hi = md; }
        s1 = lo;
        lub = (int32_t)((s1 + s0 + FILL - 1) / FILL + 1);
    }
    job[0].a1 = 0; job[0].b1 = s1; job[0].a0 = 0; job[0].b0 = s0; job[0].leaf0 = 0;
    job[0].level = B->level; job[0].lsep = B->lsep; job[0].agg = B->agg;
    job[1].a1 = s1; job[1].b1 = n1; job[1].a0 = s0; job[1].b0 = n0; job[1].leaf0 = lub;
    job[1].level = B->level + lub; job[1].lsep = B->lsep + lub; job[1].agg = B->agg + lub;
    if (lub) run_pair(emit_range, &job[0], &job[1], 0);
    else emit_range(&job[0]);
    Py_ssize_t nl0 = job[0].nl, nl1 = job[1].nl;
    t->lused = lub ? lub + (int32_t)nl1 : (int32_t)nl0;
    if (lub) {
        /* the second part's list after the first's; the first part's unused indices freed */
        memmove(B->level + nl0, B->level + lub, (size_t)nl1 * sizeof(int32_t));
        memmove(B->lsep + nl0, B->lsep + lub, (size_t)nl1 * sizeof(double));
        memmove(B->agg + nl0, B->agg + lub, (size_t)nl1 * sizeof(Agg));
        for (int32_t i = (int32_t)nl0; i < lub; i++) { t->leaves[i].next_free = t->lfree; t->lfree = i; }
        if (nl0 && nl1) { /* the seam: the first part's last leaf (not the tree's last) */
            int32_t a = B->level[nl0 - 1], r = B->level[nl0];
            Leaf *A = &t->leaves[a], *R = &t->leaves[r];
            if (A->n < LMIN) {
                if (A->n + R->n <= LCAP) { /* one leaf */
                    leaf_copy(t, a, A->n, r, 0, R->n);
                    A->n += R->n;
                    R->next_free = t->lfree; t->lfree = r;
                    memmove(B->level + nl0, B->level + nl0 + 1, (size_t)(nl1 - 1) * sizeof(int32_t));
                    memmove(B->lsep + nl0, B->lsep + nl0 + 1, (size_t)(nl1 - 1) * sizeof(double));
                    memmove(B->agg + nl0, B->agg + nl0 + 1, (size_t)(nl1 - 1) * sizeof(Agg));
                    nl1--;
                } else { /* shared evenly */
                    int32_t k = (A->n + R->n) / 2 - A->n;
                    leaf_copy(t, a, A->n, r, 0, k);
                    leaf_shift(t, r, k, 0, R->n - k);
                    A->n += k; R->n -= k;
                    B->lsep[nl0] = R->key[0];
                    leaf_agg(t, R, &B->agg[nl0]);
                }
            }
            leaf_agg(t, A, &B->agg[nl0 - 1]);
        }
    }
    t->nleaves = (int32_t)(nl0 + nl1);
    B->nl = nl0 + nl1;
    B->n = job[0].nkeys + job[1].nkeys;
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
int replace_all(CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t q0,
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
        emit_all(&B, t, sp, n1, sn, n0, s, q0, q1, tzero); /* (straight into the leaves: a plain tree's rows are a key and two counts) */
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
