/*
 * _ctree: the compiled backend of thors_stream's sorted prefix-minimum multiset.
 *
 * A treap (randomised balanced BST) over distinct scores. Each node holds the
 * class weights and counts at its score and, for its subtree, the sum of
 * VAL = a * w1 - b * w0 over its keys and the minimum over the subtree's
 * non-empty key-order prefixes of that sum, with the node reaching it first.
 * The global optimum is read at the root in O(1); an insert, a removal or a
 * weight change is O(log n) expected. Nodes live in one growable arena and are
 * addressed by 32-bit indices (72 bytes per distinct score).
 *
 * Every aggregate is recomputed from the children (never adjusted in place), so
 * no rounding accumulates beyond each node's own w1/w0 running sums.
 * The Python layer validates all input; these functions assume valid input.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    double key, w1, w0, c1, c0; /* this score */
    double sum, minp;           /* subtree: sum of VAL, min non-empty prefix */
    int32_t left, right, arg;   /* children; node reaching minp first */
    uint32_t prio;
} Node;

typedef struct {
    PyObject_HEAD
    Node *nodes;
    int32_t cap, used, free_head, root;
    int ordered; /* nodes[base, base + n_keys) are in key order with no free slots (after a rebuild) */
    int32_t base;
    Py_ssize_t n_keys;
    double a, b;
    uint64_t rng;
} CTree;

#define NIL (-1)

static uint32_t next_prio(CTree *t) {
    uint64_t x = t->rng;
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    t->rng = x;
    return (uint32_t)(x >> 32);
}

static inline void pull(CTree *t, int32_t i) {
    Node *ns = t->nodes, *n = &ns[i];
    double val = t->a * n->w1 - t->b * n->w0, s, best, c;
    int32_t arg;
    if (n->left != NIL) {
        Node *l = &ns[n->left];
        s = l->sum; best = l->minp; arg = l->arg;
        c = s + val;
        if (c < best) { best = c; arg = i; }
        s = c;
    } else {
        s = val; best = val; arg = i;
    }
    if (n->right != NIL) {
        Node *r = &ns[n->right];
        c = s + r->minp;
        if (c < best) { best = c; arg = r->arg; }
        s += r->sum;
    }
    n->sum = s; n->minp = best; n->arg = arg;
}

static int reserve(CTree *t) {
    if (t->free_head != NIL || t->used < t->cap) return 0;
    int64_t cap = t->cap ? (int64_t)t->cap + t->cap / 4 + 16 : 64; /* 1.25x: <= 25% slack */
    if (cap > INT32_MAX) { PyErr_SetString(PyExc_MemoryError, "too many distinct scores"); return -1; }
    Node *ns = PyMem_Realloc(t->nodes, (size_t)cap * sizeof(Node));
    if (!ns) { PyErr_NoMemory(); return -1; }
    t->nodes = ns; t->cap = (int32_t)cap;
    return 0;
}

static int32_t new_node(CTree *t, double key) {
    int32_t i;
    if (t->free_head != NIL) { i = t->free_head; t->free_head = t->nodes[i].left; }
    else i = t->used++;
    Node *n = &t->nodes[i];
    memset(n, 0, sizeof(Node));
    n->key = key; n->left = n->right = NIL; n->prio = next_prio(t);
    t->n_keys++;
    t->ordered = 0;
    return i;
}

static void free_node(CTree *t, int32_t i) {
    t->nodes[i].left = t->free_head;
    t->free_head = i;
    t->n_keys--;
    t->ordered = 0;
}

static int32_t rot_right(CTree *t, int32_t i) {
    Node *ns = t->nodes;
    int32_t l = ns[i].left;
    ns[i].left = ns[l].right; ns[l].right = i;
    pull(t, i); pull(t, l);
    return l;
}

static int32_t rot_left(CTree *t, int32_t i) {
    Node *ns = t->nodes;
    int32_t r = ns[i].right;
    ns[i].right = ns[r].left; ns[r].left = i;
    pull(t, i); pull(t, r);
    return r;
}

/* Remove node i (a subtree root) by rotating it down; returns the new subtree root. */
static int32_t drop(CTree *t, int32_t i) {
    Node *ns = t->nodes;
    int32_t l = ns[i].left, r = ns[i].right, top;
    if (l == NIL) { free_node(t, i); return r; }
    if (r == NIL) { free_node(t, i); return l; }
    if (ns[l].prio > ns[r].prio) {
        top = rot_right(t, i);
        t->nodes[top].right = drop(t, i);
    } else {
        top = rot_left(t, i);
        t->nodes[top].left = drop(t, i);
    }
    pull(t, top);
    return top;
}

/* Add (dw1, dw0, dc1, dc0) at key, creating or deleting its node as needed. */
static int32_t upsert(CTree *t, int32_t i, double key, double dw1, double dw0, double dc1, double dc0) {
    if (i == NIL) {
        if (dc1 + dc0 <= 0) return NIL;
        i = new_node(t, key);
        Node *n = &t->nodes[i];
        n->w1 = dw1; n->w0 = dw0; n->c1 = dc1; n->c0 = dc0;
        pull(t, i);
        return i;
    }
    Node *n = &t->nodes[i];
    if (key < n->key) {
        int32_t c = upsert(t, n->left, key, dw1, dw0, dc1, dc0);
        t->nodes[i].left = c;
        if (c != NIL && t->nodes[c].prio > t->nodes[i].prio) return rot_right(t, i);
    } else if (key > n->key) {
        int32_t c = upsert(t, n->right, key, dw1, dw0, dc1, dc0);
        t->nodes[i].right = c;
        if (c != NIL && t->nodes[c].prio > t->nodes[i].prio) return rot_left(t, i);
    } else {
        n->c1 += dc1; n->c0 += dc0;
        if (n->c1 + n->c0 <= 0) return drop(t, i);
        /* a class with no events left has exactly zero weight */
        n->w1 = n->c1 > 0 ? n->w1 + dw1 : 0.0;
        n->w0 = n->c0 > 0 ? n->w0 + dw0 : 0.0;
    }
    pull(t, i);
    return i;
}

static void repull_all(CTree *t, int32_t i) {
    if (i == NIL) return;
    repull_all(t, t->nodes[i].left);
    repull_all(t, t->nodes[i].right);
    pull(t, i);
}

/* ------------------------------------------------------------------ Python type */

static int CTree_init(CTree *self, PyObject *args, PyObject *kwds) {
    double a, b;
    Py_ssize_t load = 0; /* accepted for signature compatibility, unused */
    static char *kwlist[] = {"pos_coef", "neg_coef", "load", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "dd|n", kwlist, &a, &b, &load)) return -1;
    PyMem_Free(self->nodes);
    self->nodes = NULL; self->cap = self->used = 0;
    self->free_head = self->root = NIL; self->n_keys = 0; self->ordered = 1; self->base = 0;
    self->a = a; self->b = b;
    self->rng = 0x9E3779B97F4A7C15ULL;
    return 0;
}

static void CTree_dealloc(CTree *self) {
    PyMem_Free(self->nodes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *CTree_upsert(CTree *self, double key, double dw1, double dw0, double dc1, double dc0) {
    if (reserve(self) < 0) return NULL;
    self->root = upsert(self, self->root, key, dw1, dw0, dc1, dc0);
    Py_RETURN_NONE;
}

static PyObject *CTree_add(CTree *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "add(key, is_pos, w)"); return NULL; }
    double key = PyFloat_AsDouble(args[0]);
    int pos = PyObject_IsTrue(args[1]);
    double w = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred() || pos < 0) return NULL;
    return pos ? CTree_upsert(self, key, w, 0.0, 1.0, 0.0) : CTree_upsert(self, key, 0.0, w, 0.0, 1.0);
}

static PyObject *CTree_remove(CTree *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) { PyErr_SetString(PyExc_TypeError, "remove(key, is_pos, w)"); return NULL; }
    double key = PyFloat_AsDouble(args[0]);
    int pos = PyObject_IsTrue(args[1]);
    double w = PyFloat_AsDouble(args[2]);
    if (PyErr_Occurred() || pos < 0) return NULL;
    return pos ? CTree_upsert(self, key, -w, 0.0, -1.0, 0.0) : CTree_upsert(self, key, 0.0, -w, 0.0, -1.0);
}

static PyObject *CTree_held_at(CTree *self, PyObject *arg) {
    double key = PyFloat_AsDouble(arg);
    if (key == -1.0 && PyErr_Occurred()) return NULL;
    int32_t i = self->root;
    while (i != NIL) {
        Node *n = &self->nodes[i];
        if (key < n->key) i = n->left;
        else if (key > n->key) i = n->right;
        else return Py_BuildValue("(dddd)", n->w1, n->w0, n->c1, n->c0);
    }
    Py_RETURN_NONE;
}

static PyObject *CTree_best(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (self->root != NIL) {
        Node *r = &self->nodes[self->root];
        if (r->minp < 0.0) return Py_BuildValue("(dd)", r->minp, self->nodes[r->arg].key);
    }
    return Py_BuildValue("(dd)", 0.0, -INFINITY);
}

static PyObject *CTree_threshold(CTree *self, PyObject *Py_UNUSED(ignored)) {
    if (self->root != NIL) {
        Node *r = &self->nodes[self->root];
        if (r->minp < 0.0) return PyFloat_FromDouble(self->nodes[r->arg].key);
    }
    return PyFloat_FromDouble(-INFINITY);
}

static PyObject *CTree_set_coefs(CTree *self, PyObject *args) {
    double a, b;
    if (!PyArg_ParseTuple(args, "dd", &a, &b)) return NULL;
    if (a != self->a || b != self->b) {
        self->a = a; self->b = b;
        repull_all(self, self->root);
    }
    Py_RETURN_NONE;
}

/* ---- bulk merge: for batches that are large next to the tree ---- */

static void collect(CTree *t, int32_t i, Node *out, Py_ssize_t *q) {
    while (i != NIL) {
        Node *n = &t->nodes[i];
        collect(t, n->left, out, q);
        out[(*q)++] = *n;
        i = n->right;
    }
}

/* Balanced tree over out[lo, hi) (sorted); priorities fall with depth so the shape is a
   valid treap, randomised within each depth band so later inserts mix in. */
static int32_t build(CTree *t, int32_t lo, int32_t hi, int depth) {
    if (lo >= hi) return NIL;
    int32_t mid = lo + (hi - lo) / 2;
    Node *n = &t->nodes[mid];
    uint32_t band = depth < 31 ? (0x80000000u >> depth) : 1u;
    n->prio = band + (next_prio(t) & (band - 1));
    n->left = build(t, lo, mid, depth + 1);
    n->right = build(t, mid + 1, hi, depth + 1);
    pull(t, mid);
    return mid;
}

/* Merge the sorted deltas into the in-order node array and rebuild: O(n + m) with
   sequential memory access, versus m random O(log n) descents. The arena is kept in
   key order after a rebuild (``ordered``, nodes at [base, base + n)), so the merge runs
   in place, back to front, ending at base + n + m; the result starts wherever it ends
   up and becomes the new base. The block drifts up by about m per batch and is moved
   back to 0 only when it reaches the end of the arena, which is sized to leave room
   for several batches: one memmove every few batches instead of one per batch. */
static int merge_rebuild(CTree *t, const double *k, const double *a1, const double *a0, const double *c1,
                         const double *c0, Py_ssize_t m) {
    Py_ssize_t n = t->n_keys, q = 0;
    if (n + m + 1 > INT32_MAX / 2) { PyErr_SetString(PyExc_MemoryError, "too many distinct scores"); return -1; }
    if (!t->ordered) {
        Node *tmp = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Node));
        if (!tmp) { PyErr_NoMemory(); return -1; }
        collect(t, t->root, tmp, &q);
        memcpy(t->nodes, tmp, (size_t)n * sizeof(Node));
        PyMem_Free(tmp);
        t->base = 0;
    }
    Py_ssize_t base = t->base;
    if (base + n + m > t->cap) {
        if (n + 5 * m > t->cap) { /* grow, leaving room for several batches */
            Py_ssize_t slack = 8 * m > (n + m) / 8 ? 8 * m : (n + m) / 8;
            Py_ssize_t cap = n + m + slack;
            if (cap > INT32_MAX) cap = INT32_MAX;
            Node *ns = PyMem_Realloc(t->nodes, (size_t)cap * sizeof(Node));
            if (!ns) { PyErr_NoMemory(); return -1; }
            t->nodes = ns; t->cap = (int32_t)cap;
        }
        if (base) memmove(t->nodes, t->nodes + base, (size_t)n * sizeof(Node));
        base = 0;
    }
    Node *a = t->nodes + base;
    Py_ssize_t i = n - 1, j = m - 1, w = n + m;
    while (i >= 0 || j >= 0) {
        Node nd;
        if (j < 0 || (i >= 0 && a[i].key > k[j])) {
            nd = a[i--];
        } else {
            if (i >= 0 && a[i].key == k[j]) {
                nd = a[i--];
            } else {
                memset(&nd, 0, sizeof(Node));
                nd.key = k[j];
            }
            nd.c1 += c1[j]; nd.c0 += c0[j];
            nd.w1 = nd.c1 > 0 ? nd.w1 + a1[j] : 0.0;
            nd.w0 = nd.c0 > 0 ? nd.w0 + a0[j] : 0.0;
            j--;
            if (nd.c1 + nd.c0 <= 0) continue;
        }
        a[--w] = nd; /* w > i always: the write never overtakes the read */
    }
    Py_ssize_t o = n + m - w, start = base + w, end = base + n + m;
    t->used = (int32_t)end; t->free_head = NIL; t->n_keys = o; t->base = (int32_t)start;
    t->root = build(t, (int32_t)start, (int32_t)end, 0);
    t->ordered = 1;
    return 0;
}

/* apply_sorted(keys, dw1, dw0, dc1, dc0): five buffers of float64, same length */
static PyObject *CTree_apply_sorted(CTree *self, PyObject *args) {
    Py_buffer bufs[5];
    int got = 0;
    PyObject *res = NULL;
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
        double *k = bufs[0].buf, *a1 = bufs[1].buf, *a0 = bufs[2].buf, *c1 = bufs[3].buf, *c0 = bufs[4].buf;
        if (m > 64 && m * 64 > self->n_keys) {
            /* a random descent costs ~100x a sequential step once the tree outgrows the cache */
            if (merge_rebuild(self, k, a1, a0, c1, c0, m) < 0) goto done;
        } else {
            for (Py_ssize_t q = 0; q < m; q++) {
                if (reserve(self) < 0) goto done;
                self->root = upsert(self, self->root, k[q], a1[q], a0[q], c1[q], c0[q]);
            }
        }
    }
    res = Py_None; Py_INCREF(res);
done:
    for (int q = 0; q < got; q++) PyBuffer_Release(&bufs[q]);
    return res;
}

/* In-order walk: sums of (w1, w0, c1, c0) over keys <= key. */
static void sum_upto(CTree *t, int32_t i, double key, double *acc) {
    while (i != NIL) {
        Node *n = &t->nodes[i];
        if (n->key <= key) {
            sum_upto(t, n->left, INFINITY, acc);
            acc[0] += n->w1; acc[1] += n->w0; acc[2] += n->c1; acc[3] += n->c0;
            i = n->right;
        } else {
            i = n->left;
        }
    }
}

/* ---- queries restricted to part of the key range (Neyman-Pearson mode) ---- */

static inline double node_val(CTree *t, Node *n) { return t->a * n->w1 - t->b * n->w0; }

/* Minimum over keys k with lo <= k < hi of the prefix sum up to and including k; the
   subtree at i covers keys in the open interval (L, R) and starts after prefix acc.
   Visits keys in order and keeps the first minimum (the smallest key on ties). */
static void range_min(CTree *t, int32_t i, double acc, double L, double R, double lo, double hi,
                      double *best, double *best_key) {
    while (i != NIL) {
        if (R <= lo || L >= hi) return;          /* disjoint */
        Node *n = &t->nodes[i];
        if (L >= lo && R <= hi) {                 /* inside: the subtree's own aggregate */
            double c = acc + n->minp;
            if (c < *best) { *best = c; *best_key = t->nodes[n->arg].key; }
            return;
        }
        double lsum = n->left != NIL ? t->nodes[n->left].sum : 0.0;
        range_min(t, n->left, acc, L, n->key, lo, hi, best, best_key);
        acc += lsum + node_val(t, n);
        if (n->key >= lo && n->key < hi && acc < *best) { *best = acc; *best_key = n->key; }
        L = n->key;                               /* continue with the right subtree */
        i = n->right;
    }
}

/* range_best(lo, hi) -> (min prefix, key) over keys in [lo, hi); (inf, nan) when none. O(log n). */
static PyObject *CTree_range_best(CTree *self, PyObject *args) {
    double lo, hi, best = INFINITY, key = NAN;
    if (!PyArg_ParseTuple(args, "dd", &lo, &hi)) return NULL;
    range_min(self, self->root, 0.0, -INFINITY, INFINITY, lo, hi, &best, &key);
    return Py_BuildValue("(dd)", best, key);
}

/* first_at_least(target) -> the smallest key whose prefix sum reaches target (inf when none).
   Meant for trees whose values are non-negative (counts), where prefix sums only grow. O(log n). */
static PyObject *CTree_first_at_least(CTree *self, PyObject *arg) {
    double target = PyFloat_AsDouble(arg);
    if (target == -1.0 && PyErr_Occurred()) return NULL;
    double acc = 0.0;
    int32_t i = self->root;
    while (i != NIL) {
        Node *n = &self->nodes[i];
        double lsum = n->left != NIL ? self->nodes[n->left].sum : 0.0;
        if (n->left != NIL && acc + lsum >= target) { i = n->left; continue; }
        acc += lsum + node_val(self, n);
        if (acc >= target) return PyFloat_FromDouble(n->key);
        i = n->right;
    }
    return PyFloat_FromDouble(INFINITY);
}

/* total() -> the sum of all values (a * W1 - b * W0). O(1). */
static PyObject *CTree_total(CTree *self, PyObject *Py_UNUSED(ignored)) {
    return PyFloat_FromDouble(self->root != NIL ? self->nodes[self->root].sum : 0.0);
}

static PyObject *CTree_totals_upto(CTree *self, PyObject *arg) {
    double key = PyFloat_AsDouble(arg);
    if (key == -1.0 && PyErr_Occurred()) return NULL;
    double acc[4] = {0, 0, 0, 0};
    sum_upto(self, self->root, key, acc);
    return Py_BuildValue("(dddd)", acc[0], acc[1], acc[2], acc[3]);
}

static void export_walk(CTree *t, int32_t i, double *out, Py_ssize_t n, Py_ssize_t *q) {
    while (i != NIL) {
        Node *nd = &t->nodes[i];
        export_walk(t, nd->left, out, n, q);
        out[*q] = nd->key; out[n + *q] = nd->w1; out[2 * n + *q] = nd->w0;
        out[3 * n + *q] = nd->c1; out[4 * n + *q] = nd->c0;
        (*q)++;
        i = nd->right;
    }
}

/* export() -> bytes of 5 x n_keys float64, rows key, w1, w0, c1, c0 in key order */
static PyObject *CTree_export(CTree *self, PyObject *Py_UNUSED(ignored)) {
    Py_ssize_t n = self->n_keys, q = 0;
    PyObject *b = PyBytes_FromStringAndSize(NULL, 5 * n * (Py_ssize_t)sizeof(double));
    if (!b) return NULL;
    export_walk(self, self->root, (double *)PyBytes_AS_STRING(b), n, &q);
    return b;
}

static PyObject *CTree_get_n_keys(CTree *self, void *closure) { return PyLong_FromSsize_t(self->n_keys); }

static PyObject *CTree_nbytes(CTree *self, PyObject *Py_UNUSED(ignored)) {
    return PyLong_FromSsize_t((Py_ssize_t)self->cap * (Py_ssize_t)sizeof(Node));
}

static PyObject *CTree_get_b(CTree *self, void *closure) { return PyFloat_FromDouble(self->b); }
static PyObject *CTree_get_a(CTree *self, void *closure) { return PyFloat_FromDouble(self->a); }

static PyMethodDef CTree_methods[] = {
    {"add", (PyCFunction)(void (*)(void))CTree_add, METH_FASTCALL, "add(key, is_pos, w): add one event"},
    {"remove", (PyCFunction)(void (*)(void))CTree_remove, METH_FASTCALL, "remove(key, is_pos, w): remove one held event"},
    {"held_at", (PyCFunction)CTree_held_at, METH_O, "held_at(key) -> (w1, w0, c1, c0) or None"},
    {"best", (PyCFunction)CTree_best, METH_NOARGS, "best() -> (min prefix, key or -inf)"},
    {"threshold", (PyCFunction)CTree_threshold, METH_NOARGS, "threshold() -> key of the minimum prefix, or -inf"},
    {"set_coefs", (PyCFunction)CTree_set_coefs, METH_VARARGS, "set_coefs(a, b): O(n)"},
    {"apply_sorted", (PyCFunction)CTree_apply_sorted, METH_VARARGS, "apply_sorted(keys, dw1, dw0, dc1, dc0)"},
    {"totals_upto", (PyCFunction)CTree_totals_upto, METH_O, "totals_upto(key) -> (w1, w0, c1, c0)"},
    {"range_best", (PyCFunction)CTree_range_best, METH_VARARGS, "range_best(lo, hi) -> (min prefix, key) over lo <= key < hi"},
    {"first_at_least", (PyCFunction)CTree_first_at_least, METH_O, "first_at_least(x) -> smallest key with prefix >= x"},
    {"total", (PyCFunction)CTree_total, METH_NOARGS, "total() -> sum of all values"},
    {"export", (PyCFunction)CTree_export, METH_NOARGS, "export() -> bytes (5 x n float64)"},
    {"nbytes", (PyCFunction)CTree_nbytes, METH_NOARGS, "bytes held by the node arena"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef CTree_getset[] = {
    {"n_keys", (getter)CTree_get_n_keys, NULL, "number of distinct keys", NULL},
    {"_a", (getter)CTree_get_a, NULL, "positive coefficient", NULL},
    {"_b", (getter)CTree_get_b, NULL, "negative coefficient", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CTreeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "thors_stream._ctree.CTree",
    .tp_doc = "Treap of distinct scores with O(1) minimum prefix sum (compiled backend).",
    .tp_basicsize = sizeof(CTree),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)CTree_init,
    .tp_dealloc = (destructor)CTree_dealloc,
    .tp_methods = CTree_methods,
    .tp_getset = CTree_getset,
};

static struct PyModuleDef ctree_module = {
    PyModuleDef_HEAD_INIT, "_ctree", "Compiled backend of thors_stream's prefix-minimum multiset.", -1, NULL,
};

PyMODINIT_FUNC PyInit__ctree(void) {
    if (PyType_Ready(&CTreeType) < 0) return NULL;
    PyObject *m = PyModule_Create(&ctree_module);
    if (!m) return NULL;
    Py_INCREF(&CTreeType);
    if (PyModule_AddObject(m, "CTree", (PyObject *)&CTreeType) < 0) {
        Py_DECREF(&CTreeType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
