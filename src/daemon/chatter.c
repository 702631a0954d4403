/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chatter.h"
#include "hashmap.h"

typedef struct Entry {
        unsigned long n;        /* this window's count; the first, journaled, is not in it */
} Entry;

/* One (kind, peer) in this window. */
typedef struct Tally {
        Hashmap *keys;          /* key -> Entry */
        unsigned long total;    /* answers counted */
        unsigned long folded;   /* of those, for keys not remembered */
        unsigned first;         /* keys journaled on their own */
        size_t key_bytes;       /* what its keys take */
} Tally;

struct Chatter {
        Hashmap *peers[_CHATTER_KIND_MAX];      /* peer -> Tally */
        unsigned long others[_CHATTER_KIND_MAX]; /* answers of peers past CHATTER_PEERS_MAX, counted */
        size_t n_keys;          /* remembered, every tally together */
        size_t key_bytes;
        unsigned first;         /* journaled on their own, every tally together */
        unsigned long pending;  /* counted, not yet summarized */
};

static void tally_free(void *p) {
        Tally *t = p;

        if (!t)
                return;
        hashmap_free(t->keys);
        free(t);
}

int chatter_new(Chatter **ret) {
        Chatter *c = calloc(1, sizeof(Chatter));

        if (!c)
                return -ENOMEM;
        for (size_t k = 0; k < _CHATTER_KIND_MAX; k++) {
                c->peers[k] = hashmap_new(tally_free);
                if (!c->peers[k]) {
                        chatter_free(c);
                        return -ENOMEM;
                }
        }
        *ret = c;
        return 0;
}

Chatter *chatter_free(Chatter *c) {
        if (!c)
                return NULL;
        for (size_t k = 0; k < _CHATTER_KIND_MAX; k++)
                hashmap_free(c->peers[k]);
        free(c);
        return NULL;
}

/* The peer's tally of kind, made on its first answer; NULL with 0 when the window knows
 * CHATTER_PEERS_MAX peers of the kind already. */
static int tally_get(Chatter *c, ChatterKind kind, const char *peer, Tally **ret) {
        Tally *t = hashmap_get(c->peers[kind], peer);
        int r;

        if (t || hashmap_size(c->peers[kind]) >= CHATTER_PEERS_MAX) {
                *ret = t;
                return 0;
        }
        t = calloc(1, sizeof(Tally));
        if (!t)
                return -ENOMEM;
        t->keys = hashmap_new(free);
        if (!t->keys) {
                free(t);
                return -ENOMEM;
        }
        r = hashmap_put(c->peers[kind], peer, t);
        if (r < 0) {
                tally_free(t);
                return r;
        }
        *ret = t;
        return 0;
}

/* Whether the window may remember one more key for t. */
static bool room_for_key(const Chatter *c, const Tally *t, size_t n) {
        return hashmap_size(t->keys) < CHATTER_KEYS_PER_PEER && c->n_keys < CHATTER_KEYS_MAX &&
                t->key_bytes + n <= CHATTER_KEY_BYTES_PER_PEER && c->key_bytes + n <= CHATTER_KEY_BYTES_MAX;
}

int chatter_note(Chatter *c, ChatterKind kind, const char *peer, const char *key) {
        size_t n = strlen(key) + 1;
        Entry *e = NULL;
        Tally *t;
        int r;

        assert(c);

        r = tally_get(c, kind, peer, &t);
        if (r < 0)
                return r;
        if (!t) {
                c->others[kind]++;
                c->pending++;
                return 0;
        }

        e = hashmap_get(t->keys, key);
        if (!e && room_for_key(c, t, n)) {
                /* Remembered with no count when it is journaled: its own record says it. */
                e = calloc(1, sizeof(Entry));
                if (!e)
                        return -ENOMEM;
                r = hashmap_put(t->keys, key, e);
                if (r < 0) {
                        free(e);
                        return r;
                }
                c->n_keys++;
                t->key_bytes += n;
                c->key_bytes += n;
                if (t->first < CHATTER_FIRST_PER_PEER && c->first < CHATTER_FIRST_PER_WINDOW) {
                        t->first++;
                        c->first++;
                        return 1;
                }
        } else if (!e && t->first < CHATTER_FIRST_PER_PEER && c->first < CHATTER_FIRST_PER_WINDOW) {
                /* Not remembered, so a repeat is journaled again: still within the same room. */
                t->first++;
                c->first++;
                return 1;
        }

        if (e)
                e->n++;
        else
                t->folded++;
        t->total++;
        c->pending++;
        return 0;
}

static void top_insert(ChatterSummary *s, const char *key, unsigned long n) {
        size_t i = s->n_top < CHATTER_TOP ? s->n_top++ : CHATTER_TOP;

        /* Insertion into a short sorted array: the last entry falls off when it is full. */
        while (i > 0 && s->top[i - 1].n < n) {
                if (i < CHATTER_TOP)
                        s->top[i] = s->top[i - 1];
                i--;
        }
        if (i < CHATTER_TOP)
                s->top[i] = (ChatterCount) { .key = key, .n = n };
}

/* The tally's keys into s: how many were counted, and the most frequent. */
static void tally_keys(const Tally *t, ChatterSummary *s, bool top) {
        size_t state = 0;
        const char *key;
        void *v;

        while (hashmap_iterate(t->keys, &state, &key, &v)) {
                const Entry *e = v;

                if (e->n == 0)
                        continue;
                s->n_keys++;
                if (top)
                        top_insert(s, key, e->n);
        }
}

/* One kind's summaries: a record each for the first peers, then one for all the others. */
static int flush_kind(Chatter *c, ChatterKind kind, unsigned *n, chatter_summary_t cb, void *userdata) {
        _cleanup_free_ ChatterCount *rest = NULL;
        ChatterSummary fold = { .kind = kind };
        size_t state = 0;
        const char *peer;
        void *v;
        int r = 0;

        rest = calloc(hashmap_size(c->peers[kind]) + 1, sizeof(ChatterCount));
        if (!rest)
                r = -ENOMEM;
        while (hashmap_iterate(c->peers[kind], &state, &peer, &v)) {
                const Tally *t = v;

                if (t->total == 0)
                        continue;
                if (*n < CHATTER_SUMMARIES_MAX) {
                        ChatterSummary s = {
                                .kind = kind, .peer = peer, .total = t->total, .folded = t->folded
                        };

                        tally_keys(t, &s, true);
                        cb(&s, userdata);
                        (*n)++;
                        continue;
                }
                fold.total += t->total;
                fold.folded += t->folded;
                tally_keys(t, &fold, false);
                if (rest)
                        rest[fold.n_peers++] = (ChatterCount) { .key = peer, .n = t->total };
        }
        if (c->others[kind] > 0) {
                fold.total += c->others[kind];
                fold.folded += c->others[kind];
                if (rest)
                        rest[fold.n_peers++] =
                                (ChatterCount) { .key = CHATTER_OTHER_PEERS, .n = c->others[kind] };
        }
        if (fold.total > 0) {
                fold.peers = rest;
                cb(&fold, userdata);
                (*n)++;
        }
        return r;
}

int chatter_flush(Chatter *c, chatter_summary_t cb, void *userdata) {
        unsigned n = 0;
        int r = 0;

        assert(c);

        for (ChatterKind k = 0; k < _CHATTER_KIND_MAX; k++) {
                int q = flush_kind(c, k, &n, cb, userdata);
                if (q < 0)
                        r = q;
                hashmap_clear(c->peers[k]);
                c->others[k] = 0;
        }
        c->n_keys = 0;
        c->key_bytes = 0;
        c->first = 0;
        c->pending = 0;
        return r < 0 ? r : (int) n;
}

bool chatter_pending(const Chatter *c) {
        assert(c);

        return c->pending > 0;
}
