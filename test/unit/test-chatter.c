/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdio.h>
#include <string.h>

#include "chatter.h"
#include "tests.h"

#define SUMMARIES_SEEN 256

typedef struct Seen {
        ChatterSummary s[SUMMARIES_SEEN];
        char peer[SUMMARIES_SEEN][64];
        char top0[SUMMARIES_SEEN][64];
        unsigned long peers_total[SUMMARIES_SEEN];
        size_t n;
} Seen;

/* The summaries as they come: their strings are the Chatter's only during the callback. */
static void collect(const ChatterSummary *s, void *userdata) {
        Seen *seen = userdata;

        check(seen->n < SUMMARIES_SEEN);
        seen->s[seen->n] = *s;
        snprintf(seen->peer[seen->n], sizeof(seen->peer[0]), "%s", s->peer ?: "");
        snprintf(seen->top0[seen->n], sizeof(seen->top0[0]), "%s", s->n_top > 0 ? s->top[0].key : "");
        for (size_t i = 0; i < s->n_peers; i++)
                seen->peers_total[seen->n] += s->peers[i].n;
        seen->n++;
}

static const ChatterSummary *find(const Seen *seen, ChatterKind kind, const char *peer) {
        for (size_t i = 0; i < seen->n; i++)
                if (seen->s[i].kind == kind && strcmp(seen->peer[i], peer ?: "") == 0)
                        return seen->s + i;
        return NULL;
}

TEST(first_then_counted) {
        _cleanup_(chatter_freep) Chatter *c = NULL;
        const ChatterSummary *s;
        Seen seen = {};

        check(chatter_new(&c) == 0);
        check(!chatter_pending(c));
        check(chatter_note(c, CHATTER_NOT_FOUND, "a.service", "kernel:net-pf-99") == 1);
        check(!chatter_pending(c));
        for (unsigned i = 0; i < 5; i++)
                check(chatter_note(c, CHATTER_NOT_FOUND, "a.service", "kernel:net-pf-99") == 0);
        /* Kinds are apart, and peers are: each is its own first. */
        check(chatter_note(c, CHATTER_DENIED, "a.service", "kernel:net-pf-99") == 1);
        check(chatter_note(c, CHATTER_NOT_FOUND, "b.service", "kernel:net-pf-99") == 1);
        check(chatter_pending(c));
        check(chatter_flush(c, collect, &seen) == 1);
        s = find(&seen, CHATTER_NOT_FOUND, "a.service");
        check(s && s->total == 5 && s->n_keys == 1 && s->n_top == 1 && s->folded == 0);
        check_streq(seen.top0[0], "kernel:net-pf-99");
        check(s->top[0].n == 5);
        /* A new window: counts gone, and keys forgotten, so the next is journaled again. */
        check(!chatter_pending(c));
        seen.n = 0;
        check(chatter_flush(c, collect, &seen) == 0 && seen.n == 0);
        check(chatter_note(c, CHATTER_NOT_FOUND, "a.service", "kernel:net-pf-99") == 1);
}

/* A peer cycling through distinct keys uses up its own room, never another's: the other peer's first
 * refusal is a record even after 20,000 of them. */
TEST(room_per_peer) {
        _cleanup_(chatter_freep) Chatter *c = NULL;
        unsigned journaled = 0;
        unsigned long counted = 0;
        const ChatterSummary *s;
        Seen seen = {};
        char key[32];

        check(chatter_new(&c) == 0);
        for (unsigned i = 0; i < 20000; i++) {
                int r;

                snprintf(key, sizeof(key), "admin:k%u", i);
                r = chatter_note(c, CHATTER_REFUSED_CALLER, "flood.service", key);
                check(r == 0 || r == 1);
                journaled += r;
                counted += r == 0;
        }
        check(journaled == CHATTER_FIRST_PER_PEER);
        check(chatter_note(c, CHATTER_REFUSED_CALLER, "other.service", "admin:k1") == 1);
        /* Its own other kinds too. */
        check(chatter_note(c, CHATTER_DENIED, "flood.service", "admin:k1") == 1);

        check(chatter_flush(c, collect, &seen) == 1);
        s = find(&seen, CHATTER_REFUSED_CALLER, "flood.service");
        /* Exact, though past the keys remembered: those are counted as folded. */
        check(s && s->total == counted && s->total == 20000 - CHATTER_FIRST_PER_PEER);
        check(s->n_keys == CHATTER_KEYS_PER_PEER - CHATTER_FIRST_PER_PEER);
        check(s->folded == 20000 - CHATTER_KEYS_PER_PEER);
        check(s->n_top == CHATTER_TOP);
        /* The next window has room for new keys again. */
        check(chatter_note(c, CHATTER_REFUSED_CALLER, "flood.service", "admin:new") == 1);
}

/* The window's room for all peers together. */
TEST(room_per_window) {
        _cleanup_(chatter_freep) Chatter *c = NULL;
        unsigned journaled = 0, peers = CHATTER_FIRST_PER_WINDOW / CHATTER_FIRST_PER_PEER + 2;
        char key[32], peer[32];

        check(chatter_new(&c) == 0);
        for (unsigned p = 0; p < peers; p++)
                for (unsigned i = 0; i < CHATTER_FIRST_PER_PEER + 1; i++) {
                        snprintf(peer, sizeof(peer), "p%u.service", p);
                        snprintf(key, sizeof(key), "kernel:k%u", i);
                        journaled += chatter_note(c, CHATTER_DENIED, peer, key) == 1;
                }
        check(journaled == CHATTER_FIRST_PER_WINDOW);
}

/* A key not remembered (the peer's keys are full) is still journaled while the peer has room. */
TEST(not_remembered) {
        _cleanup_(chatter_freep) Chatter *c = NULL;
        const ChatterSummary *s;
        Seen seen = {};
        char key[32];

        check(chatter_new(&c) == 0);
        /* The first keys are journaled, the rest counted, until the peer's keys are full. */
        for (unsigned i = 0; i < CHATTER_KEYS_PER_PEER; i++) {
                snprintf(key, sizeof(key), "k%u", i);
                (void) chatter_note(c, CHATTER_FAILED, "a.service", key);
        }
        check(chatter_note(c, CHATTER_FAILED, "a.service", "k0") == 0);
        check(chatter_note(c, CHATTER_FAILED, "a.service", "new") == 0);
        check(chatter_flush(c, collect, &seen) == 1);
        s = find(&seen, CHATTER_FAILED, "a.service");
        check(s && s->total == CHATTER_KEYS_PER_PEER - CHATTER_FIRST_PER_PEER + 2 && s->folded == 1);
}

/* Long keys (a modalias may have 64 KiB) are remembered only within the bytes a peer may take. */
TEST(key_bytes) {
        _cleanup_(chatter_freep) Chatter *c = NULL;
        static char key[32 * 1024];
        const ChatterSummary *s;
        Seen seen = {};
        unsigned n = 2 * CHATTER_KEY_BYTES_PER_PEER / sizeof(key);

        check(chatter_new(&c) == 0);
        for (unsigned i = 0; i < n; i++) {
                memset(key, 'a', sizeof(key) - 1);
                snprintf(key, 16, "k%u", i);
                key[strlen(key)] = 'a';
                (void) chatter_note(c, CHATTER_NOT_FOUND, "a.service", key);
        }
        check(chatter_flush(c, collect, &seen) == 1);
        s = find(&seen, CHATTER_NOT_FOUND, "a.service");
        /* The first half fit; past the first CHATTER_FIRST_PER_PEER journaled, the rest are counted. */
        check(s && s->total == n - CHATTER_FIRST_PER_PEER);
        check(s->n_keys == CHATTER_KEY_BYTES_PER_PEER / sizeof(key) - CHATTER_FIRST_PER_PEER);
        check(s->folded == s->total - s->n_keys);
}

TEST(top_order) {
        _cleanup_(chatter_freep) Chatter *c = NULL;
        static const char *const keys[] = { "a", "b", "c", "d", "e", "f", "g", "h", "i", "j" };
        const ChatterSummary *s;
        Seen seen = {};

        check(chatter_new(&c) == 0);
        for (unsigned k = 0; k < 10; k++) {
                check(chatter_note(c, CHATTER_PRESENT, "udev", keys[k]) == 1);
                for (unsigned i = 0; i < (k * 7) % 10 + 1; i++)
                        check(chatter_note(c, CHATTER_PRESENT, "udev", keys[k]) == 0);
        }
        check(chatter_flush(c, collect, &seen) == 1);
        s = find(&seen, CHATTER_PRESENT, "udev");
        check(s && s->n_keys == 10 && s->n_top == CHATTER_TOP);
        for (size_t i = 1; i < s->n_top; i++)
                check(s->top[i - 1].n >= s->top[i].n);
        check(s->top[0].n == 10);       /* k = 7: 49 % 10 + 1 */
        check_streq(seen.top0[0], "h");
}

/* Past CHATTER_SUMMARIES_MAX summaries the other peers fold into one per kind, each peer still with
 * its exact count; past CHATTER_PEERS_MAX peers, they are counted as one. */
TEST(fold_peers) {
        _cleanup_(chatter_freep) Chatter *c = NULL;
        unsigned long total = 0, summarized = 0;
        unsigned peers = CHATTER_PEERS_MAX + 10;
        const ChatterSummary *s;
        Seen seen = {};
        char peer[32];

        check(chatter_new(&c) == 0);
        for (unsigned p = 0; p < peers; p++) {
                snprintf(peer, sizeof(peer), "p%u.service", p);
                for (unsigned i = 0; i < 3; i++)
                        total += chatter_note(c, CHATTER_DENIED, peer, "udev:x") == 0;
        }
        check(chatter_flush(c, collect, &seen) == (int) CHATTER_SUMMARIES_MAX + 1);
        for (size_t i = 0; i < seen.n; i++)
                summarized += seen.s[i].total;
        check(summarized == total);
        s = find(&seen, CHATTER_DENIED, NULL);
        check(s && s->n_peers == CHATTER_PEERS_MAX - CHATTER_SUMMARIES_MAX + 1);
        check(seen.peers_total[s - seen.s] == s->total);
        check(s->folded == 10 * 3);
}

int main(void) {
        RUN(first_then_counted);
        RUN(room_per_peer);
        RUN(room_per_window);
        RUN(not_remembered);
        RUN(key_bytes);
        RUN(top_order);
        RUN(fold_peers);
        return tests_done();
}
