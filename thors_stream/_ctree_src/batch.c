/* batch.c: batches: the builder (bulk rebuild), apply_sorted_impl, events in any order, and the batch methods. */
#include "ctree.h"

/* ---- bulk changes ---- */

/* Start rebuilding t for at most nmax keys, plain (every row's weights its counts, no low
   parts) or not, at most nlo rows with low parts. The arenas are grown first (reused: a
   rebuild touches no fresh pages; a failed realloc leaves the old block, and so the old tree,
   intact), then the tree is emptied. Returns 0, or -1 with MemoryError set and the tree
   unchanged. */
int build_begin(Builder *B, CTree *t, Py_ssize_t nmax, int plain, Py_ssize_t nlo) {
    Py_ssize_t nl = nmax ? (nmax + FILL - 1) / FILL : 1;
    if (nl > INT32_MAX / 4) { PyErr_SetString(PyExc_MemoryError, "too many distinct scores"); return -1; }
    if (nlo > nl) nlo = nl; /* (at most one block a leaf) */
    Py_ssize_t ni_max = nl / (IFILL - 1) + 2 * MAXH; /* every inner level, rounded up */
    B->t = t; B->nl = 0; B->n = 0; B->L = NULL;
    /* (room for three leaves more than nl: a rebuild in two parts rounds each part's count up) */
    B->level = PyMem_Malloc((size_t)(nl + 4) * sizeof(int32_t));
    B->lsep = PyMem_Malloc((size_t)(nl + 4) * sizeof(double));
    B->agg = PyMem_Malloc((size_t)(nl + 4) * sizeof(Agg));
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

/* Close the rebuild: the last leaf, when short, takes half of the keys of the two last leaves
   (or, when they hold fewer than 2 * LMIN keys, is merged into the last but one);
   the inner levels, each node's aggregates computed from its children's (as clean would). */
void build_end(Builder *B) {
    CTree *t = B->t;
    if (!B->nl) { /* no key: one empty leaf */
        B->level[0] = new_leaf(t); B->lsep[0] = -INFINITY; B->nl = 1;
    }
    Py_ssize_t nl = B->nl;
    if (nl > 1) {
        int32_t p = B->level[nl - 2], q = B->level[nl - 1];
        Leaf *P = &t->leaves[p], *Q = &t->leaves[q];
        if (Q->n < LMIN && P->n + Q->n < 2 * LMIN) {
            /* too few for two: one leaf (a rebuild in two parts may leave the last but one short
               of FILL; evened out, both would be short) */
            leaf_copy(t, p, P->n, q, 0, Q->n);
            P->n += Q->n; Q->n = 0;
            Q->next_free = t->lfree; t->lfree = q; t->nleaves--;
            nl = --B->nl;
        } else if (Q->n < LMIN) {
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
int build_from(CTree *t, const double *k, const double *h1, const double *l1, const double *h0,
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
Py_ssize_t rebuild_ratio = REBUILD_RATIO; /* (_set_rebuild_ratio: benchmarks and tests) */

/* Apply per-event (or per-key) changes sorted by key (keys may repeat): small batches
   leaf by leaf (apply_runs), large ones (next to the tree) by merging them into the sorted
   export and rebuilding, O(n + m). Returns 0, or -1 with an exception set. */
int apply_sorted_impl(CTree *self, const double *k, const double *a1, const double *a0, const double *d1,
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
PyObject *CTree_apply_sorted(CTree *self, PyObject *args) {
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
PyObject *CTree_add_many(CTree *self, PyObject *args) {
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
   (replace_all), else by key when the batch repeats few keys (apply_keyed), else, on a plain
   tree and unit weights, as count changes by key on two threads (apply_window_rows), else as
   one sorted batch of per-event changes (apply_window_events). */
PyObject *CTree_window_push_many(CTree *self, PyObject *args) {
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
        if (how == 0) how = apply_window_rows(self, s, y, w, e_new, m, e_old);
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
