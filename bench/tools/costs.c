/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* costs: what the pieces of modgated's per-request work cost on their own, each repeated N times in
 * this process, so that a profile without perf can say what costs what.
 *
 *   costs DIR MODULE KEY N
 *   costs --files LIST                 per module file of LIST (one path a line), what a load adds:
 *                                      modinfo (a fresh kmod context, kmod_module_new_from_path() and
 *                                      kmod_module_get_info(), which decompresses the whole module,
 *                                      as modgated's check_name() does) and sha256 (read the file,
 *                                      SHA-256 with libcrypto, as hash_file() does)
 *
 * Prints one JSON object, nanoseconds of this thread's CPU time per operation:
 *   validate          kmod_validate_resources(): stats of the index files and configuration (what
 *                     modgated does when its inotify watch cannot be set up)
 *   watch_read        a read of an empty inotify fd (resolver_refresh() with the watch)
 *   peer_read         what peer_identify() reads at every call through the connection's kept /proc
 *                     fds: pread() of status and of cgroup, fstatat() of ns/user
 *   lookup            kmod_module_new_from_lookup(KEY) in a warm context, list freed
 *   initstate         open, read and close /sys/module/MODULE/initstate
 *   proc_status       read /proc/self/status (peer identity reads the peer's)
 *   proc_cgroup       read /proc/self/cgroup
 *   pidfd             pidfd_open() and close
 *   fdinfo            read /proc/self/fdinfo/PIDFD (pidfd_pid(), twice per request)
 *   uid_map           read /proc/self/uid_map, and stat /proc/self/ns/user (in_other_userns())
 *   proc_stat         read /proc/PPID/stat (parent_is_kthread())
 *   pidfd_signal      pidfd_send_signal(PIDFD, 0) (pidfd_alive())
 *   context_load      kmod_new() and kmod_load_resources(), what a refresh after depmod costs */

#include <fcntl.h>
#include <libkmod.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* CPU time of this thread: what the operation costs, whatever else runs on the machine. */
static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static void read_file(const char *path) {
        char buf[8192];
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd >= 0) {
                (void) !read(fd, buf, sizeof(buf));
                close(fd);
        }
}

#define TIME(n, stmt)                                           \
        ({                                                      \
                uint64_t _t0 = now_ns();                        \
                for (long _i = 0; _i < (n); _i++) {             \
                        stmt;                                   \
                }                                               \
                (double) (now_ns() - _t0) / (double) (n);       \
        })

static void sha256_file(const char *path) {
        unsigned char buf[65536], md[EVP_MAX_MD_SIZE];
        EVP_MD_CTX *c = EVP_MD_CTX_new();
        unsigned n;
        ssize_t k;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0 || !c)
                exit(1);
        EVP_DigestInit_ex(c, EVP_sha256(), NULL);
        while ((k = read(fd, buf, sizeof(buf))) > 0)
                EVP_DigestUpdate(c, buf, (size_t) k);
        EVP_DigestFinal_ex(c, md, &n);
        EVP_MD_CTX_free(c);
        close(fd);
}

static void modinfo_file(const char *path) {
        static const char *const no_config[] = { NULL };
        struct kmod_ctx *ctx = kmod_new(NULL, no_config);
        struct kmod_module *mod = NULL;
        struct kmod_list *info = NULL;

        kmod_set_log_priority(ctx, 0);
        if (kmod_module_new_from_path(ctx, path, &mod) == 0 && kmod_module_get_info(mod, &info) >= 0)
                kmod_module_info_free_list(info);
        kmod_module_unref(mod);
        kmod_unref(ctx);
}

static int run_files(const char *list) {
        FILE *f = fopen(list, "re");
        char *line = NULL;
        size_t size = 0;
        double modinfo = 0, sha = 0;
        long n = 0;
        ssize_t k;

        if (!f)
                return 1;
        while ((k = getline(&line, &size, f)) > 0) {
                line[strcspn(line, "\n")] = '\0';
                modinfo += TIME(1, modinfo_file(line));
                sha += TIME(1, sha256_file(line));
                n++;
        }
        free(line);
        fclose(f);
        printf("{\"files\":%ld,\"modinfo\":%.0f,\"sha256\":%.0f}\n", n, modinfo / (double) n, sha / (double) n);
        return 0;
}

int main(int argc, char *argv[]) {
        struct kmod_ctx *ctx;
        char initstate[256];
        double validate, watch_read, peer_read, lookup, state, status, cgroup, pidfd, load, fdinfo, uidmap, pstat, psig;
        char fdinfo_path[64], ppid_stat[64], buf[8192];
        int pfd, ifd, dfd, sfd, cfd;
        long n;

        if (argc == 3 && strcmp(argv[1], "--files") == 0)
                return run_files(argv[2]);
        if (argc != 5) {
                fprintf(stderr, "usage: costs DIR MODULE KEY N | costs --files LIST\n");
                return 2;
        }
        n = atol(argv[4]);
        snprintf(initstate, sizeof(initstate), "/sys/module/%s/initstate", argv[2]);

        ctx = kmod_new(argv[1], NULL);
        if (!ctx || kmod_load_resources(ctx) < 0) {
                fprintf(stderr, "costs: cannot load the module index of %s\n", argv[1]);
                return 1;
        }
        validate = TIME(n, (void) kmod_validate_resources(ctx));
        lookup = TIME(n, {
                struct kmod_list *l = NULL;
                (void) kmod_module_new_from_lookup(ctx, argv[3], &l);
                kmod_module_unref_list(l);
        });
        ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        (void) inotify_add_watch(ifd, argv[1], IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MODIFY | IN_ATTRIB);
        watch_read = TIME(n, (void) !read(ifd, buf, sizeof(buf)));
        close(ifd);
        dfd = open("/proc/self", O_PATH | O_DIRECTORY | O_CLOEXEC);
        sfd = openat(dfd, "status", O_RDONLY | O_CLOEXEC);
        cfd = openat(dfd, "cgroup", O_RDONLY | O_CLOEXEC);
        peer_read = TIME(n, {
                struct stat st;
                (void) !pread(sfd, buf, sizeof(buf) - 1, 0);
                (void) !pread(cfd, buf, sizeof(buf) - 1, 0);
                (void) fstatat(dfd, "ns/user", &st, 0);
        });
        close(sfd);
        close(cfd);
        close(dfd);
        state = TIME(n, read_file(initstate));
        status = TIME(n, read_file("/proc/self/status"));
        cgroup = TIME(n, read_file("/proc/self/cgroup"));
        pidfd = TIME(n, {
                int fd = (int) syscall(SYS_pidfd_open, getpid(), 0);
                if (fd >= 0)
                        close(fd);
        });
        pfd = (int) syscall(SYS_pidfd_open, getpid(), 0);
        snprintf(fdinfo_path, sizeof(fdinfo_path), "/proc/self/fdinfo/%d", pfd);
        snprintf(ppid_stat, sizeof(ppid_stat), "/proc/%d/stat", (int) getppid());
        fdinfo = TIME(n, read_file(fdinfo_path));
        uidmap = TIME(n, {
                struct stat st;
                read_file("/proc/self/uid_map");
                (void) stat("/proc/self/ns/user", &st);
        });
        pstat = TIME(n, read_file(ppid_stat));
        psig = TIME(n, (void) syscall(SYS_pidfd_send_signal, pfd, 0, NULL, 0));
        close(pfd);
        kmod_unref(ctx);
        load = TIME(n / 100 ?: 1, {
                struct kmod_ctx *c = kmod_new(argv[1], NULL);
                (void) kmod_load_resources(c);
                kmod_unref(c);
        });

        printf("{\"validate\":%.0f,\"watch_read\":%.0f,\"peer_read\":%.0f,\"lookup\":%.0f,\"initstate\":%.0f,\"proc_status\":%.0f,\"proc_cgroup\":%.0f,"
               "\"pidfd\":%.0f,\"fdinfo\":%.0f,\"uid_map\":%.0f,\"proc_stat\":%.0f,\"pidfd_signal\":%.0f,"
               "\"context_load\":%.0f}\n",
               validate, watch_read, peer_read, lookup, state, status, cgroup, pidfd, fdinfo, uidmap, pstat, psig, load);
        return 0;
}
