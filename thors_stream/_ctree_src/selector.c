/* selector.c: selector_step, the compiled hot path of selection.WindowSelector (AdaHedge over count windows). */
#include "ctree.h"

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
PyObject *selector_step(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
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
