/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "hashmap.h"

typedef struct Entry {
        struct Entry *next;
        void *value;
        char key[];
} Entry;

struct Hashmap {
        Entry **buckets;
        size_t n_buckets;
        size_t n_entries;
        uint64_t seed;
        hashmap_free_func_t free_value;
};

/* FNV-1a with a random per-map seed, so that clients cannot choose keys that all collide. */
static size_t bucket_of(const Hashmap *h, const char *key) {
        uint64_t x = 0xcbf29ce484222325ULL ^ h->seed;

        for (const unsigned char *p = (const unsigned char *) key; *p; p++) {
                x ^= *p;
                x *= 0x100000001b3ULL;
        }
        x ^= x >> 29;
        return (size_t) (x % h->n_buckets);
}

Hashmap *hashmap_new(hashmap_free_func_t free_value) {
        Hashmap *h = calloc(1, sizeof(*h));

        if (!h)
                return NULL;
        h->n_buckets = 64;
        h->buckets = calloc(h->n_buckets, sizeof(Entry *));
        if (!h->buckets) {
                free(h);
                return NULL;
        }
        if (getrandom(&h->seed, sizeof(h->seed), GRND_NONBLOCK) != sizeof(h->seed))
                h->seed = (uint64_t) (uintptr_t) h;
        h->free_value = free_value;
        return h;
}

void hashmap_clear(Hashmap *h) {
        assert(h);

        for (size_t i = 0; i < h->n_buckets; i++) {
                Entry *e = h->buckets[i];

                while (e) {
                        Entry *next = e->next;
                        if (h->free_value)
                                h->free_value(e->value);
                        free(e);
                        e = next;
                }
                h->buckets[i] = NULL;
        }
        h->n_entries = 0;
}

Hashmap *hashmap_free(Hashmap *h) {
        if (!h)
                return NULL;
        hashmap_clear(h);
        free(h->buckets);
        free(h);
        return NULL;
}

static Entry **find(const Hashmap *h, const char *key) {
        Entry **e = &h->buckets[bucket_of(h, key)];

        while (*e && strcmp((*e)->key, key) != 0)
                e = &(*e)->next;
        return e;
}

static void grow(Hashmap *h) {
        size_t n = h->n_buckets * 4;
        Entry **b = calloc(n, sizeof(Entry *)), **old = h->buckets;
        size_t old_n = h->n_buckets;

        if (!b)
                return;         /* a fuller table still works */
        h->buckets = b;
        h->n_buckets = n;
        for (size_t i = 0; i < old_n; i++)
                for (Entry *e = old[i], *next; e; e = next) {
                        size_t k = bucket_of(h, e->key);
                        next = e->next;
                        e->next = b[k];
                        b[k] = e;
                }
        free(old);
}

int hashmap_put(Hashmap *h, const char *key, void *value) {
        size_t len = strlen(key);
        Entry **slot, *e;

        assert(h);

        slot = find(h, key);
        if (*slot)
                return -EEXIST;

        e = malloc(sizeof(Entry) + len + 1);
        if (!e)
                return -ENOMEM;
        memcpy(e->key, key, len + 1);
        e->value = value;
        e->next = NULL;
        *slot = e;

        if (++h->n_entries > h->n_buckets)
                grow(h);
        return 0;
}

void *hashmap_get(const Hashmap *h, const char *key) {
        Entry *e = *find(h, key);

        return e ? e->value : NULL;
}

void *hashmap_remove(Hashmap *h, const char *key) {
        Entry **slot = find(h, key), *e = *slot;
        void *v;

        assert(h);

        if (!e)
                return NULL;
        *slot = e->next;
        v = e->value;
        free(e);
        h->n_entries--;
        return v;
}

size_t hashmap_size(const Hashmap *h) {
        assert(h);

        return h->n_entries;
}

bool hashmap_iterate(const Hashmap *h, size_t *state, const char **ret_key, void **ret_value) {
        assert(h);

        /* state counts entries already returned; simple, and maps here are small. */
        size_t skip = *state;

        for (size_t i = 0; i < h->n_buckets; i++)
                for (Entry *e = h->buckets[i]; e; e = e->next) {
                        if (skip > 0) {
                                skip--;
                                continue;
                        }
                        (*state)++;
                        if (ret_key)
                                *ret_key = e->key;
                        if (ret_value)
                                *ret_value = e->value;
                        return true;
                }
        return false;
}
