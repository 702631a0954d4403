/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chatter.h"
#include "hashmap.h"

/* What a key beyond CHATTER_KEYS_MAX is counted as. */
#define OTHER_KEY "(other keys)"

typedef struct Entry {
        unsigned long n;        /* this window's count */
} Entry;

typedef struct Tally {
        Hashmap *keys;          /* key -> Entry */
        unsigned long total;
        unsigned first;         /* keys journaled on their own in this window */
} Tally;

struct Chatter {
        Tally tally[_CHATTER_KIND_MAX];
};

int chatter_new(Chatter **ret) {
        Chatter *c = calloc(1, sizeof(Chatter));

        if (!c)
                return -ENOMEM;
        for (size_t k = 0; k < _CHATTER_KIND_MAX; k++) {
                c->tally[k].keys = hashmap_new(free);
                if (!c->tally[k].keys) {
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
                hashmap_free(c->tally[k].keys);
        free(c);
        return NULL;
}

static int count(Tally *t, const char *key) {
        Entry *e = hashmap_get(t->keys, key);
        int r;

        if (!e) {
                e = calloc(1, sizeof(Entry));
                if (!e)
                        return -ENOMEM;
                r = hashmap_put(t->keys, key, e);
                if (r < 0) {
                        free(e);
                        return r;
                }
        }
        e->n++;
        t->total++;
        return 0;
}

int chatter_note(Chatter *c, ChatterKind kind, const char *key) {
        Tally *t = &c->tally[kind];
        Entry *e;

        if (hashmap_get(t->keys, key))
                return count(t, key);
        /* The last slot is the "other" entry's. */
        if (hashmap_size(t->keys) >= CHATTER_KEYS_MAX - 1)
                return count(t, OTHER_KEY);
        if (t->first < CHATTER_FIRST_PER_WINDOW) {
                /* Remembered with no count: its own record says it. */
                e = calloc(1, sizeof(Entry));
                if (!e || hashmap_put(t->keys, key, e) < 0) {
                        free(e);
                        return -ENOMEM;
                }
                t->first++;
                return 1;
        }
        return count(t, key);
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

bool chatter_take(Chatter *c, ChatterKind kind, ChatterSummary *ret) {
        Tally *t = &c->tally[kind];
        size_t state = 0;
        const char *key;
        void *v;

        *ret = (ChatterSummary) { .total = t->total };
        while (hashmap_iterate(t->keys, &state, &key, &v)) {
                Entry *e = v;

                if (e->n == 0)
                        continue;
                ret->n_keys++;
                top_insert(ret, key, e->n);
                e->n = 0;
        }
        t->total = 0;
        t->first = 0;
        return ret->total > 0;
}

bool chatter_pending(const Chatter *c) {
        for (size_t k = 0; k < _CHATTER_KIND_MAX; k++)
                if (c->tally[k].total > 0)
                        return true;
        return false;
}
