/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The history of this boot's decisions (a memfd of the fd store), as modgated reads it at
 * start: one JSON object per line, the latest per module counts, a line that does not parse (a torn
 * write at a crash) is skipped and counted. The input is the memfd's contents. */

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <systemd/sd-json.h>

#include "fuzz.h"
#include "module-name.h"
#include "record-history.h"

/* An entry takes 15 bytes at least ({"module":"a"} and its newline). */
#define INPUT_MAX (64 * 1024)
#define REF_MAX (INPUT_MAX / 15 + 1)

/* The file as the history promises to read it: what each module's entry should be. */
typedef struct Reference {
        sd_json_variant *entries[REF_MAX];
        size_t n;
        unsigned skipped;
} Reference;

static void reference_done(Reference *ref) {
        for (size_t i = 0; i < ref->n; i++)
                sd_json_variant_unref(ref->entries[i]);
}

static const char *entry_module(sd_json_variant *e) {
        sd_json_variant *m = sd_json_variant_by_key(e, "module");

        return m && sd_json_variant_is_string(m) ? sd_json_variant_string(m) : NULL;
}

/* An entry is a JSON object whose "module" is a module name in its canonical form. */
static void reference_line(Reference *ref, const char *line, size_t n) {
        _cleanup_free_ char *text = NULL;
        sd_json_variant *e = NULL;
        const char *name;

        if (memchr(line, '\0', n) || !(text = strndup(line, n)) || sd_json_parse(text, 0, &e, NULL, NULL) < 0) {
                ref->skipped++;
                return;
        }
        name = entry_module(e);
        if (!sd_json_variant_is_object(e) || !name || !module_name_is_valid(name) || strchr(name, '-')) {
                sd_json_variant_unref(e);
                ref->skipped++;
                return;
        }
        for (size_t i = 0; i < ref->n; i++)
                if (strcmp(entry_module(ref->entries[i]), name) == 0) {
                        sd_json_variant_unref(ref->entries[i]);
                        ref->entries[i] = e;
                        return;
                }
        fuzz_assert(ref->n < REF_MAX);
        ref->entries[ref->n++] = e;
}

static void reference_read(Reference *ref, const char *data, size_t size) {
        for (const char *p = data, *end = data + size; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);

                reference_line(ref, p, n);
                p += n + 1;
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *all = NULL;
        _cleanup_(history_freep) History *h = NULL;
        _cleanup_(reference_done) Reference ref = {};
        unsigned skipped;
        int fd;
        int r;

        if (size > INPUT_MAX)
                return 0;

        fd = history_memfd_new();
        fuzz_assert(fd >= 0);
        fuzz_assert(size == 0 || write(fd, data, size) == (ssize_t) size);
        r = history_open_fd(fd, &h, &skipped);
        if (r < 0) {
                fuzz_assert(r == -ENOMEM);
                return 0;
        }
        reference_read(&ref, (const char *) data, size);

        fuzz_assert(skipped == ref.skipped);
        for (size_t i = 0; i < ref.n; i++) {
                sd_json_variant *e = history_get(h, entry_module(ref.entries[i]));

                fuzz_assert(e && sd_json_variant_equal(e, ref.entries[i]));
        }
        fuzz_assert(history_list(h, &all) >= 0);
        fuzz_assert(sd_json_variant_elements(all) == ref.n);
        for (size_t i = 1; i < ref.n; i++)
                fuzz_assert(strcmp(entry_module(sd_json_variant_by_index(all, i - 1)),
                                   entry_module(sd_json_variant_by_index(all, i))) < 0);
        return 0;
}
