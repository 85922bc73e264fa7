/* sort.c: the radix sorts of the batch paths: positions in key order (radix_order), values alone (radix_values), values with tags (radix_tagged). */
#include "ctree.h"

/* One stable LSD pass on the 11-bit digit at bit sh of k1, carrying src along into dst;
   skipped (returns 0) when every key has the same digit. hist is the digit's histogram,
   turned into offsets here. */
static int radix_pass(int sh, uint32_t *hist, Py_ssize_t m, uint64_t **k1, uint64_t **k2, uint32_t **src,
                      uint32_t **dst) {
    if (hist[((*k1)[0] >> sh) & 2047] == (uint32_t)m) return 0; /* one digit: nothing to move */
    uint32_t s = 0;
    for (int d = 0; d < 2048; d++) { uint32_t c = hist[d]; hist[d] = s; s += c; }
    for (Py_ssize_t i = 0; i < m; i++) {
        uint32_t at = hist[((*k1)[i] >> sh) & 2047]++;
        (*k2)[at] = (*k1)[i]; (*dst)[at] = (*src)[i];
    }
    uint64_t *tk = *k1; *k1 = *k2; *k2 = tk;
    uint32_t *to = *src; *src = *dst; *dst = to;
    return 1;
}

/* order[0..m) = the positions of key[0..m) in ascending key order, stable (equal keys keep
   their order). An LSD radix sort on the 22 bits (33 from 2**17 keys on) of the keys'
   sortable bits below the highest bit in which they differ, then an insertion pass that
   orders the keys sharing those bits: few in practice, so two or three passes instead of
   six. When that pass has moved more than 2m keys (keys crowded together), it stops and all
   six digits are sorted: O(m) worst case. 20 bytes of scratch per key. Returns 0, or -1 with
   MemoryError set. */
int radix_order(const double *key, Py_ssize_t m, uint32_t *order) {
    if (m <= 32) { /* insertion sort */
        for (Py_ssize_t i = 0; i < m; i++) {
            uint32_t v = (uint32_t)i;
            Py_ssize_t j = i;
            while (j > 0 && key[order[j - 1]] > key[v]) { order[j] = order[j - 1]; j--; }
            order[j] = v;
        }
        return 0;
    }
    uint64_t *kb = PyMem_Malloc((size_t)m * 2 * sizeof(uint64_t));
    uint32_t *o2 = PyMem_Malloc((size_t)m * sizeof(uint32_t));
    uint32_t hist[3][2048]; /* (on the stack: every digit's only when crowded keys need them) */
    if (!kb || !o2) { PyMem_Free(kb); PyMem_Free(o2); PyErr_NoMemory(); return -1; }
    memset(hist, 0, sizeof hist);
    uint64_t *k1 = kb, *k2 = kb + m, b0 = sort_bits(key[0]), differ = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        uint64_t b = sort_bits(key[i]);
        k1[i] = b; order[i] = (uint32_t)i;
        differ |= b ^ b0;
    }
    uint32_t *src = order, *dst = o2;
    int lo = 0, done = 1;
    if (differ) {
        int hb = 63 - __builtin_clzll(differ), digits = m < ((Py_ssize_t)1 << 17) ? 2 : 3, nd = 0;
        lo = hb + 1 - 11 * digits;
        if (lo < 0) lo = 0;
        for (int sh = lo; sh <= hb; sh += 11) nd++;
        for (Py_ssize_t i = 0; i < m; i++)
            for (int g = 0; g < nd; g++) hist[g][(k1[i] >> (lo + 11 * g)) & 2047]++;
        for (int g = 0; g < nd; g++) radix_pass(lo + 11 * g, hist[g], m, &k1, &k2, &src, &dst);
    }
    /* the keys that share the bits sorted on are adjacent now: order them by insertion */
    Py_ssize_t moves = 0, budget = 2 * m;
    for (Py_ssize_t i = 1; lo && i < m && done; i++) {
        uint64_t v = k1[i];
        if (k1[i - 1] <= v) continue;
        uint32_t o = src[i];
        Py_ssize_t j = i;
        while (j > 0 && k1[j - 1] > v) { k1[j] = k1[j - 1]; src[j] = src[j - 1]; j--; }
        k1[j] = v; src[j] = o;
        moves += i - j;
        if (moves > budget) done = 0;
    }
    if (!done) { /* crowded keys: a full LSD sort (stable, so equal keys keep their order) */
        uint32_t (*all)[2048] = PyMem_Calloc(6, sizeof *all);
        if (!all) { PyMem_Free(kb); PyMem_Free(o2); PyErr_NoMemory(); return -1; }
        for (Py_ssize_t i = 0; i < m; i++)
            for (int p = 0; p < 6; p++) all[p][(k1[i] >> (11 * p)) & 2047]++;
        for (int p = 0; p < 6; p++) radix_pass(11 * p, all[p], m, &k1, &k2, &src, &dst);
        PyMem_Free(all);
    }
    if (src != order) memcpy(order, src, (size_t)m * sizeof(uint32_t));
    PyMem_Free(kb); PyMem_Free(o2);
    return 0;
}

/* From this many values on, radix_values sorts most significant digit first (paired A/Bs of
   a batch that replaces a window of 10**6: 0.82 of the time of two LSD passes; at 10**5, where
   the LSD passes run in cache, the same time with 2**18 and 1.24x with 2**16). */
#define RADIX_MSD (1 << 18)

/* One stable LSD pass on the 11-bit digit at bit sh of the values src -> dst (skipped when
   every value has the same digit); h is the digit's histogram, turned into offsets here. */
static void values_pass(int sh, uint32_t *h, Py_ssize_t m, uint64_t **src, uint64_t **dst) {
    if (h[((*src)[0] >> sh) & 2047] == (uint32_t)m) return;
    uint32_t o = 0;
    for (int d = 0; d < 2048; d++) { uint32_t c = h[d]; h[d] = o; o += c; }
    const uint64_t *a = *src;
    uint64_t *b = *dst;
    for (Py_ssize_t i = 0; i < m; i++) { uint64_t v = a[i]; b[h[(v >> sh) & 2047]++] = v; }
    uint64_t *x = *src; *src = *dst; *dst = x;
}

/* One stable pass on the 8-bit digit at bit sh of the c values src -> dst (a bucket in cache). */
static void values_pass8(int sh, const uint64_t *src, uint64_t *dst, Py_ssize_t c) {
    uint32_t h[256] = {0};
    for (Py_ssize_t i = 0; i < c; i++) h[(src[i] >> sh) & 255]++;
    uint32_t o = 0;
    for (int d = 0; d < 256; d++) { uint32_t k = h[d]; h[d] = o; o += k; }
    for (Py_ssize_t i = 0; i < c; i++) { uint64_t v = src[i]; dst[h[(v >> sh) & 255]++] = v; }
}

/* The buckets [d0, d1) of radix_values's most significant pass (bucket d: tmp[start[d],
   end[d])), each sorted on the bits below (in cache), then the insertion pass over their values
   (a value never moves past its bucket: every value of an earlier bucket is below it). ok: the
   insertion pass moved at most twice as many values as it covered (else the caller sorts every
   digit). No allocation, no Python object: a second thread runs it without the GIL. */
typedef struct {
    uint64_t *a, *tmp;
    const uint32_t *start, *end;
    int d0, d1, sh0, lo;
    int ok;
} __attribute__((aligned(128))) BucketJob;

static void bucket_range(void *arg) {
    BucketJob *j = arg;
    uint64_t *a = j->a, *tmp = j->tmp;
    for (int d = j->d0; d < j->d1 && j->sh0; d++) {
        Py_ssize_t b = j->start[d], c = (Py_ssize_t)j->end[d] - b;
        if (c <= 32) continue; /* (the insertion pass below orders it) */
        if (c <= 1024) { /* one 8-bit digit, back in place */
            values_pass8(j->sh0 - 8 > 0 ? j->sh0 - 8 : 0, tmp + b, a + b, c);
            memcpy(tmp + b, a + b, (size_t)c * sizeof(uint64_t));
        } else { /* two */
            values_pass8(j->lo, tmp + b, a + b, c);
            values_pass8(j->lo + 8, a + b, tmp + b, c);
        }
    }
    Py_ssize_t i0 = j->d0 < 2048 ? j->start[j->d0] : 0, i1 = j->d1 > j->d0 ? j->end[j->d1 - 1] : i0;
    Py_ssize_t moves = 0, budget = 2 * (i1 - i0);
    int ok = 1;
    for (Py_ssize_t i = i0 + 1; i < i1 && ok; i++) { /* (also when lo is 0: a bucket of up to 32 values, or
                                                        one sorted on a single 8-bit digit, may not be sorted on bits below) */
        uint64_t v = tmp[i];
        if (tmp[i - 1] <= v) continue;
        Py_ssize_t k = i;
        while (k > i0 && tmp[k - 1] > v) { tmp[k] = tmp[k - 1]; k--; }
        tmp[k] = v;
        moves += i - k;
        if (moves > budget) ok = 0;
    }
    j->ok = ok;
}

/* From this many values on, the buckets of the most significant pass are shared by two threads
   (when two are allowed) */
#define RADIX_TWO (1 << 19)

/* Sort m values (sort_bits) ascending: a radix sort on the 22 bits below the highest bit in
   which the values differ (two LSD passes of 11 bits; from RADIX_MSD values on, one pass on the
   top 11 bits into buckets and then each bucket, in cache, on the 16 bits below: from RADIX_TWO
   values on, two threads share the buckets), then an insertion pass for the values that share
   those bits (few, unless they crowd: when that pass has moved more than 2m, every digit is
   sorted instead, so O(m) whatever the values). Values
   only, no positions carried (radix_order carries them). tmp: room for m values. Returns the
   array that holds the result (a or tmp), or NULL with MemoryError set. */
uint64_t *radix_values(uint64_t *a, uint64_t *tmp, Py_ssize_t m) {
    if (m <= 32) {
        for (Py_ssize_t i = 1; i < m; i++) {
            uint64_t v = a[i];
            Py_ssize_t j = i;
            while (j > 0 && a[j - 1] > v) { a[j] = a[j - 1]; j--; }
            a[j] = v;
        }
        return a;
    }
    uint64_t differ = 0;
    for (Py_ssize_t i = 1; i < m; i++) differ |= a[i] ^ a[0];
    if (!differ) return a;
    int hb = 63 - __builtin_clzll(differ);
    uint32_t hist[2][2048]; /* (on the stack: a calloc of all six digits' cost more than a pass at 10**4) */
    memset(hist, 0, sizeof hist);
    uint64_t *src = a, *dst = tmp;
    int lo, msd_ok = -1; /* (the most significant pass's buckets do their own insertion pass) */
    if (m < RADIX_MSD) { /* two LSD passes (22 bits) */
        lo = hb + 1 - 22;
        if (lo < 0) lo = 0;
        int nd = 0;
        for (int sh = lo; sh <= hb; sh += 11) nd++;
        for (Py_ssize_t i = 0; i < m; i++) {
            uint64_t v = a[i];
            for (int g = 0; g < nd; g++) hist[g][(v >> (lo + 11 * g)) & 2047]++;
        }
        for (int g = 0; g < nd; g++) values_pass(lo + 11 * g, hist[g], m, &src, &dst);
    } else { /* one pass on the top 11 bits, then each bucket in cache on the 16 bits below */
        int sh0 = hb - 10 > 0 ? hb - 10 : 0;
        lo = sh0 - 16 > 0 ? sh0 - 16 : 0;
        uint32_t *end = hist[0], *start = hist[1];
        for (Py_ssize_t i = 0; i < m; i++) end[(a[i] >> sh0) & 2047]++;
        uint32_t o = 0;
        for (int d = 0; d < 2048; d++) { uint32_t c = end[d]; start[d] = end[d] = o; o += c; }
        for (Py_ssize_t i = 0; i < m; i++) { uint64_t v = a[i]; tmp[end[(v >> sh0) & 2047]++] = v; }
        BucketJob job[2];
        for (int g = 0; g < 2; g++) {
            job[g].a = a; job[g].tmp = tmp; job[g].start = start; job[g].end = end;
            job[g].sh0 = sh0; job[g].lo = lo; job[g].ok = 1;
        }
        int mid = 2048; /* the second thread's buckets: [mid, 2048), about half of the values */
        if (m >= RADIX_TWO && batch_threads >= 2)
            for (mid = 0; mid < 2048 && (Py_ssize_t)end[mid] < m / 2; mid++) {}
        job[0].d0 = 0; job[0].d1 = mid; job[1].d0 = mid; job[1].d1 = 2048;
        if (mid < 2048) {
            run_pair(bucket_range, &job[0], &job[1], 0);
        } else {
            bucket_range(&job[0]);
        }
        msd_ok = job[0].ok && job[1].ok;
        src = tmp; dst = a;
    }
    Py_ssize_t moves = 0, budget = 2 * m;
    int done = msd_ok >= 0 ? msd_ok : 1;
    for (Py_ssize_t i = 1; msd_ok < 0 && lo && i < m && done; i++) {
        uint64_t v = src[i];
        if (src[i - 1] <= v) continue;
        Py_ssize_t j = i;
        while (j > 0 && src[j - 1] > v) { src[j] = src[j - 1]; j--; }
        src[j] = v;
        moves += i - j;
        if (moves > budget) done = 0;
    }
    if (!done) { /* crowded values: every digit */
        uint32_t (*all)[2048] = PyMem_Calloc(6, sizeof *all);
        if (!all) { PyErr_NoMemory(); return NULL; }
        for (Py_ssize_t i = 0; i < m; i++)
            for (int p = 0; p < 6; p++) all[p][(src[i] >> (11 * p)) & 2047]++;
        for (int p = 0; p < 6; p++) values_pass(11 * p, all[p], m, &src, &dst);
        PyMem_Free(all);
    }
    return src;
}

/* One LSD pass on the 11-bit digit at bit sh of the values, carrying their tags (skipped when
   every value has the same digit); h is the digit's histogram, turned into offsets here. */
static void tagged_pass(int sh, uint32_t *h, Py_ssize_t m, uint64_t **v, uint64_t **v2, uint8_t **g,
                        uint8_t **g2) {
    if (h[((*v)[0] >> sh) & 2047] == (uint32_t)m) return;
    uint32_t o = 0;
    for (int d = 0; d < 2048; d++) { uint32_t c = h[d]; h[d] = o; o += c; }
    const uint64_t *a = *v;
    const uint8_t *ga = *g;
    uint64_t *b = *v2;
    uint8_t *gb = *g2;
    for (Py_ssize_t i = 0; i < m; i++) {
        uint64_t x = a[i];
        uint32_t at = h[(x >> sh) & 2047]++;
        b[at] = x; gb[at] = ga[i];
    }
    uint64_t *tv = *v; *v = *v2; *v2 = tv;
    uint8_t *tg = *g; *g = *g2; *g2 = tg;
}

/* Sort m values (sort_bits) ascending with a tag of one byte each: radix_values's method (LSD
   passes on the 22 bits, 33 from 2**17 values on, below the highest bit in which the values
   differ, an insertion pass for the values sharing those bits, every digit when they crowd:
   O(m) whatever the values), carrying the tags. Values of one key keep no particular order of
   their tags. tmp and gtmp: room for m each; all: room for every digit's histogram (6 * 2048),
   zeroed here when used. No allocation, no Python object: a second thread may run it. On return
   *v and *g point at the sorted arrays (the given ones or the scratch). */
void radix_tagged(uint64_t **v, uint8_t **g, uint64_t *tmp, uint8_t *gtmp, Py_ssize_t m, uint32_t (*all)[2048]) {
    uint64_t *a = *v, *b = tmp, differ = 0;
    uint8_t *ga = *g, *gb = gtmp;
    if (m < 2) return;
    for (Py_ssize_t i = 1; i < m; i++) differ |= a[i] ^ a[0];
    if (!differ) return;
    int hb = 63 - __builtin_clzll(differ), digits = m < ((Py_ssize_t)1 << 17) ? 2 : 3, nd = 0;
    int lo = hb + 1 - 11 * digits;
    if (lo < 0) lo = 0;
    for (int sh = lo; sh <= hb; sh += 11) nd++;
    uint32_t (*hist)[2048] = all; /* (the first digits' histograms; all six when they crowd) */
    memset(hist, 0, 3 * sizeof *hist);
    for (Py_ssize_t i = 0; i < m; i++)
        for (int d = 0; d < nd; d++) hist[d][(a[i] >> (lo + 11 * d)) & 2047]++;
    for (int d = 0; d < nd; d++) tagged_pass(lo + 11 * d, hist[d], m, &a, &b, &ga, &gb);
    Py_ssize_t moves = 0, budget = 2 * m;
    int done = 1;
    for (Py_ssize_t i = 1; lo && i < m && done; i++) {
        uint64_t x = a[i];
        if (a[i - 1] <= x) continue;
        uint8_t gx = ga[i];
        Py_ssize_t j = i;
        while (j > 0 && a[j - 1] > x) { a[j] = a[j - 1]; ga[j] = ga[j - 1]; j--; }
        a[j] = x; ga[j] = gx;
        moves += i - j;
        if (moves > budget) done = 0;
    }
    if (!done) { /* crowded values: every digit */
        memset(all, 0, 6 * sizeof *all);
        for (Py_ssize_t i = 0; i < m; i++)
            for (int p = 0; p < 6; p++) all[p][(a[i] >> (11 * p)) & 2047]++;
        for (int p = 0; p < 6; p++) tagged_pass(11 * p, all[p], m, &a, &b, &ga, &gb);
    }
    *v = a; *g = ga;
}
