/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* A map from strings to pointers. Keys are copied; values are owned by the caller unless a free
 * function is given. Callers cap the number of entries where clients can add them. */

typedef struct Hashmap Hashmap;
typedef void (*hashmap_free_func_t)(void *value);

Hashmap *hashmap_new(hashmap_free_func_t free_value);
Hashmap *hashmap_free(Hashmap *h);

/* Returns 0, -EEXIST when the key is present (nothing changes), or -ENOMEM. */
int hashmap_put(Hashmap *h, const char *key, void *value);
void *hashmap_get(const Hashmap *h, const char *key);
/* Removes the entry and returns its value, which is not freed. */
void *hashmap_remove(Hashmap *h, const char *key);
size_t hashmap_size(const Hashmap *h);
/* Removes every entry, freeing the values with the free function. */
void hashmap_clear(Hashmap *h);

/* Iteration: *state starts at 0; returns false at the end. The map must not change meanwhile. */
bool hashmap_iterate(const Hashmap *h, size_t *state, const char **ret_key, void **ret_value);
