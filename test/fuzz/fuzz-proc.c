/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* What the daemon reads of a caller and its device from procfs and sysfs: /proc/PID/status (CapEff,
 * PPid, Groups, Name for authorization; CapBnd for udevd's check), /proc/PID/stat (is the parent a
 * kernel thread), /proc/PID/uid_map (the initial user namespace) and a device's uevent file
 * (MODALIAS). The input is given to each, as the text of the file. */

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "peer.h"
#include "udevd-check.h"

/* The first line that starts with key: its value after the blanks, up to the end of the line. */
static const char *line_value(const char *text, const char *key, size_t *ret_len) {
        for (const char *p = text; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, key, strlen(key)) == 0) {
                        p += strlen(key);
                        p += strspn(p, " \t");
                        *ret_len = strcspn(p, "\n");
                        return p;
                }
        return NULL;
}

/* A capability set as the kernel writes it: 16 hex digits. */
static bool kernel_caps(const char *text, const char *key, uint64_t *ret) {
        size_t n;
        const char *v = line_value(text, key, &n);
        char buf[17];

        if (!v || n != 16 || strspn(v, "0123456789abcdef") < 16)
                return false;
        memcpy(buf, v, 16);
        buf[16] = '\0';
        *ret = strtoull(buf, NULL, 16);
        return true;
}

static void check_status(const char *text) {
        uint64_t want;
        ProcStatus s;
        int r;

        r = proc_status_parse(text, &s);
        fuzz_assert(r == 0 || r == -EBADMSG);
        if (r == 0) {
                fuzz_assert(s.n_groups <= PEER_GROUPS_MAX);
                fuzz_assert(memchr(s.comm, '\0', sizeof(s.comm)) && !strchr(s.comm, '\n'));
        }
        /* A status the kernel could have written is read, and its capabilities as written. */
        if (kernel_caps(text, "CapEff:", &want) && line_value(text, "PPid:", &(size_t) { 0 }))
                fuzz_assert(r == 0 && s.cap_eff == want);

        r = proc_status_cap_bnd(text, &want);
        fuzz_assert(r == 0 || r == -EBADMSG);
        if (r == 0) {
                uint64_t v;

                fuzz_assert(!kernel_caps(text, "CapBnd:", &v) || v == want);
        }
}

/* The value of the first MODALIAS= line, or none when it is empty. */
static void check_uevent(const char *text) {
        _cleanup_free_ char *modalias = NULL;
        const char *v = NULL;
        int r;

        r = uevent_modalias(text, &modalias);
        fuzz_assert(r == 0 || r == -ENOMEM);
        if (r < 0)
                return;
        for (const char *p = text; p && !v; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, "MODALIAS=", 9) == 0)
                        v = p + 9;
        if (!v || strcspn(v, "\n") == 0) {
                fuzz_assert(!modalias);
                return;
        }
        fuzz_assert(modalias && strlen(modalias) == strcspn(v, "\n") && strncmp(modalias, v, strlen(modalias)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = strndup((const char *) data, size);

        if (!text)
                return 0;
        check_status(text);
        check_uevent(text);
        (void) proc_stat_is_kthread(text);
        if (uid_map_is_initial(text))
                fuzz_assert(strchr(text, '\n') == text + strlen(text) - 1);
        return 0;
}
