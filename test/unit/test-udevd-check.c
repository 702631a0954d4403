/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests.h"
#include "udevd-check.h"

#define CAP_SYS_MODULE_BIT (UINT64_C(1) << 16)

TEST(status_parse) {
        uint64_t v = 0;

        check(proc_status_cap_bnd("Name:\tsystemd-udevd\nCapInh:\t0000000000000000\n"
                                  "CapBnd:\t000001fffffeffff\nCapAmb:\t0000000000000000\n", &v) == 0);
        check(v == UINT64_C(0x000001fffffeffff));
        check(!(v & CAP_SYS_MODULE_BIT));
        check(proc_status_cap_bnd("CapBnd:\t000001ffffffffff", &v) == 0);
        check(v & CAP_SYS_MODULE_BIT);
        check(proc_status_cap_bnd("Name:\tx\nCapEff:\t0\n", &v) == -EBADMSG);
        check(proc_status_cap_bnd("CapBnd:\tzz\n", &v) == -EBADMSG);
        check(proc_status_cap_bnd("CapBnd:\t\n", &v) == -EBADMSG);
        check(proc_status_cap_bnd("", &v) == -EBADMSG);
}

static char *proc = NULL;

static void put(const char *pid, const char *file, const char *text) {
        char path[4096];
        int fd;

        snprintf(path, sizeof(path), "%s/%s", proc, pid);
        (void) mkdir(path, 0755);
        snprintf(path, sizeof(path), "%s/%s/%s", proc, pid, file);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        check(fd >= 0);
        check(write(fd, text, strlen(text)) == (ssize_t) strlen(text));
        close(fd);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static void fresh_proc(void) {
        static char tmpl[64];

        if (proc)
                check(nftw(proc, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
        strcpy(tmpl, "/tmp/test-udevd-check-XXXXXX");
        proc = mkdtemp(tmpl);
        check(proc);
        put("1", "comm", "systemd\n");
        put("1", "status", "Name:\tsystemd\nCapBnd:\t000001ffffffffff\n");
        put("self", "comm", "systemd-udevd\n");        /* not a pid: ignored */
        put("self", "status", "CapBnd:\t000001ffffffffff\n");
        put("77", "comm", "(udev-worker)\n");
        put("77", "status", "CapBnd:\t000001ffffffffff\n");
}

TEST(scan) {
        fresh_proc();
        check(udevd_check_cap_sys_module_at(proc) == -ESRCH);

        put("412", "comm", "systemd-udevd\n");
        put("412", "status", "Name:\tsystemd-udevd\nCapBnd:\t000001fffffeffff\n");
        check(udevd_check_cap_sys_module_at(proc) == 0);

        put("413", "comm", "systemd-udevd\n");
        put("413", "status", "Name:\tsystemd-udevd\nCapBnd:\t000001ffffffffff\n");
        check(udevd_check_cap_sys_module_at(proc) == 1);

        fresh_proc();
        put("500", "comm", "systemd-udevd\n");       /* gone before its status was read */
        check(udevd_check_cap_sys_module_at(proc) == -ESRCH);

        check(udevd_check_cap_sys_module_at("/nonexistent-proc") == -ENOENT);
        check(nftw(proc, remove_one, 16, FTW_DEPTH | FTW_PHYS) == 0);
}

/* What the check must answer for the real /proc, found here without its code: any systemd-udevd
 * with CAP_SYS_MODULE in its bounding set gives 1, only ones without it 0, none -ESRCH. */
static int expected_for_real_proc(void) {
        struct dirent *de;
        int expected = -ESRCH;
        DIR *d;

        d = opendir("/proc");
        check(d);
        while ((de = readdir(d))) {
                char path[300], comm[64] = "", line[256];
                unsigned long long bnd;
                bool found = false;
                FILE *f;

                if (!isdigit((unsigned char) de->d_name[0]))
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
                f = fopen(path, "re");
                if (!f)
                        continue;
                if (!fgets(comm, sizeof(comm), f))
                        comm[0] = '\0';
                fclose(f);
                if (strcmp(comm, "systemd-udevd\n") != 0)
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
                f = fopen(path, "re");
                if (!f)
                        continue;
                while (fgets(line, sizeof(line), f))
                        if (sscanf(line, "CapBnd: %llx", &bnd) == 1)
                                found = true;
                fclose(f);
                if (!found)
                        continue;
                if (bnd & CAP_SYS_MODULE_BIT)
                        expected = 1;
                else if (expected != 1)
                        expected = 0;
        }
        closedir(d);
        return expected;
}

TEST(real_proc) {
        int expected = expected_for_real_proc();

        check(udevd_check_cap_sys_module() == expected);
}

int main(void) {
        RUN(status_parse);
        RUN(scan);
        RUN(real_proc);
        return tests_done();
}
