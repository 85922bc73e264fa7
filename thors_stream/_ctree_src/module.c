/* module.c: the CTree type (life cycle, per-event methods, fast paths, revert predictor, checks) and module init. */
#include "ctree.h"
#ifdef __linux__
#include <sched.h>
#endif

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

void pr_stop(CTree *t) {
    PyMem_Free(t->pr_key);
    t->pr_key = NULL;
    t->pr_head = t->pr_size = t->pr_cap = 0;
    t->pr_state = 0;
}

/* An event with this key was added (after the tree took it). */
void pr_push(CTree *t, double key) {
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
    self->qunit = 1; /* (an empty ring) */
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

int parse3(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *sig, double *key,
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

/* leaf_sizes() -> list of every leaf's key count, in key order (tests: the fill a rebuild leaves). O(n / B). */
static PyObject *CTree_leaf_sizes(CTree *self, PyObject *Py_UNUSED(ignored)) {
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    Walk wk;
    for (int32_t leaf = walk_first(&wk, self); leaf != NIL; leaf = walk_next(&wk)) {
        PyObject *n = PyLong_FromLong(self->leaves[leaf].n);
        if (!n || PyList_Append(out, n) < 0) { Py_XDECREF(n); Py_DECREF(out); return NULL; }
        Py_DECREF(n);
    }
    return out;
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
    {"leaf_sizes", (PyCFunction)CTree_leaf_sizes, METH_NOARGS, "leaf_sizes() -> every leaf's key count, in key order (tests)"},
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

PyTypeObject CTreeType = {
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
    return Py_BuildValue("(LLL)", keyed_batches, replaced_batches, row_batches);
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
     "_path_counters() -> (batches applied by key, batches that rebuilt the tree from a whole-window batch, "
     "window batches applied as count changes by key); tests only"},
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
