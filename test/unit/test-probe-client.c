/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* probe_dm_table() against a prober of this test's own: its answer is believed only when the process
 * that wrote it is in the expected cgroup (MODGATE_PROBE_CGROUP), as the kernel tells the reader, not
 * as the socket's path or the answer says. */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "probe-client.h"
#include "tests-tmp.h"

#define ROOT_HASH "4392712ba01368efdf14b05c76f9e4df0d53664630b5d48632ed17a137f39076"

static const char reply[] =
        "{\"parameters\":{\"name\":\"root\",\"uuid\":\"\",\"targets\":[{\"type\":\"verity\",\"verity\":"
        "{\"rootHash\":\"" ROOT_HASH "\",\"algorithm\":\"sha256\",\"ignoreCorruption\":false,"
        "\"corrupted\":false}}]}}";

/* A prober that answers one question with a verity table, whatever it is asked. */
static pid_t fake_prober(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int s, c;
        pid_t pid;

        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
        s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        check(s >= 0);
        check(bind(s, (struct sockaddr *) &sa, sizeof(sa)) == 0);
        check(listen(s, 4) == 0);
        pid = fork();
        check(pid >= 0);
        if (pid > 0) {
                close(s);
                return pid;
        }
        c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (c >= 0) {
                char buf[4096];
                ssize_t n;

                /* One message, NUL-terminated. */
                while ((n = read(c, buf, sizeof(buf))) > 0 && !memchr(buf, 0, (size_t) n))
                        ;
                (void) !write(c, reply, sizeof(reply));
                (void) read(c, buf, sizeof(buf));
        }
        _exit(0);
}

static void ask(const char *path, Origin *o) {
        pid_t pid = fake_prober(path);

        check(probe_dm_table(path, o) == 0);
        kill(pid, SIGKILL);
        check(waitpid(pid, NULL, 0) == pid);
        unlink(path);
}

TEST(own_cgroup_believed) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        char cgroups[4096], path[256];
        Origin o = { .device_dev = makedev(254, 0) };
        const char *line;

        check(read_small_file_at(AT_FDCWD, "/proc/self/cgroup", cgroups, sizeof(cgroups)) == 0);
        line = strstr(cgroups, "0::");
        check(line);
        line += 3;
        cgroups[line - cgroups + strcspn(line, "\n")] = '\0';
        check(setenv("MODGATE_PROBE_CGROUP", line, 1) == 0);
        snprintf(path, sizeof(path), "%s/probe", root);

        ask(path, &o);
        check(o.dm.error == 0);
        check_streq(o.dm.target, "verity");
        check_streq(o.dm.root_hash, ROOT_HASH);
        dm_table_done(&o.dm);
}

TEST(other_cgroup_refused) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        char path[256], want[512];
        Origin o = { .device_dev = makedev(254, 0) };

        /* The unit's cgroup, which this test is not in: the answer is someone else's. */
        check(unsetenv("MODGATE_PROBE_CGROUP") == 0);
        check_streq(probe_expected_cgroup(), PROBE_CGROUP);
        snprintf(path, sizeof(path), "%s/probe", root);
        ask(path, &o);
        check(o.dm.error == -EPERM);
        check(o.dm.n_targets == 0 && !o.dm.root_hash[0]);
        snprintf(want, sizeof(want), "the answer on %s is not from the prober, so not believed (process ", path);
        check(o.dm.error_detail && strncmp(o.dm.error_detail, want, strlen(want)) == 0);
        check(strstr(o.dm.error_detail, ", not " PROBE_CGROUP ")"));
        fprintf(stderr, "# %s\n", o.dm.error_detail);
        dm_table_done(&o.dm);

        /* A relative path in the environment is no cgroup: the default stands. */
        check(setenv("MODGATE_PROBE_CGROUP", "system.slice/x", 1) == 0);
        check_streq(probe_expected_cgroup(), PROBE_CGROUP);
        check(unsetenv("MODGATE_PROBE_CGROUP") == 0);
}

int main(void) {
        RUN(own_cgroup_believed);
        RUN(other_cgroup_refused);
        return tests_done();
}
