/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "load-parameters.h"
#include "manager.h"

/* Starts an io.modgate.Manager.Explain of p for link: what a Load of p would do, step by step: the
 * policy on the key, the resolution, and for each module its state, the policy's verdict with its
 * rule, and the checks a load would make on its file, made on the same pinned roots. Those checks
 * (hashing, decompressing, asking the prober) run on the reader pool, never on the event loop; the
 * reply is sent when they are done. Nothing is loaded and nothing recorded. Returns 0 (the reply
 * follows), the result of a Busy reply when the caller's uid has too many calls in progress, or
 * -errno (-ENOMEM, or the index cannot be read). */
int explain_start(Manager *m, sd_varlink *link, const LoadParameters *p);
