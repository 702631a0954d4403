/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>

#include "macro.h"
#include "mountinfo.h"
#include "tests.h"

TEST(erofs_read_only) {
        _cleanup_(mount_info_done) MountInfo m = {};

        check(mount_info_parse_line("98 30 7:0 / /tmp/mg/trusted ro,relatime shared:55 - erofs /dev/loop0 "
                                    "ro,user_xattr,acl,cache_strategy=readaround\n", &m) == 0);
        check(m.mount_id == 98);
        check(m.parent_id == 30);
        check(m.major == 7 && m.minor == 0);
        check_streq(m.mount_point, "/tmp/mg/trusted");
        check_streq(m.fstype, "erofs");
        check_streq(m.source, "/dev/loop0");
        check(m.mount_ro);
        check(m.sb_ro);
}

TEST(read_only_bind_of_writable) {
        _cleanup_(mount_info_done) MountInfo m = {};

        /* The mount is read-only, the superblock is not: this is the case a ST_RDONLY check gets wrong. */
        check(mount_info_parse_line("120 98 0:52 /copy /tmp/mg/robind ro,relatime - tmpfs tmpfs rw,size=1024k",
                                    &m) == 0);
        check(m.mount_ro);
        check(!m.sb_ro);
        check_streq(m.fstype, "tmpfs");
}

TEST(no_optional_fields_and_escapes) {
        _cleanup_(mount_info_done) MountInfo m = {};

        check(mount_info_parse_line("5 1 8:1 / /mnt/with\\040space rw - ext4 /dev/sd\\134a1 rw,errors=remount-ro",
                                    &m) == 0);
        check_streq(m.mount_point, "/mnt/with space");
        check_streq(m.source, "/dev/sd\\a1");
        check(!m.mount_ro);
        check(!m.sb_ro);
}

TEST(options) {
        check(mount_options_read_only("ro"));
        check(mount_options_read_only("rw,ro"));
        check(mount_options_read_only("relatime,ro,nosuid"));
        check(!mount_options_read_only("rw,errors=remount-ro"));
        check(!mount_options_read_only("rootcontext=ro"));
        check(!mount_options_read_only(""));
}

TEST(malformed) {
        static const char *const bad[] = {
                "",
                "98 30 7:0 / /x ro",                            /* no separator */
                "98 30 7:0 / /x ro - erofs",                    /* too short after it */
                "98 30 7:0 / /x ro - erofs /dev/loop0 ro extra",
                "x 30 7:0 / /x ro - erofs /dev/loop0 ro",
                "98 30 7-0 / /x ro - erofs /dev/loop0 ro",
                "98 30 7:0x / /x ro - erofs /dev/loop0 ro",
                "-1 30 7:0 / /x ro - erofs /dev/loop0 ro",
                "98 30 7:0 / - erofs /dev/loop0 ro",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                MountInfo m;
                check(mount_info_parse_line(bad[i], &m) == -EBADMSG);
        }
}

TEST(find) {
        _cleanup_(mount_info_done) MountInfo m = {};
        static const char text[] =
                "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
                "98 1 7:0 / /trusted ro - erofs /dev/loop0 ro\n";
        FILE *f;

        f = fmemopen((void *) text, sizeof(text) - 1, "r");
        check(f);
        check(mount_info_find(f, 98, &m) == 0);
        check_streq(m.fstype, "erofs");
        rewind(f);
        check(mount_info_find(f, 7, &(MountInfo) {}) == -ENOENT);
        fclose(f);
}

int main(void) {
        RUN(erofs_read_only);
        RUN(read_only_bind_of_writable);
        RUN(no_optional_fields_and_escapes);
        RUN(options);
        RUN(malformed);
        RUN(find);
        return tests_done();
}
