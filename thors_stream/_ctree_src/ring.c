/* ring.c: the expiry ring of a count or time window: growth, puts, expiry, window_push / time_push, q_* methods. */
#include "ctree.h"

/* ------------------------------------------------------------------ ring */

/* Grow the ring to hold need records: doubling, but not past hint (a count window's
   size + 1) unless need is larger. */
int ring_grow(CTree *t, Py_ssize_t need, Py_ssize_t hint) {
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
    t->qunit &= w == 1.0;
    if (t->qt) t->qt[j] = tm;
    t->qsize++;
}

/* ring_put of n events at once (the room made by the caller); w NULL: every weight 1. */
void ring_put_many(CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t n) {
    Py_ssize_t j = t->qhead + t->qsize;
    if (j >= t->qcap) j -= t->qcap;
    for (Py_ssize_t done = 0; done < n;) {
        Py_ssize_t run = t->qcap - j < n - done ? t->qcap - j : n - done;
        memcpy(t->qs + j, s + done, (size_t)run * sizeof(double));
        memcpy(t->qy + j, y + done, (size_t)run);
        if (w) {
            memcpy(t->qw + j, w + done, (size_t)run * sizeof(double));
            for (Py_ssize_t u = 0; u < run && t->qunit; u++) t->qunit = w[done + u] == 1.0;
        } else {
            for (Py_ssize_t u = 0; u < run; u++) t->qw[j + u] = 1.0;
        }
        if (t->qt) for (Py_ssize_t u = 0; u < run; u++) t->qt[j + u] = 0.0;
        done += run;
        j = 0;
    }
    t->qsize += n;
}

/* Pop the oldest record and remove it from the tree (unless cancelled). */
/* Expire the oldest queued event; leaf: its leaf with the path to it recorded, or NIL (a
   descent finds it). */
static inline int ring_expire_at(CTree *t, int32_t leaf) {
    Py_ssize_t j = t->qhead;
    double s = t->qs[j], w = t->qw[j];
    int y = t->qy[j];
    if (y != CANCELLED) {
        double dw1 = y ? -w : 0.0, dw0 = y ? 0.0 : -w;
        int64_t dc1 = y ? -1 : 0, dc0 = y ? 0 : -1;
        if ((leaf == NIL ? upsert(t, s, dw1, dw0, dc1, dc0) : upsert_leaf(t, leaf, s, dw1, dw0, dc1, dc0)) < 0)
            return -1;
    }
    t->qhead = j + 1 == t->qcap ? 0 : j + 1;
    t->qsize--;
    return 0;
}

static inline int ring_expire_one(CTree *t) { return ring_expire_at(t, NIL); }

/* A descent's recorded path, kept aside while another descent runs. */
typedef struct {
    int32_t leaf;
    unsigned long long sgen; /* the tree's shape generation when it was recorded */
    int32_t node[MAXH], idx[MAXH];
} SavedPath;

static inline void path_save(const CTree *t, int32_t leaf, SavedPath *s) {
    s->leaf = leaf; s->sgen = t->sgen;
    memcpy(s->node, t->pnode, (size_t)t->height * sizeof(int32_t));
    memcpy(s->idx, t->pidx, (size_t)t->height * sizeof(int32_t));
}

/* The saved leaf with its path made the recorded one again, or NIL when the tree's shape
   changed since (a split, spill, merge or new root: the path may be stale). Keys that come
   or go without a change of shape leave every separator a valid lower bound, so the path
   still leads to the key's leaf. */
static inline int32_t path_restore(CTree *t, const SavedPath *s) {
    if (s->sgen != t->sgen) return NIL;
    memcpy(t->pnode, s->node, (size_t)t->height * sizeof(int32_t));
    memcpy(t->pidx, s->idx, (size_t)t->height * sizeof(int32_t));
    return s->leaf;
}

int window_push(CTree *self, double key, int pos, double w, Py_ssize_t limit) {
    if (self->qsize == self->qcap && ring_grow(self, self->qsize + 1, limit + 1) < 0) return -1;
    if (reserve(self, 2 * self->height + 8) < 0) return -1; /* the add and one expiry cannot fail */
    /* a large tree: start loading both leaves (the new event's and the expiring one's) and
       their parents' aggregates before touching either, so their cache misses overlap
       (measured: leaving the new event's prefetch to its upsert was about 10% slower at
       10**6: the early prefetch gains lead time), and keep both descents' paths for the
       updates themselves (one descent each instead of two, unless the insertion changes
       the tree's shape). A small tree is in cache: one descent each, no prefetch. */
    int large = self->n_keys > PREFETCH_KEYS, expiring = 0;
    SavedPath add, gone;
    if (large) {
        path_save(self, descend(self, key), &add);
        prefetch_leaf(self, add.leaf);
        prefetch_parent_aggs(self);
        expiring = self->qsize >= limit && self->qsize && self->qy[self->qhead] != CANCELLED;
        if (expiring) {
            path_save(self, descend(self, self->qs[self->qhead]), &gone);
            prefetch_leaf(self, gone.leaf);
            prefetch_parent_aggs(self);
        }
        path_restore(self, &add); /* (nothing changed the tree since its descent) */
    }
    double dw1 = pos ? w : 0.0, dw0 = pos ? 0.0 : w;
    if ((large ? upsert_leaf(self, add.leaf, key, dw1, dw0, pos, !pos) : upsert(self, key, dw1, dw0, pos, !pos)) < 0)
        return -1;
    ring_put(self, key, pos, w, 0.0);
    /* the oldest event, whose leaf was loaded above (a descent again if the shape changed) */
    if (expiring && self->qsize > limit && ring_expire_at(self, path_restore(self, &gone)) < 0) return -1;
    while (self->qsize > limit)
        if (ring_expire_one(self) < 0) return -1;
    return 0;
}

/* window_push(key, is_pos, w, limit): add the event, queue it, and expire the oldest
   queued events while more than limit are queued. One call per event. */
PyObject *CTree_window_push(CTree *self, PyObject *const *args, Py_ssize_t nargs) {
    double key, w; int pos;
    if (parse3(args, nargs, 4, "window_push(key, is_pos, w, limit)", &key, &pos, &w) < 0) return NULL;
    Py_ssize_t limit = PyLong_AsSsize_t(args[3]);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    if (self->ring != 1) { PyErr_SetString(PyExc_TypeError, "window_push needs a count ring"); return NULL; }
    if (limit < 1) { PyErr_Format(PyExc_ValueError, "window_push: limit must be >= 1, got %zd", limit); return NULL; }
    if (window_push(self, key, pos, w, limit) < 0) return NULL;
    Py_RETURN_NONE;
}

/* time_push(key, is_pos, w, t, cutoff): add the event at time t (>= every queued time),
   queue it, and expire queued events with time <= cutoff. */
PyObject *CTree_time_push(CTree *self, PyObject *const *args, Py_ssize_t nargs) {
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

PyObject *CTree_expire_until(CTree *self, PyObject *arg) {
    double cutoff = PyFloat_AsDouble(arg);
    if (cutoff == -1.0 && PyErr_Occurred()) return NULL;
    if (self->ring != 2) { PyErr_SetString(PyExc_TypeError, "expire_until needs a timed ring"); return NULL; }
    while (self->qsize && self->qt[self->qhead] <= cutoff)
        if (ring_expire_one(self) < 0) return NULL;
    Py_RETURN_NONE;
}

/* ---- ring access from Python ---- */

PyObject *CTree_q_len(CTree *self, PyObject *Py_UNUSED(ignored)) { return PyLong_FromSsize_t(self->qsize); }

PyObject *CTree_q_push_many(CTree *self, PyObject *args) {
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
PyObject *CTree_q_arrays(CTree *self, PyObject *args) {
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
PyObject *CTree_q_drop(CTree *self, PyObject *arg) {
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k < 0 || k > self->qsize) { PyErr_SetString(PyExc_IndexError, "q_drop count"); return NULL; }
    self->qhead = self->qcap ? (self->qhead + k) % self->qcap : 0;
    self->qsize -= k;
    Py_RETURN_NONE;
}

/* q_count_expired(cutoff) -> number of oldest records with time <= cutoff */
PyObject *CTree_q_count_expired(CTree *self, PyObject *arg) {
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

PyObject *CTree_q_oldest_time(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (!self->qsize || !self->qt) Py_RETURN_NONE;
    return PyFloat_FromDouble(self->qt[self->qhead]);
}

/* q_find(s, y, w) -> position (0 = oldest) of the oldest live record equal to it, or -1. O(n). */
PyObject *CTree_q_find(CTree *self, PyObject *args) {
    double s, w;
    int y;
    if (!PyArg_ParseTuple(args, "did", &s, &y, &w)) return NULL;
    for (Py_ssize_t k = 0; k < self->qsize; k++) {
        Py_ssize_t j = (self->qhead + k) % self->qcap;
        if (self->qs[j] == s && self->qy[j] == y && self->qw[j] == w) return PyLong_FromSsize_t(k);
    }
    return PyLong_FromLong(-1);
}

PyObject *CTree_q_time_at(CTree *self, PyObject *arg) {
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k < 0 || k >= self->qsize || !self->qt) { PyErr_SetString(PyExc_IndexError, "q_time_at"); return NULL; }
    return PyFloat_FromDouble(self->qt[(self->qhead + k) % self->qcap]);
}

PyObject *CTree_q_cancel(CTree *self, PyObject *arg) {
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k < 0 || k >= self->qsize) { PyErr_SetString(PyExc_IndexError, "q_cancel position"); return NULL; }
    self->qy[(self->qhead + k) % self->qcap] = CANCELLED;
    Py_RETURN_NONE;
}
