/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dm-verity.h"
#include "macro.h"
#include "parse-util.h"

#define WORD_MAX 600            /* a salt has up to 512 hex digits */
#define OPTIONAL_MAX 32

void dm_verity_table_done(DmVerityTable *t) {
        free(t->options);
        *t = (DmVerityTable) {};
}

/* The next space-separated word of *p into buf; -EBADMSG when there is none or it does not fit. */
static int next_word(const char **p, char *buf, size_t size) {
        size_t n;

        *p += strspn(*p, " ");
        n = strcspn(*p, " ");
        if (n == 0 || n >= size)
                return -EBADMSG;
        memcpy(buf, *p, n);
        buf[n] = '\0';
        *p += n;
        return 0;
}

static bool is_device(const char *s) {
        unsigned major, minor;
        int n = 0;

        return sscanf(s, "%u:%u%n", &major, &minor, &n) == 2 && s[n] == '\0' && s[0] >= '0' && s[0] <= '9';
}

static bool is_hex(const char *s, size_t min, size_t max) {
        size_t n = strlen(s);

        if (n < min || n > max || n % 2 != 0)
                return false;
        return strspn(s, "0123456789abcdef") == n;
}

bool dm_verity_root_hash_is_valid(const char *s) {
        return is_hex(s, 2, 128);
}

int dm_verity_table_parse(const char *line, DmVerityTable *ret) {
        _cleanup_(dm_verity_table_done) DmVerityTable t = {};
        char word[WORD_MAX];
        unsigned n_optional;
        uint64_t u;
        const char *p = line;
        size_t len;

        assert(ret);

        if (next_word(&p, word, sizeof(word)) < 0 || parse_unsigned(word, &t.version) < 0 || t.version > 1)
                return -EBADMSG;
        if (next_word(&p, t.data_device, sizeof(t.data_device)) < 0 || !is_device(t.data_device) ||
            next_word(&p, t.hash_device, sizeof(t.hash_device)) < 0 || !is_device(t.hash_device))
                return -EBADMSG;
        /* Block sizes, the data block count and the hash start. */
        for (unsigned i = 0; i < 4; i++)
                if (next_word(&p, word, sizeof(word)) < 0 || parse_uint64(word, &u) < 0)
                        return -EBADMSG;
        if (next_word(&p, t.algorithm, sizeof(t.algorithm)) < 0 ||
            next_word(&p, t.root_hash, sizeof(t.root_hash)) < 0 ||
            !dm_verity_root_hash_is_valid(t.root_hash) || next_word(&p, word, sizeof(word)) < 0 ||
            (strcmp(word, "-") != 0 && !is_hex(word, 2, 512)))
                return -EBADMSG;

        p += strspn(p, " ");
        if (*p != '\0') {
                if (next_word(&p, word, sizeof(word)) < 0 || parse_unsigned(word, &n_optional) < 0 ||
                    n_optional == 0 || n_optional > OPTIONAL_MAX)
                        return -EBADMSG;
                p += strspn(p, " ");
                t.options = strdup(p);
                if (!t.options)
                        return -ENOMEM;
                for (unsigned i = 0; i < n_optional; i++) {
                        if (next_word(&p, word, sizeof(word)) < 0)
                                return -EBADMSG;
                        if (strcmp(word, "ignore_corruption") == 0)
                                t.ignore_corruption = true;
                }
                p += strspn(p, " ");
                if (*p != '\0')
                        return -EBADMSG;
                len = strlen(t.options);
                while (len > 0 && t.options[len - 1] == ' ')
                        t.options[--len] = '\0';
        }

        *ret = t;
        t = (DmVerityTable) {};
        return 0;
}

int dm_verity_status_corrupted(const char *line) {
        if ((line[0] != 'V' && line[0] != 'C') || (line[1] != '\0' && line[1] != ' '))
                return -EBADMSG;
        return line[0] == 'C';
}

unsigned long long dm_encode_dev(unsigned major, unsigned minor) {
        /* What the kernel's huge_decode_dev() takes apart: the minor's low byte, then the major's
         * twelve bits, then the rest of the minor. */
        return (minor & 0xffu) | ((unsigned long long) (major & 0xfffu) << 8) |
               ((unsigned long long) (minor & ~0xffu) << 12);
}
