/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-varlink.h>

#include "decide.h"
#include "load-parameters.h"
#include "manager.h"
#include "request.h"

/* A request that load_parameters_parse() refused, answered with its named error. */
int load_reply_refusal(sd_varlink *link, const LoadParameters *p, const LoadRefusal *f);

/* The decision on a request (decide.h), with what it was made from. */
typedef struct LoadJudgement {
        LoadInput input;
        Plan *owned;            /* a path's plan; a key's belongs to the resolver, valid until it is
                                 * asked again */
        LoadDecision decision;
} LoadJudgement;

void load_judgement_done(LoadJudgement *j);

/* Decides p with the manager's policy and index, the kernel being as seal says. The index is asked
 * only when the decision needs it, unless resolve: Explain says what it would resolve to in any
 * case. Returns 0 or -ENOMEM. */
int load_judge(Manager *m, const LoadParameters *p, KernelSeal seal, bool resolve, LoadJudgement *ret);

/* The plan a Load goes on with: the index's, without the softdeps the policy left out. */
const Plan *load_judgement_plan(const LoadJudgement *j);

/* Writes the records of what j decided for who, and answers a refusal on link; not LOAD_SEALED, which
 * seal_refuse() answers. Returns 1 to go on with load_judgement_plan(), else the reply's result. */
int load_judgement_apply(Manager *m, sd_varlink *link, const Requester *who, const LoadJudgement *j);

/* Busy: module (of the request) is loading from another file or with other parameters
 * (scheduler_submit()'s -EBUSY). Returns the reply's result. */
int load_reply_busy(sd_varlink *link, const char *module);

/* The plan's jobs, joined with those in flight; link is answered when they are done (not at all for a
 * oneway call). arrival_usec is when the call came, for Status's latency. Returns 0 or the reply's
 * result. */
int load_start(Manager *m, sd_varlink *link, sd_varlink_method_flags_t flags, const LoadParameters *p,
               const Requester *who, const Plan *plan, sd_json_variant *denied, uint64_t arrival_usec);

/* At exit: the Load calls still waiting, freed. */
void manager_free_requests(Manager *m);
