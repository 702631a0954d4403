/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "mountinfo.h"

#define MOUNTINFO_LINE_MAX (64 * 1024)

void mount_info_done(MountInfo *m) {
        free(m->mount_point);
        free(m->fstype);
        free(m->source);
        *m = (MountInfo) {};
}

bool mount_options_read_only(const char *opts) {
        size_t n;

        for (const char *p = opts; *p; p += n + (p[n] == ',')) {
                n = strcspn(p, ",");
                if (n == 2 && strncmp(p, "ro", 2) == 0)
                        return true;
        }
        return false;
}

/* The kernel escapes space, tab, newline and backslash as \ooo. */
static char *unescape(const char *s) {
        char *r, *t;

        r = t = malloc(strlen(s) + 1);
        if (!r)
                return NULL;

        while (*s) {
                if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
                    s[3] >= '0' && s[3] <= '7') {
                        *t++ = (char) (((s[1] - '0') << 6) | ((s[2] - '0') << 3) | (s[3] - '0'));
                        s += 4;
                } else
                        *t++ = *s++;
        }
        *t = '\0';
        return r;
}

static int parse_int(const char *s, int *ret) {
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || v < 0 || v > INT32_MAX)
                return -EBADMSG;
        *ret = (int) v;
        return 0;
}

int mount_info_parse_line(const char *line, MountInfo *ret) {
        _cleanup_free_ char *copy = NULL;
        char *fields[64], *save = NULL, *tok;
        size_t n = 0, sep = 0;
        MountInfo m = {};
        char dummy;

        assert(ret);

        if (strnlen(line, MOUNTINFO_LINE_MAX + 1) > MOUNTINFO_LINE_MAX)
                return -EBADMSG;

        copy = strdup(line);
        if (!copy)
                return -ENOMEM;
        copy[strcspn(copy, "\n")] = '\0';

        for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
                if (n >= ELEMENTSOF(fields))
                        return -EBADMSG;
                if (sep == 0 && n >= 6 && strcmp(tok, "-") == 0)
                        sep = n;
                fields[n++] = tok;
        }

        /* Six fixed fields, optional fields, "-", then type, source and super options. */
        if (sep < 6 || n != sep + 4)
                return -EBADMSG;

        if (parse_int(fields[0], &m.mount_id) < 0 || parse_int(fields[1], &m.parent_id) < 0)
                return -EBADMSG;
        if (sscanf(fields[2], "%u:%u%c", &m.major, &m.minor, &dummy) != 2)
                return -EBADMSG;

        m.mount_ro = mount_options_read_only(fields[5]);
        m.sb_ro = mount_options_read_only(fields[sep + 3]);

        m.mount_point = unescape(fields[4]);
        m.fstype = strdup(fields[sep + 1]);
        m.source = unescape(fields[sep + 2]);
        if (!m.mount_point || !m.fstype || !m.source) {
                mount_info_done(&m);
                return -ENOMEM;
        }

        *ret = m;
        return 0;
}

int mount_info_find(FILE *f, int mount_id, MountInfo *ret) {
        _cleanup_free_ char *line = NULL;
        size_t size = 0;

        assert(ret);

        while (getline(&line, &size, f) >= 0) {
                MountInfo m;
                int r;

                r = mount_info_parse_line(line, &m);
                if (r < 0)
                        return r;
                if (m.mount_id == mount_id) {
                        *ret = m;
                        return 0;
                }
                mount_info_done(&m);
        }

        return ferror(f) ? -EIO : -ENOENT;
}
