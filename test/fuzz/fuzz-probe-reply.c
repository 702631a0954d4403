/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The prober's answer to io.modgate.Probe.DescribeDevice, as the daemon decodes it into the device's
 * device-mapper table. The input is the varlink error name on its first line (empty: none), then the
 * reply's parameters as JSON. */

#include <errno.h>
#include <string.h>
#include <systemd/sd-json.h>

#include "dm-verity.h"
#include "fuzz.h"
#include "origin.h"
#include "probe-client.h"

static void check_table(const DmTable *t, sd_json_variant *reply, const char *error_id) {
        sd_json_variant *targets = sd_json_variant_by_key(reply, "targets");

        /* An error always says why, and nothing else. */
        fuzz_assert((t->error == 0) == !t->error_detail);
        if (error_id)
                fuzz_assert(t->error < 0);
        if (t->error < 0) {
                fuzz_assert(t->n_targets == 0 && !t->options && t->target[0] == '\0');
                return;
        }
        fuzz_assert(targets && sd_json_variant_is_array(targets) && t->n_targets == sd_json_variant_elements(targets));
        fuzz_assert(memchr(t->name, '\0', sizeof(t->name)) && memchr(t->uuid, '\0', sizeof(t->uuid)));
        fuzz_assert(memchr(t->target, '\0', sizeof(t->target)) && (t->n_targets > 0 || t->target[0] == '\0'));
        /* A verity target's root hash is as the prober read it from the kernel, as DmTable promises. */
        if (strcmp(t->target, "verity") == 0)
                fuzz_assert(dm_verity_root_hash_is_valid(t->root_hash) &&
                            memchr(t->algorithm, '\0', sizeof(t->algorithm)) && t->algorithm[0]);
        else
                fuzz_assert(!t->root_hash[0] && !t->algorithm[0] && !t->options && !t->ignore_corruption &&
                            !t->corrupted);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = strndup((const char *) data, size);
        sd_json_variant *reply = NULL;
        const char *json, *error_id = NULL;
        DmTable t = {};
        char *nl;
        int r;

        if (!text)
                return 0;
        nl = strchr(text, '\n');
        json = nl ? nl + 1 : "";
        if (nl) {
                *nl = '\0';
                if (text[0])
                        error_id = text;
        }
        (void) sd_json_parse(json, 0, &reply, NULL, NULL);

        r = probe_reply_parse(error_id, reply, &t);
        fuzz_assert(r == 0 || r == -ENOMEM);
        if (r == 0)
                check_table(&t, reply, error_id);
        dm_table_done(&t);
        sd_json_variant_unref(reply);
        return 0;
}
