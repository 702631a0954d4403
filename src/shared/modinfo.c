/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdlib.h>

#include "modinfo.h"

void modinfo_done(ModInfo *m) {
        free(m->name);
        free(m->signature_type);
        free(m->signer);
        free(m->signature_key);
        free(m->signature_hash);
        free(m->alias);
        *m = (ModInfo) {};
}
