/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* Answers that repeat: a request that matched no module, a module that was live already, and every
 * refusal (a policy denial, an untrusted origin, a failed load, a caller refused, a sealed kernel). A
 * coldplug asks for the same modules once per CPU; any user can make the kernel ask for keys that
 * match nothing or that the policy denies (a socket of an unknown family, an AF_ALG bind), and a root
 * process without CAP_SYS_MODULE can call Load in a loop. Journaled one by one they would fill
 * journald's rate limit for the unit, which then drops every record after them, the refusals of
 * others among them.
 *
 * So the first answer of each (kind, peer, key) in a window is journaled on its own, while the peer
 * has room for new keys of that kind in the window (CHATTER_FIRST_PER_PEER) and the window has room
 * at all (CHATTER_FIRST_PER_WINDOW); the rest are counted, exactly, and each window's counts become
 * summary records, one per (kind, peer). A peer that floods uses up its own room, never another's.
 * The key names the source too ("SOURCE:KEY"): the caller makes it. Pure: the caller keeps the clock
 * and writes the records. */

#define CHATTER_WINDOW_USEC (60U * 1000000U)
#define CHATTER_FIRST_PER_PEER 32U      /* new keys journaled on their own per (kind, peer) a window */
#define CHATTER_FIRST_PER_WINDOW 2048U  /* and for all of them together */
#define CHATTER_SUMMARIES_MAX 128U      /* (kind, peer) summaries a window; the rest fold, one per kind */
#define CHATTER_PEERS_MAX 1024U         /* peers remembered per kind a window; later ones fold */
#define CHATTER_KEYS_PER_PEER 4096U     /* keys remembered per (kind, peer) a window */
#define CHATTER_KEYS_MAX 16384U         /* and for all of them together */
/* A key can be a modalias of up to 64 KiB: what the remembered keys take is capped in bytes too. */
#define CHATTER_KEY_BYTES_PER_PEER (1024U * 1024U)
#define CHATTER_KEY_BYTES_MAX (8U * 1024U * 1024U)
#define CHATTER_TOP 8U                  /* keys named in a summary */
#define CHATTER_OTHER_PEERS "(other peers)"

typedef enum ChatterKind {
        CHATTER_NOT_FOUND,
        CHATTER_PRESENT,                /* already loaded, or builtin */
        CHATTER_SEALED,                 /* refused after a seal: the kernel asks on, whatever the answer */
        CHATTER_DENIED,                 /* by the policy, an untrusted origin, an install command */
        CHATTER_WOULD_DENY,             /* the policy would deny, in permissive mode */
        CHATTER_REFUSED_CALLER,         /* because of who asked */
        CHATTER_FAILED,                 /* the load failed */
        CHATTER_GUARD,                  /* a load by another process, refused by the guard in the kernel
                                         * (or that would be, in its permissive mode) */
        _CHATTER_KIND_MAX,
} ChatterKind;

typedef struct Chatter Chatter;

int chatter_new(Chatter **ret);
Chatter *chatter_free(Chatter *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Chatter *, chatter_free);

/* Notes one answer of kind for key, from peer (its unit, or another name for a peer in none). Returns
 * 1 when it should be journaled on its own, 0 when it was only counted, or -ENOMEM (then journal it:
 * better a record too many than a decision unaccounted for). */
int chatter_note(Chatter *c, ChatterKind kind, const char *peer, const char *key);

typedef struct ChatterCount {
        const char *key;                /* borrowed from the Chatter, valid in the callback */
        unsigned long n;
} ChatterCount;

/* The window's counts of one kind for one peer, or, with peer NULL, for every peer past
 * CHATTER_SUMMARIES_MAX summaries: then peers lists each of them with its own count. */
typedef struct ChatterSummary {
        ChatterKind kind;
        const char *peer;
        unsigned long total;            /* answers counted in the window, not journaled */
        unsigned long folded;           /* of those, answers for keys past the keys remembered */
        size_t n_keys;                  /* different keys among the others */
        ChatterCount top[CHATTER_TOP];  /* the most frequent, most first */
        size_t n_top;
        const ChatterCount *peers;      /* with peer NULL: each folded peer and its total */
        size_t n_peers;
} ChatterSummary;

typedef void (*chatter_summary_t)(const ChatterSummary *s, void *userdata);

/* Calls cb with each summary of the window, then begins a new one: counts to zero, every key and
 * peer forgotten (a key's first answer in the next window is journaled again). Returns the number of
 * summaries, or -ENOMEM, when the folded peers could not be listed (their total still is). */
int chatter_flush(Chatter *c, chatter_summary_t cb, void *userdata);

/* Whether any kind has counts waiting for a summary. */
bool chatter_pending(const Chatter *c);
