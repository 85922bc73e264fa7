/* wbatch.c: a count window's large batch on a plain tree, as count changes by key (one tagged radix sort) applied by two threads. */
#include "ctree.h"

/*
 * The steady state of a sliding count window over scores that rarely repeat: each batch adds m
 * events and expires about as many, at keys spread over a tree far larger than the batch. When
 * the tree is plain (every score's weights are its counts), every event of the batch weighs 1
 * and so does every ring record that expires (a plain tree may hold events of other weights: see
 * WeightBlock), an event's whole change is a count, so the batch is a list of count changes by
 * key:
 *
 *   1. the sortable bits of the added events and of the expiring ones, each with a tag (its
 *      class; added or expiring), sorted together (radix_tagged);
 *   2. one pass over the runs of equal bits: per distinct key, the change of each class count
 *      (a key whose events cancel out is dropped: its counts end as they were);
 *   3. the two threads over ROW_CHUNKS chunks of the keys, each chunk the keys of whole inner
 *      nodes of level 1 (so the threads never share one), a thread taking the next chunk as soon
 *      as it is free: per chunk, a pass over its inner nodes maps the keys to their leaves (one
 *      descent per level-1 node, then a merge with its separators), a second pass changes each
 *      leaf in place (ahead of it, the leaves of the next entries are loaded) and, LAG leaves
 *      later, recomputes its aggregate into its parent; once a level-1 node's leaves are all
 *      done and fresh, that node's aggregate goes into its own parent (that entry's stale bit
 *      cleared with an atomic and: the threads may share a level-2 node);
 *   4. serially: the stale marks above, and the keys of the leaves whose shape changes (a split,
 *      a merge) through apply_runs, one row per key.
 *
 * A key's net change gives the end state the events give one by one (additions before
 * removals): counts are integers, and a plain tree's weights are its counts. A key that is not
 * held takes the representation of its first added event (of the two zeros, the one that came
 * first), as a sorted per-event batch gives it. The removals are of held events (the ring's
 * records), so nothing here can raise KeyError; a count past 2**32 - 1 is left to apply_runs,
 * which raises as the per-event path does.
 */

long long row_batches; /* tests: batches applied here (_path_counters) */

/* The next n bytes of the scratch at *at, aligned to 64 (a batch's scratch is one block, some
   160 bytes a change). */
static void *carve(char **at, size_t n) {
    char *p = *at;
    *at += (n + 63) & ~(size_t)63;
    return p;
}

/* The batch's count changes by key, ascending: key, change of the positives' count, of the
   negatives'. */
typedef struct {
    double *key;
    int64_t *d1, *d0;
    Py_ssize_t n;
} RowList;

/* R from the added events s, y [q0, q1) and the e_old oldest ring records (cancelled ones
   skipped): their sortable bits, each with a tag (bit 0: positive; bit 1: expiring), sorted
   together (radix_tagged; v and g: room for their m values and tags, tmp and gtmp as much
   scratch, all the digit histograms), then per run of equal bits the change of each class count
   (+1 or -1 a tagged value, no branch on the tag); a key whose changes cancel out is dropped. A
   zero key is the first zero among the added events (see first_zero). */
static void count_rows(const CTree *t, const double *s, const uint8_t *y, Py_ssize_t q0, Py_ssize_t q1,
                       Py_ssize_t e_old, uint64_t *v, uint8_t *g, uint64_t *tmp, uint8_t *gtmp,
                       uint32_t (*all)[2048], RowList *R) {
    Py_ssize_t c = 0;
    for (Py_ssize_t q = q0; q < q1; q++, c++) { v[c] = sort_bits(s[q]); g[c] = y[q] != 0; }
    Py_ssize_t j = t->qhead, left = e_old; /* up to two runs of the ring */
    while (left > 0) {
        Py_ssize_t run = t->qcap - j < left ? t->qcap - j : left;
        for (Py_ssize_t u = j; u < j + run; u++) {
            uint8_t yy = t->qy[u];
            if (yy == CANCELLED) continue;
            v[c] = sort_bits(t->qs[u]); g[c] = 2 | (yy != 0); c++;
        }
        left -= run;
        j = 0;
    }
    radix_tagged(&v, &g, tmp, gtmp, c, all);
    static const int8_t add1[4] = {0, 1, 0, -1}, add0[4] = {1, 0, -1, 0};
    uint64_t zero = sort_bits(0.0);
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < c;) {
        uint64_t b = v[i];
        int64_t d1 = 0, d0 = 0;
        for (; i < c && v[i] == b; i++) { d1 += add1[g[i]]; d0 += add0[g[i]]; }
        if (!d1 && !d0) continue; /* its events cancel out */
        R->key[n] = b == zero ? first_zero(s, q0, q1) : unsort_bits(b);
        R->d1[n] = d1; R->d0[n] = d0;
        n++;
    }
    R->n = n;
}

/* ------------------------------------------------------------------ the two threads */

/* A leaf with keys to change: the leaf, its slot in its level-1 node, that node's record,
   and its first row. */
typedef struct {
    int32_t leaf, idx1, node;
    Py_ssize_t r0;
} RowLeaf;

/* A level-1 node met by a chunk: what became of it. (The path to it is kept apart, in RowWork's
   paths: node and child taken per depth 0 .. H - 1, the last pair the level-1 node and its first
   leaf's slot.) */
typedef struct {
    int8_t changed;  /* some leaf of it changed in place */
    int8_t deferred; /* some leaf of it left to the serial pass */
    int8_t done;     /* its aggregate recomputed, in its parent's entry (which is not stale) */
} NodeRec;

/* A run of rows over whole level-1 nodes, done by one thread: its rows [q0, q1), and how many
   level-1 node records and leaves left to the serial pass it wrote (in the shared scratch, at
   its offset q0). */
typedef struct {
    Py_ssize_t q0, q1;
    Py_ssize_t nnodes, ndefer;
} Chunk;

/* The batch as the two threads share it: the rows, the scratch (m entries each, 2m for the
   deferred pairs), the chunks and the next one to take (each thread takes the next one when
   done with its own, so neither waits long for the other). */
typedef struct {
    CTree *t;
    const double *key;
    const int64_t *d1, *d0;
    RowLeaf *ent;
    NodeRec *nodes;
    int32_t *paths; /* 2 * height per entry of nodes */
    Py_ssize_t *defer;
    Chunk *chunk;
    int nchunks;
    int next; /* (taken with an atomic add) */
} RowWork;

typedef struct {
    RowWork *w;
    Py_ssize_t dkeys, multi; /* change in the key count; leaves changed at two keys or more */
} __attribute__((aligned(128))) RowThread; /* (one thread's counters never share a line with the other's) */

/* The rows [u, v) of leaf L (all its keys in range) applied in place when the leaf keeps its
   shape: returns the number of keys changed (>= 1) and adds the change of the key count to *dkeys. Else (its key count would
   leave [LMIN, LCAP], more than PLAN_MAX keys change, or a count would leave [0, 2**32 - 1])
   returns 0 and changes nothing. Keys that leave are closed right to left first, then the
   others written left to right, each slot moved by the keys that left or came in on its left
   (as leaf_in_place in runs.c). */
#define ROW_PLAN_MAX 40
static int rows_in_place(CTree *t, Leaf *L, const double *key, const int64_t *d1, const int64_t *d0,
                         Py_ssize_t u, Py_ssize_t v, Py_ssize_t *dkeys) {
    struct { int32_t pos; uint32_t c1, c0; int8_t exists, keep; } plan[ROW_PLAN_MAX];
    if (v - u > ROW_PLAN_MAX) return 0;
    int32_t n = L->n, pos = 0, np = 0;
    for (Py_ssize_t r = u; r < v; r++, np++) {
        pos = count_below(L, pos, key[r]);
        int exists = pos < L->n && L->key[pos] == key[r];
        int64_t n1 = d1[r], n0 = d0[r];
        if (exists) { n1 += L->c1[pos]; n0 += L->c0[pos]; }
        if (n1 < 0 || n0 < 0 || n1 > UINT32_MAX || n0 > UINT32_MAX) return 0; /* (apply_runs raises) */
        int keep = n1 + n0 > 0;
        n += (keep && !exists) - (!keep && exists);
        plan[np].pos = pos; plan[np].c1 = (uint32_t)n1; plan[np].c0 = (uint32_t)n0;
        plan[np].exists = (int8_t)exists; plan[np].keep = (int8_t)keep;
    }
    if (n < LMIN || n > LCAP) return 0;
    for (int j = np - 1; j >= 0; j--)
        if (plan[j].exists && !plan[j].keep) { leaf_close(t, L, plan[j].pos); (*dkeys)--; }
    int32_t shift = 0;
    for (int j = 0; j < np; j++) {
        if (!plan[j].keep) { shift -= plan[j].exists; continue; }
        int32_t at = plan[j].pos + shift;
        if (!plan[j].exists) { leaf_open(t, L, at); L->key[at] = key[u + j]; (*dkeys)++; shift++; }
        set_counts(L, at, plan[j].c1, plan[j].c0);
    }
    return np;
}

/* One chunk's rows: their leaves found, changed in place, aggregated. */
static void row_chunk(RowWork *w, Chunk *c, Py_ssize_t *dkeys_out, Py_ssize_t *multi_out) {
    enum { AHEAD = 6 }; /* leaves loaded ahead (as half_run) */
    CTree *t = w->t;
    const double *key = w->key;
    const int64_t *d1 = w->d1, *d0 = w->d0;
    RowLeaf *ent = w->ent + c->q0;
    NodeRec *nodes = w->nodes + c->q0;
    int32_t *paths = w->paths + 2 * t->height * c->q0;
    Py_ssize_t *defer = w->defer + 2 * c->q0, q1 = c->q1;
    int H = t->height; /* >= 2 */
    Py_ssize_t ne = 0, nn = 0, nd = 0, dkeys = 0, multi = 0;
    /* 1. the leaves: per level-1 node, one descent, then its separators merged with the keys */
    for (Py_ssize_t q = c->q0; q < q1;) {
        NodeRec *nr = &nodes[nn];
        int32_t *path = paths + 2 * H * nn;
        nr->changed = nr->deferred = nr->done = 0;
        int32_t node = t->root, i = 0;
        double hi1 = INFINITY; /* the level-1 node's upper bound */
        const Inner *N = NULL;
        for (int l = 0; l < H; l++) {
            N = &t->inners[node];
            i = child_index(N, key[q]);
            if (l < H - 1 && i + 1 < N->n) hi1 = N->sep[i + 1];
            path[2 * l] = node; path[2 * l + 1] = i;
            node = N->child[i];
        }
        while (q < q1 && key[q] < hi1) {
            while (i + 1 < N->n && N->sep[i + 1] <= key[q]) i++;
            double up = i + 1 < N->n ? N->sep[i + 1] : hi1;
            RowLeaf *e = &ent[ne++];
            e->leaf = N->child[i]; e->idx1 = i; e->node = (int32_t)nn; e->r0 = q;
            for (q++; q < q1 && key[q] < up; q++) {}
        }
        nn++;
    }
    /* 2. each leaf in place, then (LAG leaves later) its aggregate into its parent, and each
       level-1 node's once its leaves are done. (The lag: the aggregate's wide loads of the counts
       just shifted by narrow stores cannot take them from the store buffer, and would wait for
       them to reach the cache; LAG leaves later they have.) */
    enum { LAG = 2 };
    int8_t ok[LAG + 1]; /* per leaf in flight: changed in place */
    for (Py_ssize_t j = 0; j < ne && j < AHEAD; j++) prefetch_leaf_l2(t, ent[j].leaf);
    for (Py_ssize_t j = 0; j < ne + LAG; j++) {
        if (j < ne) {
            if (j + AHEAD < ne) prefetch_leaf_l2(t, ent[j + AHEAD].leaf);
            const RowLeaf *e = &ent[j];
            Py_ssize_t r1 = j + 1 < ne ? ent[j + 1].r0 : q1;
            NodeRec *nr = &nodes[e->node];
            int keys = rows_in_place(t, &t->leaves[e->leaf], key, d1, d0, e->r0, r1, &dkeys);
            ok[j % (LAG + 1)] = keys > 0;
            if (keys) {
                multi += keys > 1;
                nr->changed = 1;
            } else {
                defer[2 * nd] = e->r0; defer[2 * nd + 1] = r1;
                nd++;
                nr->deferred = 1;
            }
        }
        Py_ssize_t jb = j - LAG; /* the leaf whose aggregate is due */
        if (jb < 0) continue;
        const RowLeaf *e = &ent[jb];
        NodeRec *nr = &nodes[e->node];
        const int32_t *path = paths + 2 * H * e->node;
        Inner *P = &t->inners[path[2 * (H - 1)]];
        if (ok[jb % (LAG + 1)]) {
            leaf_agg(t, &t->leaves[e->leaf], &P->agg[e->idx1]);
            P->mask &= ~BIT(e->idx1);
        }
        if (jb + 1 == ne || ent[jb + 1].node != e->node) { /* the node's last leaf */
            if (nr->changed && !nr->deferred && !(P->mask & bits_below(P->n))) {
                Inner *P2 = &t->inners[path[2 * (H - 2)]];
                int32_t i2 = path[2 * (H - 2) + 1];
                inner_agg(P, &P2->agg[i2], 1);
                /* (the other half may clear another bit of this node's mask meanwhile) */
                __atomic_fetch_and(&P2->mask, ~BIT(i2), __ATOMIC_RELAXED);
                nr->done = 1;
            }
        }
    }
    c->nnodes = nn; c->ndefer = nd;
    *dkeys_out += dkeys; *multi_out += multi;
}

/* A thread's work: the next chunk not taken, until none is left. */
static void row_worker(void *arg) {
    RowThread *rt = arg;
    RowWork *w = rt->w;
    Py_ssize_t dkeys = 0, multi = 0;
    for (;;) {
        int k = __atomic_fetch_add(&w->next, 1, __ATOMIC_RELAXED);
        if (k >= w->nchunks) break;
        row_chunk(w, &w->chunk[k], &dkeys, &multi);
    }
    rt->dkeys = dkeys; rt->multi = multi;
}

/* The chunks' bounds: chunk c starts at the first row of the level-1 node that holds row
   c * m / ROW_CHUNKS (or where chunk c - 1 starts, when that is later: chunk c - 1 is then
   empty), so no level-1 node is shared by two chunks. */
#define ROW_CHUNKS 32
static void make_chunks(const CTree *t, const double *key, Py_ssize_t m, Chunk *chunk) {
    int H = t->height;
    Py_ssize_t start = 0;
    for (int c = 0; c < ROW_CHUNKS; c++) {
        Py_ssize_t next = m;
        if (c + 1 < ROW_CHUNKS && m) {
            Py_ssize_t target = (c + 1) * m / ROW_CHUNKS;
            int32_t node = t->root;
            double lo1 = -INFINITY; /* the lower bound of target's level-1 node */
            for (int l = 0; l < H - 1; l++) {
                const Inner *N = &t->inners[node];
                int32_t i = child_index(N, key[target]);
                if (i) lo1 = N->sep[i];
                node = N->child[i];
            }
            Py_ssize_t lo = start, hi = target;
            while (lo < hi) {
                Py_ssize_t mid = (lo + hi) / 2;
                if (key[mid] < lo1) lo = mid + 1; else hi = mid;
            }
            next = lo;
        }
        chunk[c].q0 = start; chunk[c].q1 = next;
        chunk[c].nnodes = chunk[c].ndefer = 0;
        start = next;
    }
}

/* The serial pass after the threads: the key count, the stale marks above the level-1 nodes
   (above their parents' for the nodes done in the threads), then the leaves left over, in key
   order, one row per key (its count changes, which are its weight changes: the tree is plain),
   gathered in buf (room for 5m doubles, had before the threads changed anything). Returns 0,
   or -1 with an exception set (the tree then marked broken when the threads changed it;
   apply_runs marks its own partial failures). */
static int rows_serial(CTree *t, const RowWork *w, const RowList *R, Py_ssize_t dkeys, double *buf) {
    int H = t->height, changed = 0, rc = 0;
    t->n_keys += dkeys;
    Py_ssize_t left = 0;
    for (int c = 0; c < w->nchunks; c++) {
        const Chunk *ch = &w->chunk[c];
        deferred_runs += ch->ndefer;
        for (Py_ssize_t g = 0; g < ch->nnodes; g++) {
            const NodeRec *nr = &w->nodes[ch->q0 + g];
            const int32_t *path = w->paths + 2 * H * (ch->q0 + g);
            if (!nr->changed) continue;
            changed = 1;
            for (int l = 0; l < H - 1; l++) { t->pnode[l] = path[2 * l]; t->pidx[l] = path[2 * l + 1]; }
            mark_from(t, nr->done ? H - 3 : H - 2);
        }
        for (Py_ssize_t g = 0; g < ch->ndefer; g++) left += w->defer[2 * (ch->q0 + g) + 1] - w->defer[2 * (ch->q0 + g)];
    }
    if (changed) t->version++;
    if (left) {
        double *k = buf, *a1 = buf + left, *a0 = buf + 2 * left, *c1 = buf + 3 * left, *c0 = buf + 4 * left;
        Py_ssize_t o = 0;
        for (int c = 0; c < w->nchunks; c++) {
            const Chunk *ch = &w->chunk[c];
            for (Py_ssize_t g = 0; g < ch->ndefer; g++)
                for (Py_ssize_t r = w->defer[2 * (ch->q0 + g)]; r < w->defer[2 * (ch->q0 + g) + 1]; r++, o++) {
                    k[o] = R->key[r];
                    a1[o] = c1[o] = (double)R->d1[r];
                    a0[o] = c0[o] = (double)R->d0[r];
                }
        }
        rc = apply_runs(t, k, a1, a0, c1, c0, left);
    }
    if (rc < 0 && changed) t->broken = 1;
    return rc;
}

/* A count window's batch by count changes (see the top of this file): the added events s, y
   [q0, q1) (w NULL: every weight 1) and the removal of the e_old oldest ring records; the ring
   itself is the caller's. Taken when the tree is plain, every weight of the batch and of the
   expiring records is 1, two threads are allowed, the tree has two inner levels or more and the
   batch is large for a thread but small next to the tree (apply_sorted_impl would rebuild it).
   The calling thread sorts the added and the expiring events and merges them into rows, makes
   the chunks, starts the second thread, and both take chunks (row_worker); then the serial
   pass. The batch's own memory is had before anything changes; the serial pass's splits may ask
   for more, as apply_runs does on one thread (a failure there leaves the summary broken, as it
   does there). Returns 1 when applied, 0 when not taken
   (nothing changed), -1 with an exception set. */
int apply_window_rows(CTree *t, const double *s, const uint8_t *y, const double *w, Py_ssize_t q0, Py_ssize_t q1,
                      Py_ssize_t e_old) {
    Py_ssize_t ma = q1 - q0, m = ma + e_old;
    if (!t->plain || batch_threads < 2 || t->height < 2 || m < 4096 || m * rebuild_ratio > t->n_keys) return 0;
    for (Py_ssize_t q = q0; w && q < q1; q++)
        if (w[q] != 1.0) return 0;
    if (!ring_unit_weights(t, e_old)) return 0; /* (a plain tree may hold events of other weights) */
    if (reserve(t, t->height + 3) < 0) return -1;
    RowWork W = {0};
    W.t = t;
    RowList R = {0};
    int H = t->height;
    size_t sizes[] = {
        (size_t)m * 2 * sizeof(uint64_t), (size_t)m * 2, 6 * 2048 * sizeof(uint32_t), /* values, tags, histograms */
        (size_t)m * sizeof(double), (size_t)m * 2 * sizeof(int64_t),                  /* rows */
        (size_t)m * sizeof(RowLeaf), (size_t)m * sizeof(NodeRec), (size_t)m * 2 * H * sizeof(int32_t),
        (size_t)m * 2 * sizeof(Py_ssize_t), ROW_CHUNKS * sizeof(Chunk), (size_t)m * 5 * sizeof(double)};
    size_t total = 0;
    for (size_t g = 0; g < sizeof sizes / sizeof *sizes; g++) total += (sizes[g] + 63) & ~(size_t)63;
    char *block = PyMem_Malloc(total), *at = block;
    if (!block) { PyErr_NoMemory(); return -1; }
    uint64_t *vals = carve(&at, sizes[0]); /* values, then scratch */
    uint8_t *tags = carve(&at, sizes[1]);
    uint32_t (*all)[2048] = carve(&at, sizes[2]);
    R.key = carve(&at, sizes[3]);
    R.d1 = carve(&at, sizes[4]);
    R.d0 = R.d1 + m;
    W.ent = carve(&at, sizes[5]);
    W.nodes = carve(&at, sizes[6]);
    W.paths = carve(&at, sizes[7]);
    W.defer = carve(&at, sizes[8]);
    W.chunk = carve(&at, sizes[9]);
    double *left_rows = carve(&at, sizes[10]); /* the serial pass's rows */
    count_rows(t, s, y, q0, q1, e_old, vals, tags, vals + m, tags + m, all, &R);
    W.key = R.key; W.d1 = R.d1; W.d0 = R.d0;
    make_chunks(t, R.key, R.n, W.chunk);
    W.nchunks = ROW_CHUNKS;
    RowThread th[2];
    for (int j = 0; j < 2; j++) { th[j].w = &W; th[j].dkeys = th[j].multi = 0; }
    run_pair(row_worker, &th[0], &th[1], SPIN_MAX); /* (with no second thread, th[0] takes every chunk) */
    row_batches++;
    two_thread_batches++; /* (the two-thread batches' counters count these too) */
    multi_key_leaves += th[0].multi + th[1].multi;
    int rc = rows_serial(t, &W, &R, th[0].dkeys + th[1].dkeys, left_rows) < 0 ? -1 : 1;
    PyMem_Free(block);
    return rc;
}
