/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* Answers that decide nothing: a request that matched no module, a module that was live already or is
 * builtin. A coldplug asks for the same modules once per CPU, and any user can make the kernel ask for
 * keys that match nothing (a socket of an unknown family, a mount of an unknown file system). Journaled
 * one by one they would fill journald's rate limit for the unit, which then drops the decisions that
 * come after. So the first answer for a key is journaled, up to CHATTER_FIRST_PER_WINDOW new keys a
 * window; the rest are counted, and each window's counts become one summary record. Pure: the caller
 * keeps the clock and writes the records. */

#define CHATTER_KEYS_MAX 4096U          /* keys remembered per kind; later ones count as "other" */
#define CHATTER_FIRST_PER_WINDOW 64U    /* new keys journaled on their own per window */
#define CHATTER_TOP 8U                  /* keys named in a summary */
#define CHATTER_WINDOW_USEC (60U * 1000000U)

typedef enum ChatterKind {
        CHATTER_NOT_FOUND,
        CHATTER_PRESENT,                /* already loaded, or builtin */
        CHATTER_SEALED,                 /* refused after a seal: the kernel asks on, whatever the answer */
        _CHATTER_KIND_MAX,
} ChatterKind;

typedef struct Chatter Chatter;

int chatter_new(Chatter **ret);
Chatter *chatter_free(Chatter *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Chatter *, chatter_free);

/* Notes one answer for key. Returns 1 when it should be journaled on its own (the key's first, while
 * the window has room), 0 when it was only counted, or -ENOMEM (then journal it: better a record too
 * many than a decision unaccounted for). */
int chatter_note(Chatter *c, ChatterKind kind, const char *key);

typedef struct ChatterCount {
        const char *key;                /* borrowed from the Chatter, valid until its next change */
        unsigned long n;
} ChatterCount;

typedef struct ChatterSummary {
        unsigned long total;            /* answers counted in the window, not journaled */
        size_t n_keys;                  /* different keys among them ("other" counts as one) */
        ChatterCount top[CHATTER_TOP];  /* the most frequent, most first */
        size_t n_top;
} ChatterSummary;

/* The window's counts of one kind, then a new window: counts to zero, remembered keys kept (they stay
 * summarized, never journaled again). Returns whether anything was counted. */
bool chatter_take(Chatter *c, ChatterKind kind, ChatterSummary *ret);

/* Whether any kind has counts waiting for a summary. */
bool chatter_pending(const Chatter *c);
