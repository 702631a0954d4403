/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-varlink.h>

#include "load-parameters.h"
#include "manager.h"
#include "request.h"

#define reply_invalid(link, error, ...) sd_varlink_errorbo(link, "io.modgate.Manager." error, __VA_ARGS__)

/* Each stage returns 1 to go on, or the reply's result: the request was answered (an error) or the
 * answer failed (-errno). */

/* A request that load_parameters_parse() refused, answered with its named error. */
int load_reply_refusal(sd_varlink *link, const LoadParameters *p, const LoadRefusal *f);

/* A DenyRequest= refuses the key itself, whatever it would resolve to. */
int load_judge_key(Manager *m, sd_varlink *link, const LoadParameters *p, const Requester *who);

/* The plan of the request: the resolver's for a key (*ret_owned NULL), the caller's for a path. Not
 * found, blacklisted for a boot or udev request, or a dependency loop is answered here. */
int load_plan(Manager *m, sd_varlink *link, const LoadParameters *p, const Requester *who,
              const Plan **ret_plan, Plan **ret_owned);

/* The policy on every module of the plan: a denied requested module (itself or through a hard
 * dependency) denies the request; a denied softdep is left out of *plan (then *owned), and named in
 * *ret_denied. */
int load_judge_plan(Manager *m, sd_varlink *link, const Requester *who, const Plan **plan, Plan **owned,
                    sd_json_variant **ret_denied);

/* The request's own parameters, within the module's [Parameters] rule, never over the
 * administrator's options. */
int load_judge_parameters(Manager *m, sd_varlink *link, const LoadParameters *p, const Requester *who,
                          const Plan *plan);

/* The plan's jobs, joined with those in flight; link is answered when they are done (not at all for a
 * oneway call). arrival_usec is when the call came, for Status's latency. Returns 0 or the reply's
 * result. */
int load_start(Manager *m, sd_varlink *link, sd_varlink_method_flags_t flags, const LoadParameters *p,
               const Requester *who, const Plan *plan, sd_json_variant *denied, uint64_t arrival_usec);

/* Unload of name (valid, canonical) for who, answered on link. */
int manager_unload(Manager *m, sd_varlink *link, const Requester *who, const char *name);
