/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"
#include "manifest.h"
#include "modinfo.h"

static int hex_digit(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1;
}

/* The value of an info line as written, decoded: the parser accepted it, so every '\' starts \xHH in
 * lowercase hex, for a byte that is not NUL, and no other byte needs one. */
static char *decode(const char *v, size_t n) {
        char *d = malloc(n + 1);
        size_t k = 0;

        fuzz_assert(d);
        for (size_t i = 0; i < n; i++) {
                int hi, lo;

                if (v[i] != '\\') {
                        fuzz_assert(!manifest_info_byte_escaped((unsigned char) v[i]));
                        d[k++] = v[i];
                        continue;
                }
                fuzz_assert(i + 3 < n && v[i + 1] == 'x');
                hi = hex_digit(v[i + 2]);
                lo = hex_digit(v[i + 3]);
                fuzz_assert(hi >= 0 && lo >= 0);
                d[k] = (char) (hi * 16 + lo);
                fuzz_assert(d[k] != '\0' && manifest_info_byte_escaped((unsigned char) d[k]));
                k++;
                i += 3;
        }
        d[k] = '\0';
        return d;
}

static void check_string(const char *got, const char *want) {
        fuzz_assert(!got == !want);
        fuzz_assert(!got || strcmp(got, want) == 0);
}

/* The info line fields (n bytes, after "#: ") of the entry path with digest: read back by
 * manifest_lookup_modinfo() as the line says, and written again by manifest_info_format() byte for
 * byte, but for the name, which comes back normalized. */
static void check_info(const Manifest *m, const char *path, const uint8_t digest[SHA256_DIGEST_SIZE],
                       const char *fields, size_t n) {
        _cleanup_free_ char *line = strndup(fields, n), *name = NULL, *type = NULL, *signer = NULL;
        _cleanup_free_ char *key = NULL, *hash = NULL, *formatted = NULL;
        _cleanup_(modinfo_done) ModInfo info = {};
        char **aliases = NULL, *name_end = NULL;
        size_t n_aliases = 0;
        bool is_signed = false;
        const char *match = NULL;
        uint8_t other[SHA256_DIGEST_SIZE];

        fuzz_assert(line && n > 0);
        aliases = calloc(n / 2 + 1, sizeof(char *));
        fuzz_assert(aliases);

        /* Single spaces between KEY=VALUE, in their order. */
        for (char *f = line, *next; f; f = next) {
                char *eq = strchr(f, '='), *sp = strchr(f, ' ');
                size_t vn;

                next = sp ? sp + 1 : NULL;
                vn = (size_t) ((sp ?: f + strlen(f)) - eq - 1);
                fuzz_assert(eq && (!sp || eq < sp));
                if (strncmp(f, "name=", 5) == 0) {
                        fuzz_assert(f == line && vn > 0);
                        name = decode(eq + 1, vn);
                        name_end = eq + 1 + vn;
                } else if (strncmp(f, "signature=", 10) == 0) {
                        is_signed = true;
                        if (vn > 0)
                                type = decode(eq + 1, vn);
                } else if (strncmp(f, "signer=", 7) == 0)
                        signer = decode(eq + 1, vn);
                else if (strncmp(f, "key=", 4) == 0)
                        key = decode(eq + 1, vn);
                else if (strncmp(f, "hash=", 5) == 0)
                        hash = decode(eq + 1, vn);
                else {
                        fuzz_assert(strncmp(f, "alias=", 6) == 0 && vn > 0);
                        aliases[n_aliases++] = decode(eq + 1, vn);
                }
        }
        fuzz_assert(name && *name);
        fuzz_assert(is_signed || (!signer && !key && !hash));

        /* With the first alias as the key (a pattern need not match itself), and without a key. */
        fuzz_assert(manifest_lookup_modinfo(m, path, digest, n_aliases > 0 ? aliases[0] : NULL, &info) == 1);
        fuzz_assert(info.name && *info.name && strlen(info.name) == strlen(name));
        for (size_t i = 0; name[i]; i++)
                fuzz_assert(info.name[i] == (name[i] == '-' ? '_' : name[i]));
        fuzz_assert(info.is_signed == is_signed);
        check_string(info.signature_type, type);
        check_string(info.signer, signer);
        check_string(info.signature_key, key);
        check_string(info.signature_hash, hash);
        for (size_t i = 0; i < n_aliases && !match; i++)
                if (fnmatch(aliases[i], aliases[0], 0) == 0)
                        match = aliases[i];
        check_string(info.alias, match);

        /* The name is normalized ('-' as '_', never escaped): so is the line to compare with. */
        for (char *c = line; c < name_end; c++)
                if (*c == '-')
                        *c = '_';
        fuzz_assert(manifest_info_format(&info, aliases, &formatted) == 0);
        fuzz_assert(strlen(formatted) == n && memcmp(formatted, line, n) == 0);

        modinfo_done(&info);
        fuzz_assert(manifest_lookup_modinfo(m, path, digest, NULL, &info) == 1);
        fuzz_assert(!info.alias && info.name && info.is_signed == is_signed);

        /* Only for these bytes. */
        memcpy(other, digest, SHA256_DIGEST_SIZE);
        other[SHA256_DIGEST_SIZE - 1] ^= 1;
        modinfo_done(&info);
        fuzz_assert(manifest_lookup_modinfo(m, path, other, NULL, &info) == 0);
        fuzz_assert(!info.name);

        for (size_t i = 0; i < n_aliases; i++)
                free(aliases[i]);
        free(aliases);
}

/* An entry with no info line: lookup_modinfo() has nothing for it. */
static void check_no_info(const Manifest *m, const char *path, const uint8_t digest[SHA256_DIGEST_SIZE]) {
        ModInfo info = {};

        fuzz_assert(manifest_lookup_modinfo(m, path, digest, "x", &info) == 0);
        fuzz_assert(!info.name && !info.alias);
}

/* An accepted manifest lists exactly its entry lines, each found again with its digest, and in
 * version 2 each info line found again for its entry. */
static void check_manifest(const Manifest *m, const uint8_t *data, size_t size) {
        const char *p = (const char *) data, *end = p + size;
        _cleanup_free_ char *path = NULL;
        uint8_t want[SHA256_DIGEST_SIZE];
        unsigned version = manifest_version(m);
        bool pending = false;
        size_t n = 0;

        fuzz_assert(manifest_kernel_is_valid(manifest_kernel(m)));
        fuzz_assert(manifest_origin_to_string(manifest_origin(m)));
        fuzz_assert(size > 0 && data[size - 1] == '\n');
        fuzz_assert(version == 1 || version == 2);
        fuzz_assert(size > 21 && memcmp(data, "# modgate manifest ", 19) == 0 &&
                    data[19] == (uint8_t) ('0' + version) && data[20] == ' ');

        /* The header first, then entries, comments and (version 2) info lines right after an entry. */
        p = memchr(p, '\n', size) + 1;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                char hex[SHA256_HEX_SIZE];
                const uint8_t *got;

                fuzz_assert(nl && nl > p);
                if (version >= 2 && nl - p >= 3 && memcmp(p, "#: ", 3) == 0) {
                        fuzz_assert(pending);
                        check_info(m, path, want, p + 3, (size_t) (nl - p) - 3);
                        pending = false;
                        p = nl + 1;
                        continue;
                }
                if (pending)
                        check_no_info(m, path, want);
                pending = false;
                if (*p != '#') {
                        fuzz_assert(nl - p > SHA256_HEX_SIZE + 1);
                        memcpy(hex, p, SHA256_HEX_SIZE - 1);
                        hex[SHA256_HEX_SIZE - 1] = '\0';
                        fuzz_assert(sha256_from_hex(hex, want) == 0);
                        free(path);
                        path = strndup(p + SHA256_HEX_SIZE + 1, (size_t) (nl - p) - SHA256_HEX_SIZE - 1);
                        fuzz_assert(path);
                        fuzz_assert(!manifest_path_problem(path));
                        got = manifest_lookup(m, path);
                        fuzz_assert(got && memcmp(got, want, SHA256_DIGEST_SIZE) == 0);
                        pending = true;
                        n++;
                }
                p = nl + 1;
        }
        if (pending)
                check_no_info(m, path, want);
        fuzz_assert(n == manifest_entries(m));
        fuzz_assert(n <= MANIFEST_ENTRIES_MAX);
}

/* Every refusal says where and what, and echoes only printable text back. */
static void check_message(int r, const char *message) {
        fuzz_assert(r == -EBADMSG || r == -EFBIG || r == -ENOMEM);
        if (!message) {
                fuzz_assert(r == -ENOMEM);
                return;
        }
        if (r == -EBADMSG) {
                size_t k = strspn(message, "0123456789");
                fuzz_assert(k > 0 && message[0] != '0' && strncmp(message + k, ": ", 2) == 0);
        }
        for (const char *p = message; *p; p++)
                fuzz_assert((unsigned char) *p >= ' ' || *p == '\t');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_free_ char *message = NULL;
        FILE *f;
        int r;

        /* fmemopen() wants a buffer even for no bytes. */
        f = fmemopen(size > 0 ? (void *) data : (void *) "", size, "r");
        if (!f)
                return 0;
        r = manifest_parse(f, &m, &message);
        fclose(f);

        if (r >= 0) {
                fuzz_assert(r == 0 && m && !message);
                check_manifest(m, data, size);
        } else {
                fuzz_assert(!m);
                check_message(r, message);
        }
        return 0;
}
