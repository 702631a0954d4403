/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-json.h>

#include "load-parameters.h"
#include "manager.h"

/* What a Load of p would do, step by step, as io.modgate.Manager.Explain's reply: the policy on the
 * key, the resolution, and for each module its state, the policy's verdict with its rule, and the
 * checks a load would make on its file, made now on the same pinned roots. Nothing is loaded and
 * nothing recorded. Returns 0 or -ENOMEM (other -errno when the index cannot be read). */
int explain_request(Manager *m, const LoadParameters *p, sd_json_variant **ret);
