/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tests.h"
#include "uevent-log.h"

/* A message as the kernel sends it: the header and KEY=VALUE strings, each ending in NUL. */
#define MSG(s) s, sizeof(s)

static void add(UeventLog *l, const char *buf, size_t size) {
        Uevent u;

        check(uevent_parse(buf, size, &u) == 0);
        check(uevent_log_add(l, &u) == 0);
}

TEST(parse) {
        Uevent u;

        check(uevent_parse(MSG("add@/devices/platform/vga-framebuffer.0\0ACTION=add\0"
                               "DEVPATH=/devices/platform/vga-framebuffer.0\0SUBSYSTEM=platform\0"
                               "MODALIAS=platform:vga-framebuffer\0SEQNUM=1249\0"), &u) == 0);
        check(u.seqnum == 1249);
        check_streq(u.action, "add");
        check_streq(u.devpath, "/devices/platform/vga-framebuffer.0");
        check_streq(u.subsystem, "platform");
        check_streq(u.modalias, "platform:vga-framebuffer");
        uevent_done(&u);

        /* A CPU's MODALIAS ends in a newline, which udev does not pass on. */
        check(uevent_parse(MSG("add@/devices/system/cpu/cpu0\0ACTION=add\0DEVPATH=/devices/system/cpu/cpu0\0"
                               "SUBSYSTEM=cpu\0MODALIAS=cpu:type:x86,ven0000fam0006mod003F:feature:,0000\n\0"
                               "SEQNUM=9\0"), &u) == 0);
        check_streq(u.modalias, "cpu:type:x86,ven0000fam0006mod003F:feature:,0000");
        uevent_done(&u);

        /* No MODALIAS, an empty one: none. */
        check(uevent_parse(MSG("add@/module/parport_pc\0ACTION=add\0DEVPATH=/module/parport_pc\0"
                               "SUBSYSTEM=module\0MODALIAS=\0SEQNUM=7\0"), &u) == 0);
        check(!u.modalias);
        uevent_done(&u);

        /* udevd's own messages, and what lacks ACTION, DEVPATH or SEQNUM, are no kernel uevent. */
        check(uevent_parse(MSG("libudev\0ACTION=add\0DEVPATH=/x\0SEQNUM=1\0"), &u) == -EBADMSG);
        check(uevent_parse(MSG("add@/x\0DEVPATH=/x\0SEQNUM=1\0"), &u) == -EBADMSG);
        check(uevent_parse(MSG("add@/x\0ACTION=add\0SEQNUM=1\0"), &u) == -EBADMSG);
        check(uevent_parse(MSG("add@/x\0ACTION=add\0DEVPATH=/x\0SEQNUM=x\0"), &u) == -EBADMSG);
        check(uevent_parse(MSG("add@/x\0ACTION=add\0DEVPATH=x\0SEQNUM=1\0"), &u) == -EBADMSG);
        check(uevent_parse("add@/x", 6, &u) == -EBADMSG);
        /* A last string cut short is left out. */
        check(uevent_parse("add@/x\0ACTION=add\0DEVPATH=/x\0SEQNUM=3\0MODALIAS=ab", 46, &u) == 0);
        check(!u.modalias && u.seqnum == 3);
        uevent_done(&u);
}

TEST(match) {
        _cleanup_(uevent_log_freep) UeventLog *l = NULL;
        const Uevent *u = NULL;
        char why[256];
        Uevent v;

        check(uevent_log_new_detached(&l) == 0);
        uevent_log_blind_until(l, 100);
        add(l, MSG("add@/devices/a\0ACTION=add\0DEVPATH=/devices/a\0SUBSYSTEM=pci\0MODALIAS=pci:a\0SEQNUM=101\0"));
        add(l, MSG("remove@/devices/a\0ACTION=remove\0DEVPATH=/devices/a\0SUBSYSTEM=pci\0SEQNUM=105\0"));

        /* The event, even though the device is gone (removed by 105). */
        check(uevent_log_match(l, 101, "/devices/a", "add", &u, why, sizeof(why)) == UEVENT_MATCH);
        check_streq(u->modalias, "pci:a");
        check(uevent_log_match(l, 101, "/devices/a", NULL, &u, why, sizeof(why)) == UEVENT_MATCH);
        /* Another device's, another action: refused, saying so. */
        check(uevent_log_match(l, 101, "/devices/b", "add", &u, why, sizeof(why)) == UEVENT_NONE);
        check_streq(why, "the kernel's uevent 101 is for /devices/a, not /devices/b");
        check(uevent_log_match(l, 105, "/devices/a", "add", &u, why, sizeof(why)) == UEVENT_NONE);
        check_streq(why, "the kernel's uevent 105 for /devices/a is \"remove\", not \"add\"");
        /* None after what the log may have missed: refused; at or before it: sysfs decides. */
        check(uevent_log_match(l, 103, "/devices/a", "add", &u, why, sizeof(why)) == UEVENT_NONE);
        check_streq(why, "the kernel sent no uevent 103");
        check(uevent_log_match(l, 100, "/devices/a", "add", &u, why, sizeof(why)) == UEVENT_UNKNOWN);
        check(uevent_log_match(l, -1, "/devices/a", "add", &u, why, sizeof(why)) == UEVENT_NONE);
        check_streq(why, "the request gives no SEQNUM of the kernel's event");
        /* An overflow: everything up to the kernel's SEQNUM then may be missing. */
        uevent_log_blind_until(l, 110);
        check(uevent_log_match(l, 103, "/devices/a", "add", &u, why, sizeof(why)) == UEVENT_UNKNOWN);
        check(uevent_log_match(l, 101, "/devices/a", "add", &u, why, sizeof(why)) == UEVENT_MATCH);

        /* Out of order, as two CPUs' events come: put in its place, and found. */
        check(uevent_parse(MSG("add@/devices/c\0ACTION=add\0DEVPATH=/devices/c\0SEQNUM=104\0"), &v) == 0);
        check(uevent_log_add(l, &v) == 0);
        check(uevent_log_match(l, 104, "/devices/c", "add", &u, why, sizeof(why)) == UEVENT_MATCH);
        check(uevent_log_match(l, 105, "/devices/a", "remove", &u, why, sizeof(why)) == UEVENT_MATCH);
        check(uevent_log_match(l, 101, "/devices/a", "add", &u, why, sizeof(why)) == UEVENT_MATCH);
        /* A SEQNUM that is there already: not the kernel's. */
        check(uevent_parse(MSG("add@/devices/d\0ACTION=add\0DEVPATH=/devices/d\0SEQNUM=104\0"), &v) == 0);
        check(uevent_log_add(l, &v) == -EINVAL);
        uevent_done(&v);
        check(uevent_log_match(l, 104, "/devices/c", "add", &u, why, sizeof(why)) == UEVENT_MATCH);
}

TEST(ring) {
        _cleanup_(uevent_log_freep) UeventLog *l = NULL;
        const Uevent *u = NULL;
        char why[256], buf[256];

        check(uevent_log_new_detached(&l) == 0);
        for (unsigned i = 1; i <= UEVENT_LOG_MAX + 10; i++) {
                int n = snprintf(buf, sizeof(buf), "add@/d/%u%cACTION=add%cDEVPATH=/d/%u%cSEQNUM=%u%c", i, 0, 0, i,
                                 0, i, 0);
                add(l, buf, (size_t) n);
        }
        /* The oldest are forgotten: sysfs decides for them, the kept ones still match. */
        check(uevent_log_match(l, 10, "/d/10", "add", &u, why, sizeof(why)) == UEVENT_UNKNOWN);
        check(uevent_log_match(l, 11, "/d/11", "add", &u, why, sizeof(why)) == UEVENT_MATCH);
        check(uevent_log_match(l, UEVENT_LOG_MAX + 10, "/d/4106", "add", &u, why, sizeof(why)) == UEVENT_MATCH);
        check(uevent_log_match(l, UEVENT_LOG_MAX + 11, "/d/4107", "add", &u, why, sizeof(why)) == UEVENT_NONE);

        /* Full, and two events out of order: each in its place, the oldest forgotten for each. */
        for (unsigned i = UEVENT_LOG_MAX + 12; i >= UEVENT_LOG_MAX + 11; i--) {
                int n = snprintf(buf, sizeof(buf), "add@/d/%u%cACTION=add%cDEVPATH=/d/%u%cSEQNUM=%u%c", i, 0, 0, i,
                                 0, i, 0);
                add(l, buf, (size_t) n);
        }
        check(uevent_log_match(l, UEVENT_LOG_MAX + 11, "/d/4107", "add", &u, why, sizeof(why)) == UEVENT_MATCH);
        check(uevent_log_match(l, UEVENT_LOG_MAX + 12, "/d/4108", "add", &u, why, sizeof(why)) == UEVENT_MATCH);
        check(uevent_log_match(l, 12, "/d/12", "add", &u, why, sizeof(why)) == UEVENT_UNKNOWN);
        check(uevent_log_match(l, 13, "/d/13", "add", &u, why, sizeof(why)) == UEVENT_MATCH);
        /* One older than all that is kept: not kept, and sysfs decides for it. */
        add(l, MSG("add@/d/5\0ACTION=add\0DEVPATH=/d/5\0SEQNUM=5\0"));
        check(uevent_log_match(l, 5, "/d/5", "add", &u, why, sizeof(why)) == UEVENT_UNKNOWN);
        check(uevent_log_match(l, 13, "/d/13", "add", &u, why, sizeof(why)) == UEVENT_MATCH);
}

TEST(save_restore) {
        _cleanup_(uevent_log_freep) UeventLog *l = NULL, *next = NULL, *bad = NULL;
        _cleanup_free_ char *text = NULL;
        const Uevent *u = NULL;
        char why[256];
        off_t size;
        int fd;

        check(uevent_log_new_detached(&l) == 0);
        uevent_log_blind_until(l, 40);
        add(l, MSG("add@/module/parport_pc\0ACTION=add\0DEVPATH=/module/parport_pc\0SUBSYSTEM=module\0SEQNUM=41\0"));
        add(l, MSG("add@/devices/p\0ACTION=add\0DEVPATH=/devices/p\0MODALIAS=platform:x\0SEQNUM=45\0"));
        fd = memfd_create("test", MFD_CLOEXEC);
        check(fd >= 0);
        check(uevent_log_save(l, fd) == 0);
        size = lseek(fd, 0, SEEK_END);
        check(size > 0 && (text = malloc((size_t) size)));
        check(pread(fd, text, (size_t) size, 0) == size);
        close(fd);

        /* The next instance continues: the events, and the blind spot where it was (not now's). */
        check(uevent_log_new_detached(&next) == 0);
        uevent_log_blind_until(next, 1000);
        check(uevent_log_restore(next, text, (size_t) size) == 0);
        check(uevent_log_match(next, 41, "/module/parport_pc", "add", &u, why, sizeof(why)) == UEVENT_MATCH);
        check_streq(u->subsystem, "module");
        check(uevent_log_match(next, 45, "/devices/p", "add", &u, why, sizeof(why)) == UEVENT_MATCH);
        check_streq(u->modalias, "platform:x");
        check(!u->subsystem);
        check(uevent_log_match(next, 43, "/devices/p", "add", &u, why, sizeof(why)) == UEVENT_NONE);
        check(uevent_log_match(next, 40, "/devices/p", "add", &u, why, sizeof(why)) == UEVENT_UNKNOWN);
        check(uevent_log_restore(next, text, (size_t) size) == -EBUSY);

        /* Cut short: nothing of it is taken, the log is as it was. */
        check(uevent_log_new_detached(&bad) == 0);
        uevent_log_blind_until(bad, 1000);
        check(uevent_log_restore(bad, text, (size_t) size - 3) == -EBADMSG);
        check(uevent_log_match(bad, 45, "/devices/p", "add", &u, why, sizeof(why)) == UEVENT_UNKNOWN);
        check(uevent_log_restore(bad, "B x", 4) == -EBADMSG);
}

int main(void) {
        RUN(parse);
        RUN(match);
        RUN(ring);
        RUN(save_restore);
        return tests_done();
}
