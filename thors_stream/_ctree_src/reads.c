/* reads.c: reads of the tree: threshold (and fast path), cost, totals, export; range, rank and Neyman-Pearson reads. */
#include "ctree.h"

PyObject *CTree_held_at(CTree *self, PyObject *arg) {
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
PyObject *CTree_held_at_exact(CTree *self, PyObject *arg) {
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

PyObject *CTree_best(CTree *self, PyObject *Py_UNUSED(ignored)) {
    clean(self);
    if (self->n_keys && self->top.minp < 0.0) return Py_BuildValue("(dd)", self->top.minp, self->top.argk);
    return Py_BuildValue("(dd)", 0.0, -INFINITY);
}

PyObject *CTree_threshold(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (refuse_broken(self) < 0) return NULL;
    if (self->n_keys == 0) Py_RETURN_NONE;
    return PyFloat_FromDouble(tree_threshold(self));
}

/* fast_get() -> threshold(), except while a Python method works on the core (busy): then
   the bound slow_threshold (the locked get()), which waits for that method to finish, so
   no thread reads a half-applied change (a period-mode update expiring late labels one at
   a time, a batch with a late label). */
PyObject *CTree_fast_get(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (self->busy && self->slow_threshold) return PyObject_CallNoArgs(self->slow_threshold);
    return CTree_threshold(self, NULL);
}

/* cost() -> b * W0 + min(0, min prefix): the empirical cost at the threshold; None when empty */
PyObject *CTree_cost(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (self->n_keys == 0) Py_RETURN_NONE;
    clean(self);
    double m = self->top.minp < 0.0 ? self->top.minp : 0.0;
    return PyFloat_FromDouble(self->b * self->top.w0 + m);
}

/* totals() -> (W1, W0, C1, C0) over every key */
PyObject *CTree_totals(CTree *self, PyObject *Py_UNUSED(ignored)) {
    clean(self);
    if (self->n_keys == 0) return Py_BuildValue("(dddd)", 0.0, 0.0, 0.0, 0.0);
    return Py_BuildValue("(dddd)", self->top.w1, self->top.w0, self->top.c1, self->top.c0);
}

PyObject *CTree_n_events(CTree *self, PyObject *Py_UNUSED(ignored)) {
    clean(self);
    if (self->n_keys == 0) return PyLong_FromLong(0);
    return PyLong_FromDouble(self->top.c1 + self->top.c0);
}

/* export() -> bytes of 5 x n_keys float64: rows key, w1, w0, c1, c0 in key order */
PyObject *CTree_export(CTree *self, PyObject *Py_UNUSED(ignored)) {
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
PyObject *CTree_export_lo(CTree *self, PyObject *Py_UNUSED(ignored)) {
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

/* ---- queries on part of the key range ---- */

/* totals_upto(key) -> (w1, w0, c1, c0) summed over keys <= key. O(log n). */
PyObject *CTree_totals_upto(CTree *self, PyObject *arg) {
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
PyObject *CTree_np_best(CTree *self, PyObject *args) {
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
PyObject *CTree_range_best(CTree *self, PyObject *args) {
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
PyObject *CTree_rank_best(CTree *self, PyObject *args) {
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
PyObject *CTree_kth_key(CTree *self, PyObject *args) {
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

PyObject *CTree_set_np_tables(CTree *self, PyObject *args) {
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
PyObject *CTree_np_get(CTree *self, PyObject *Py_UNUSED(ignored)) {
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
