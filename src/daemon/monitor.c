/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "log.h"
#include "module-loader.h"
#include "monitor.h"
#include "strv.h"
#include "time-util.h"

typedef struct Subscriber {
        sd_varlink *link;
        char **modules;         /* NULL: every event */
} Subscriber;

struct Monitors {
        Subscriber subs[MONITORS_MAX];
        size_t n;
};

int monitors_new(Monitors **ret) {
        *ret = calloc(1, sizeof(Monitors));
        return *ret ? 0 : -ENOMEM;
}

static void subscriber_done(Subscriber *s) {
        sd_varlink_unref(s->link);
        strv_free(s->modules);
        *s = (Subscriber) {};
}

Monitors *monitors_free(Monitors *ms) {
        if (!ms)
                return NULL;
        for (size_t i = 0; i < ms->n; i++)
                subscriber_done(ms->subs + i);
        free(ms);
        return NULL;
}

bool monitors_active(const Monitors *ms) {
        return ms && ms->n > 0;
}

static void monitors_drop(Monitors *ms, size_t i) {
        subscriber_done(ms->subs + i);
        ms->subs[i] = ms->subs[--ms->n];
        ms->subs[ms->n] = (Subscriber) {};
}

int monitors_add(Monitors *ms, sd_varlink *link, char **modules) {
        int r;

        assert(ms);

        if (ms->n >= MONITORS_MAX) {
                strv_free(modules);
                return -EBUSY;
        }
        r = sd_varlink_notifybo(link, SD_JSON_BUILD_PAIR("event", SD_JSON_BUILD_OBJECT(
                        SD_JSON_BUILD_PAIR_STRING("type", "ready"),
                        SD_JSON_BUILD_PAIR_UNSIGNED("time", realtime_usec()))));
        if (r < 0) {
                strv_free(modules);
                return r;
        }
        ms->subs[ms->n++] = (Subscriber) { .link = sd_varlink_ref(link), .modules = modules };
        return 0;
}

void monitors_forget(Monitors *ms, sd_varlink *link) {
        for (size_t i = 0; ms && i < ms->n; i++)
                if (ms->subs[i].link == link) {
                        monitors_drop(ms, i);
                        return;
                }
}

void monitors_send(Monitors *ms, const char *module, sd_json_variant *event) {
        for (size_t i = 0; ms && i < ms->n;) {
                Subscriber *s = ms->subs + i;
                int r;

                if (s->modules && (!module || !strv_contains(s->modules, module))) {
                        i++;
                        continue;
                }
                r = sd_varlink_notifybo(s->link, SD_JSON_BUILD_PAIR_VARIANT("event", event));
                if (r < 0) {
                        log_debug_errno(r, "Dropping a Monitor subscriber that cannot be sent to: %m");
                        monitors_drop(ms, i);
                        continue;
                }
                i++;
        }
}
