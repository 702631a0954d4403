/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "macro.h"
#include "method-describe.h"
#include "record-history.h"
#include "scheduler.h"
#include "time-util.h"
#include "varlink-errors.h"

struct DescribeWait {
        Manager *manager;
        sd_varlink *link;
        char *name;
        sd_event_source *timer;
        DescribeWait *next;
};

static int describe_reply(Manager *m, sd_varlink *link, const char *name) {
        sd_json_variant *e = history_get(m->history, name);

        if (!e)
                return sd_varlink_errorbo(link, MANAGER_ERROR_NO_RECORD,
                                          SD_JSON_BUILD_PAIR_STRING("module", name));
        return sd_varlink_replybo(link, SD_JSON_BUILD_PAIR_VARIANT("module", e));
}

/* Unlinks w, answers it and frees it. */
static void describe_wait_finish(DescribeWait *w) {
        Manager *m = w->manager;
        int r;

        for (DescribeWait **p = &m->describe_waits; *p; p = &(*p)->next)
                if (*p == w) {
                        *p = w->next;
                        break;
                }
        m->n_describe_waits--;
        r = describe_reply(m, w->link, w->name);
        if (r < 0)
                log_debug_errno(r, "Failed to answer a Describe of %s: %m", w->name);
        sd_event_source_disable_unref(w->timer);
        sd_varlink_unref(w->link);
        free(w->name);
        free(w);
}

static int on_describe_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        describe_wait_finish(userdata);
        return 0;
}

int manager_describe(Manager *m, sd_varlink *link, const char *name) {
        _cleanup_free_ DescribeWait *w = NULL;
        int r;

        assert(m);
        assert(link);
        assert(name);

        /* The entry of a load is kept when finit_module() returns; what its file's .modinfo says (its
         * own name, its signer) comes a moment later, read by a worker that no load wants. An
         * administrator asking right after a load gets the whole entry, waiting for that moment; a
         * worker pool busy with a storm of loads delays it, and then the entry comes as it is. */
        if (!scheduler_has_unrecorded(m->scheduler, name) || m->n_describe_waits >= DESCRIBE_WAITING_MAX)
                return describe_reply(m, link, name);

        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->name = strdup(name);
        if (!w->name)
                return -ENOMEM;
        r = sd_event_add_time_relative(m->event, &w->timer, CLOCK_MONOTONIC, DESCRIBE_WAIT_USEC, 0,
                                       on_describe_timeout, w);
        if (r < 0) {
                free(w->name);
                return r;
        }
        w->manager = m;
        w->link = sd_varlink_ref(link);
        w->next = m->describe_waits;
        m->describe_waits = TAKE_PTR(w);
        m->n_describe_waits++;
        return 0;
}

void manager_describe_recorded(Manager *m, const char *name) {
        DescribeWait *next;

        assert(m);

        for (DescribeWait *w = m->describe_waits; w; w = next) {
                next = w->next;
                if (strcmp(w->name, name) == 0)
                        describe_wait_finish(w);
        }
}

void manager_describe_flush(Manager *m) {
        assert(m);

        while (m->describe_waits)
                describe_wait_finish(m->describe_waits);
}
