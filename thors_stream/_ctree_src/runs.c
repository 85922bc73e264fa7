/* runs.c: sorted changes applied leaf by leaf: the finger, apply_runs (one thread), apply_runs_two (two threads). */
#include "ctree.h"

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
int apply_runs(CTree *t, const double *k, const double *a1, const double *a0, const double *d1,
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

/* The second thread of run_pair: its work, then the word that it is done. */
typedef struct {
    void (*fn)(void *);
    void *arg;
    PyThread_type_lock done; /* held until the work is done */
    int finished;            /* set as the work ends (the first thread spins on it a while) */
} PairJob;

static void pair_second(void *p) {
    PairJob *j = p;
    j->fn(j->arg);
    __atomic_store_n(&j->finished, 1, __ATOMIC_RELEASE);
    PyThread_release_lock(j->done);
}

/* Run fn(a) on the calling thread and fn(b) on a second thread, and return once both are done
   (fn(b) runs here too, after fn(a), when no lock or thread is to be had). fn must not allocate,
   raise or touch a Python object: the second thread runs without the GIL, while the calling
   thread keeps it. Done first, the calling thread spins up to spin pauses before it sleeps on
   the lock: a sleeping thread's wake-up cost about 7% of a batch at 10**6 (paired A/Bs: 0.90-0.96
   of the time with a spin of SPIN_MAX). */
void run_pair(void (*fn)(void *), void *a, void *b, int spin) {
    PairJob j = {fn, b, PyThread_allocate_lock(), 0};
    int two = 0;
    if (j.done) {
        PyThread_acquire_lock(j.done, WAIT_LOCK);
        two = PyThread_start_new_thread(pair_second, &j) != PYTHREAD_INVALID_THREAD_ID;
        if (!two) PyThread_release_lock(j.done);
    }
    fn(a);
    if (two) {
        for (int s = 0; s < spin && !__atomic_load_n(&j.finished, __ATOMIC_ACQUIRE); s++) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        PyThread_acquire_lock(j.done, WAIT_LOCK); /* the second thread is done */
        PyThread_release_lock(j.done);
    } else {
        fn(b);
    }
    if (j.done) PyThread_free_lock(j.done);
}

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
int batch_threads = 2; /* tests: 1 = always serial */
long long two_thread_batches, deferred_runs, multi_key_leaves; /* tests: what the two-thread path did */

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
} __attribute__((aligned(128))) Half;
/* (aligned: the two halves sit side by side on the caller's stack, and a line holding one's
   counters and the other's pointers would be written by one thread while the other reads it;
   the counters themselves are kept in locals while a half runs) */

/* The events [q, r) all fall in leaf L: apply them in place if that keeps the leaf's
   shape (returns the number of keys changed, >= 1; *dkeys takes the change in the number of
   keys), else change nothing (returns 0). One pass plans each key's change (its
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

static int leaf_in_place(CTree *t, Leaf *L, const Half *h, Py_ssize_t q, Py_ssize_t r, Py_ssize_t *dkeys) {
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
        if (plan[j].exists && !plan[j].keep) { leaf_close(t, L, plan[j].pos); (*dkeys)--; }
    int32_t shift = 0;
    for (int j = 0; j < np; j++) {
        const KeyPlan *p = &plan[j];
        if (!p->keep) { shift -= p->exists; continue; }
        int32_t at = p->pos + shift;
        if (!p->exists) { leaf_open(t, L, at); L->key[at] = k[p->u]; (*dkeys)++; shift++; }
        slot_write(t, L, at, &p->s); /* no lo block to allocate: checked above */
    }
    return np;
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
    Py_ssize_t dkeys = 0, multi = 0, ndefer = 0, npaths = 0; /* (kept here, stored at the end) */
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
        int changed = leaf_in_place(t, L, h, q, r, &dkeys);
        if (changed) {
            multi += changed > 1;
            Inner *P = &t->inners[e->node1];
            leaf_agg(t, L, &P->agg[e->idx1]);
            P->mask &= ~BIT(e->idx1);
            if (e->node1 != parent) { /* the path above this level-1 node, marked later */
                parent = e->node1;
                memcpy(h->paths + npaths * 2 * (H - 1), e->path, (size_t)(2 * (H - 1)) * sizeof(int32_t));
                npaths++;
            }
        } else {
            h->defer[2 * ndefer] = q; h->defer[2 * ndefer + 1] = r;
            ndefer++;
        }
        tail++;
    }
    h->dkeys = dkeys; h->multi = multi; h->ndefer = ndefer; h->npaths = npaths;
}

/* apply_runs with two threads (see above); falls back to apply_runs when the batch is
   small, the tree is shallow, or a thread or scratch memory is not to be had. */
int apply_runs_two(CTree *t, const double *k, const double *a1, const double *a0, const double *d1,
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
    if (!defer || !paths || !buf) {
        PyMem_Free(defer); PyMem_Free(paths); PyMem_Free(buf);
        return apply_runs(t, k, a1, a0, d1, d0, m);
    }
    for (int j = 0; j < 2; j++) {
        Half *h = &half[j];
        h->t = t; h->k = k; h->a1 = a1; h->a0 = a0; h->d1 = d1; h->d0 = d0;
        h->q0 = j ? split : 0; h->q1 = j ? m : split;
        h->defer = defer + 2 * h->q0; h->ndefer = 0;
        h->paths = paths + (Py_ssize_t)j * npath * 2 * (H - 1); h->npaths = 0;
        h->dkeys = 0; h->multi = 0;
    }
    run_pair(half_run, &half[0], &half[1], SPIN_MAX);
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
