/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* A message from the kernel's uevent socket, as modgated reads it (uevent_parse()), and the log of
 * such events that an instance saves for the next (uevent_log_restore()). The input is either. */

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "uevent-log.h"

/* A message parsed is kept as the kernel sent it: saved and read back, the same event matches. */
static void round_trip(Uevent *u) {
        _cleanup_(uevent_log_freep) UeventLog *l = NULL, *next = NULL;
        _cleanup_free_ char *text = NULL, *devpath = NULL, *action = NULL;
        const Uevent *found = NULL;
        uint64_t seqnum = u->seqnum;
        char why[256];
        off_t size;
        int fd;

        fuzz_assert(u->devpath[0] == '/');
        fuzz_assert(!u->modalias || u->modalias[0]);
        devpath = strdup(u->devpath);
        action = strdup(u->action);
        if (!devpath || !action || seqnum > INT64_MAX || uevent_log_new_detached(&l) < 0)
                return;
        fuzz_assert(uevent_log_add(l, u) == 0);
        fuzz_assert(uevent_log_match(l, (int64_t) seqnum, devpath, action, &found, why, sizeof(why)) ==
                    UEVENT_MATCH);
        fd = memfd_create("fuzz", MFD_CLOEXEC);
        if (fd < 0)
                return;
        if (uevent_log_save(l, fd) < 0 || (size = lseek(fd, 0, SEEK_END)) <= 0 ||
            !(text = malloc((size_t) size)) || pread(fd, text, (size_t) size, 0) != size) {
                close(fd);
                return;
        }
        close(fd);
        if (uevent_log_new_detached(&next) < 0)
                return;
        /* Values with '@' or '=' of their own survive, a value cannot hold a NUL. */
        fuzz_assert(uevent_log_restore(next, text, (size_t) size) == 0);
        fuzz_assert(uevent_log_match(next, (int64_t) seqnum, devpath, action, &found, why, sizeof(why)) ==
                    UEVENT_MATCH);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(uevent_log_freep) UeventLog *l = NULL;
        Uevent u;
        int r;

        if (size > UEVENT_MESSAGE_MAX)
                return 0;
        r = uevent_parse((const char *) data, size, &u);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ENOMEM);
        if (r == 0) {
                round_trip(&u);
                uevent_done(&u);
        }

        if (uevent_log_new_detached(&l) < 0)
                return 0;
        r = uevent_log_restore(l, (const char *) data, size);
        fuzz_assert(r == 0 || r == -EBADMSG || r == -ENOMEM);
        return 0;
}
