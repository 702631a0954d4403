/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* LD_PRELOAD shim for the integration tier: the only fake part. It stands in for the kernel's module
 * syscalls, which modgated makes through syscall(2), and leaves every other syscall alone. It keeps
 * the module state in /sys/module (a private tmpfs in the test's mount namespace) and answers as
 * Linux 6.12 does (kernel/module/main.c, kernel/module/decompress.c), in the kernel's order:
 *
 *  finit_module   - /proc/sys/kernel/modules_disabled reads 1: EPERM, before anything else, as
 *                   may_init_module() (the test binds a file of its own there).
 *                 - flags other than MODULE_INIT_COMPRESSED_FILE: EINVAL. The kernel refuses unknown
 *                   flags so; the shim also refuses MODULE_INIT_IGNORE_MODVERSIONS and
 *                   MODULE_INIT_IGNORE_VERMAGIC, which the kernel takes: modgate must never pass
 *                   them, and this deliberate strictness makes a test fail if it does.
 *                 - an fd that is not open: EBADF.
 *                 - the file open for writing anywhere (i_writecount > 0, which deny_write_access()
 *                   checks): ETXTBSY, as kernel_read_file(). The shim asks the kernel's own count, with a
 *                   read lease on the fd (below).
 *                 - the bytes, read with pread(2) on the fd: with MODULE_INIT_COMPRESSED_FILE and no
 *                   /sys/module/compression (a kernel without in-kernel decompression) EOPNOTSUPP, as
 *                   the module_decompress() stub; a file that does not start with the magic of the
 *                   algorithm /sys/module/compression names (xz FD 37 7A 58 5A 00, zstd 28 B5 2F FD,
 *                   gzip 1F 8B 08) EINVAL, as the decompressor. Without the flag, a file that does not
 *                   start with the ELF magic 7F 45 4C 46 gives ENOEXEC. What a compressed file holds
 *                   is not looked at.
 *                 - $MODGATE_SHIM_FAIL, below: a signature or init failure.
 *                 - another load of the same name, as module_patient_check_exists(): a module that
 *                   is "coming" is waited for (polled every 10 ms, for at most 60 s, then ETIMEDOUT,
 *                   which the kernel never gives, so that a broken test cannot hang); then, or at
 *                   once, a live module gives EEXIST, one that is "going" or went away meanwhile
 *                   EBUSY (since Linux 6.2 the kernel neither waits for a going module nor loads
 *                   again after a concurrent load failed). A directory without initstate (a builtin
 *                   module with parameters) gives EINVAL, as mod_sysfs_init() does.
 *                 - with $MODGATE_SHIM_DEPS, the modules it depends on, as resolve_symbol_wait(): one
 *                   that is "coming" is waited for (polled every millisecond, at most 30 s, then
 *                   EBUSY, as the kernel gives up on a dependency's init); one that is absent, or
 *                   going, gives ENOENT (its symbols are unknown). Not in /sys/module meanwhile, as
 *                   the kernel's unformed module is not.
 *                 Then it creates /sys/module/NAME in one step with initstate "coming", refcnt 0 and
 *                 an empty holders/, runs the module's init (the delay below) and makes it "live".
 *                 The kernel takes the name from .modinfo; the shim from the file name.
 *  init_module    is recorded and fails with ENOSYS: modgated must never call it.
 *  delete_module  - /proc/sys/kernel/modules_disabled reads 1: EPERM, before anything else.
 *                 - a name that is not in /sys/module (or a builtin's directory): ENOENT.
 *                 - flags with O_TRUNC (a forced unload): EINVAL. Another deliberate strictness: a
 *                   kernel with CONFIG_MODULE_FORCE_UNLOAD would force it; modgate must never ask.
 *                 - entries in /sys/module/NAME/holders/: EWOULDBLOCK.
 *                 - initstate not "live" (coming or going): EBUSY.
 *                 - a module without an exit function ($MODGATE_SHIM_NO_EXIT): EBUSY.
 *                 - /sys/module/NAME/refcnt not 0 (missing is 0): EWOULDBLOCK.
 *                 Then the module is "going", and its directory goes away in one step, with the
 *                 links in the holders/ of the modules it used.
 *
 * Each call appends one JSON line to $MODGATE_SHIM_LOG, in one write(2), with the call's result (0
 * or -errno): for finit_module the identity of the file behind the fd (path, device, inode), the
 * SHA-256 of the bytes read from that fd with pread(2) when it is a regular file ("sha256", computed
 * by libcrypto on entry: the bytes the kernel would get), params,
 * flags and the name, with "start" and "end", CLOCK_MONOTONIC in nanoseconds before and after the
 * module's init (equal for a failed call), so that tests can tell which loads overlapped; it is
 * written when the call returns.
 *
 * Knobs, each NAME a module name as in /sys/module:
 *  $MODGATE_SHIM_FAIL=NAME:ERRNO[,NAME:ERRNO...]  finit_module of each NAME fails with its errno.
 *  $MODGATE_SHIM_DELAY_MS=N[,NAME:MS...]          every module's init takes N ms, each NAME's MS, during
 *                                                 which it is "coming".
 *  $MODGATE_SHIM_DEPS=FILE                        the dependencies finit_module() waits for, above: one
 *                                                 "NAME: DEP DEP..." line per module (names as in
 *                                                 /sys/module); modules not listed have none.
 *  $MODGATE_SHIM_TAKE_REF=NAME[,NAME...]          each delete_module of NAME first adds one to its
 *                                                 refcnt: a user that came between the caller's look
 *                                                 at /sys/module and its delete_module.
 *  $MODGATE_SHIM_HANG=NAME[,NAME...]              the module's init hangs: it stays "coming" until
 *                                                 the file $MODGATE_SHIM_HANG_RELEASE exists (polled
 *                                                 every 10 ms; at most 120 s, so that a broken test
 *                                                 cannot hang for ever), then goes live.
 *  $MODGATE_SHIM_NO_EXIT=NAME[,NAME...]           the module has an init function and no exit
 *                                                 function, which the kernel will not unload.
 *  $MODGATE_SHIM_NESTED=OUTER:INNER[,...]         OUTER's init asks for INNER, as request_module()
 *                                                 from an init does, and waits for the answer: a Load
 *                                                 of INNER at $MODGATE_SHIM_VARLINK. Recorded as a
 *                                                 "nested_request" line: params INNER, name OUTER,
 *                                                 result 0, -EIO for an error reply, or -errno. */

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <linux/module.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <sys/un.h>
#include <unistd.h>

#define SYS_MODULE "/sys/module"
#define MODULES_DISABLED "/proc/sys/kernel/modules_disabled"
#define MODULE_NAME_LEN 56      /* the kernel's: 64 - sizeof(unsigned long) */
#define COMING_POLL_USEC (10U * 1000U)
#define COMING_WAIT_MAX_NSEC (60ULL * 1000000000ULL)
#define HANG_MAX_NSEC (120ULL * 1000000000ULL)
#define DEP_POLL_USEC 1000U
#define DEP_WAIT_MAX_NSEC (30ULL * 1000000000ULL)

typedef enum State {
        STATE_ABSENT,           /* no /sys/module/NAME */
        STATE_BUILTIN,          /* a directory without initstate */
        STATE_COMING,
        STATE_LIVE,
        STATE_GOING,
} State;

static const struct {
        const char *name;
        uint8_t magic[6];
        size_t len;
} compressions[] = {
        { "xz", { 0xfd, '7', 'z', 'X', 'Z', 0x00 }, 6 },
        { "zstd", { 0x28, 0xb5, 0x2f, 0xfd }, 4 },
        { "gzip", { 0x1f, 0x8b, 0x08 }, 3 },    /* module_gzip_header_len(): deflate only */
};

static const uint8_t elf_magic[4] = { 0x7f, 'E', 'L', 'F' };

static void json_string(FILE *f, const char *s) {
        fputc('"', f);
        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;
                if (c == '"' || c == '\\')
                        fprintf(f, "\\%c", c);
                else if (c < 0x20)
                        fprintf(f, "\\u%04x", c);
                else
                        fputc(c, f);
        }
        fputc('"', f);
}

static unsigned long long now_nsec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (unsigned long long) ts.tv_sec * 1000000000ULL + (unsigned long long) ts.tv_nsec;
}

/* One write(2) per record, with O_APPEND, so that records from several threads or processes do not
 * interleave. start and end are 0 for calls that are not timed. */
static void record(const char *call, const char *path, const struct stat *st, const char *sha256,
                   const char *params, long flags, const char *name, int result, unsigned long long start,
                   unsigned long long end) {
        const char *log = getenv("MODGATE_SHIM_LOG");
        char *buf = NULL;
        size_t size = 0;
        FILE *f;
        int fd;

        if (!log)
                return;
        f = open_memstream(&buf, &size);
        if (!f)
                return;
        fprintf(f, "{\"call\":\"%s\",\"pid\":%d", call, (int) getpid());
        if (path) {
                fputs(",\"path\":", f);
                json_string(f, path);
        }
        if (st)
                fprintf(f, ",\"dev\":\"%u:%u\",\"ino\":%llu", major(st->st_dev), minor(st->st_dev),
                        (unsigned long long) st->st_ino);
        if (sha256 && *sha256)
                fprintf(f, ",\"sha256\":\"%s\"", sha256);
        if (params) {
                fputs(",\"params\":", f);
                json_string(f, params);
        }
        fprintf(f, ",\"flags\":%ld", flags);
        if (name) {
                fputs(",\"name\":", f);
                json_string(f, name);
        }
        fprintf(f, ",\"result\":%d", result);
        if (start > 0)
                fprintf(f, ",\"start\":%llu,\"end\":%llu", start, end);
        fputs("}\n", f);
        fclose(f);

        fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
        if (fd >= 0) {
                (void) !write(fd, buf, size);
                close(fd);
        }
        free(buf);
}

static long syscall_return(int r) {
        if (r >= 0)
                return 0;
        errno = -r;
        return -1;
}

/* The kernel takes the name from the module's .modinfo; for real module trees that is the file name
 * without its .ko suffix, with '-' as '_'. */
static void name_from_path(const char *path, char *name, size_t size) {
        const char *base = strrchr(path, '/');
        char *dot;

        snprintf(name, size, "%s", base ? base + 1 : path);
        dot = strstr(name, ".ko");
        if (dot)
                *dot = '\0';
        for (char *p = name; *p; p++)
                if (*p == '-')
                        *p = '_';
}

/* A name the kernel could have: anything else cannot be in /sys/module, and must not reach a path. */
static bool name_is_valid(const char *name) {
        size_t n = strnlen(name, MODULE_NAME_LEN);

        return n > 0 && n < MODULE_NAME_LEN && !strchr(name, '/') && name[0] != '.';
}

/* The item of a comma-separated $env list that starts with name followed by one of ends, or NULL. */
static const char *env_list_find(const char *env, const char *name, const char *ends) {
        const char *e = getenv(env);
        size_t n = strlen(name);

        for (; e && *e; e = strchr(e, ',') ? strchr(e, ',') + 1 : NULL)
                if (strncmp(e, name, n) == 0 && strchr(ends, e[n]))
                        return e;
        return NULL;
}

static int forced_failure(const char *name) {
        const char *e = env_list_find("MODGATE_SHIM_FAIL", name, ":");

        return e ? atoi(e + strlen(name) + 1) : 0;
}

static bool env_lists(const char *env, const char *name) {
        return env_list_find(env, name, ",") != NULL;
}

static int read_line(const char *path, char *buf, size_t size) {
        ssize_t n;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        close(fd);
        if (n < 0)
                return -errno;
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        return 0;
}

static int write_file(const char *path, const char *text) {
        int fd, r = 0;

        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
        if (fd < 0)
                return -errno;
        if (write(fd, text, strlen(text)) < 0)
                r = -errno;
        close(fd);
        return r;
}

static State module_state(const char *name) {
        char path[PATH_MAX], state[32];

        snprintf(path, sizeof(path), SYS_MODULE "/%s/initstate", name);
        if (read_line(path, state, sizeof(state)) < 0) {
                snprintf(path, sizeof(path), SYS_MODULE "/%s", name);
                return access(path, F_OK) >= 0 ? STATE_BUILTIN : STATE_ABSENT;
        }
        if (strcmp(state, "coming") == 0)
                return STATE_COMING;
        if (strcmp(state, "going") == 0)
                return STATE_GOING;
        return STATE_LIVE;
}

/* Renamed into place, so that a reader never sees an empty file; and the files are read-only, as in
 * sysfs, which the daemon (without CAP_DAC_OVERRIDE) could not open for writing. */
static void replace_file(const char *path, const char *text) {
        char tmp[PATH_MAX + 32];

        snprintf(tmp, sizeof(tmp), "%s.%d", path, (int) gettid());
        if (write_file(tmp, text) >= 0)
                (void) rename(tmp, path);
}

static void set_module_state(const char *name, const char *state) {
        char path[PATH_MAX];

        snprintf(path, sizeof(path), SYS_MODULE "/%s/initstate", name);
        replace_file(path, state);
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
        (void) st;
        (void) type;
        (void) ftw;
        (void) remove(path);
        return 0;       /* remove what can be removed */
}

static void remove_tree(const char *path) {
        (void) nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* A sealed kernel refuses both calls to everyone, capability or not. */
static int check_sealed(void) {
        char value[16];

        return read_line(MODULES_DISABLED, value, sizeof(value)) >= 0 && strcmp(value, "1") == 0 ? -EPERM : 0;
}

static int check_flags(long flags) {
        return (flags & ~(long) MODULE_INIT_COMPRESSED_FILE) ? -EINVAL : 0;
}

static bool has_magic(const uint8_t *buf, size_t n, const uint8_t *magic, size_t len) {
        return n >= len && memcmp(buf, magic, len) == 0;
}

static int check_compressed(const uint8_t *buf, size_t n) {
        char algorithm[32];

        if (read_line(SYS_MODULE "/compression", algorithm, sizeof(algorithm)) < 0)
                return -EOPNOTSUPP;
        for (size_t i = 0; i < sizeof(compressions) / sizeof(compressions[0]); i++)
                if (strcmp(algorithm, compressions[i].name) == 0)
                        return has_magic(buf, n, compressions[i].magic, compressions[i].len) ? 0 : -EINVAL;
        return -EINVAL;
}

static int check_format(int fd, long flags) {
        uint8_t buf[8] = {};
        ssize_t n;

        n = pread(fd, buf, sizeof(buf), 0);
        if (n < 0)
                return -errno;
        if (flags & MODULE_INIT_COMPRESSED_FILE)
                return check_compressed(buf, (size_t) n);
        return has_magic(buf, (size_t) n, elf_magic, sizeof(elf_magic)) ? 0 : -ENOEXEC;
}

/* The SHA-256 of every byte of the file behind fd, read as the kernel reads it (kernel_read_file()
 * from offset 0 to the end), as 64 hex digits; "" when it cannot be read. Independent of modgate's own
 * hashing (src/shared/sha256.c), so that a test can compare the two. */
static void sha256_fd_hex(int fd, char hex[65]) {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned size = 0;
        uint8_t buf[65536];
        off_t offset = 0;
        EVP_MD_CTX *ctx;
        bool ok;
        ssize_t n;

        hex[0] = '\0';
        ctx = EVP_MD_CTX_new();
        if (!ctx)
                return;
        ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
        while (ok && (n = pread(fd, buf, sizeof(buf), offset)) > 0) {
                ok = EVP_DigestUpdate(ctx, buf, (size_t) n) == 1;
                offset += n;
        }
        if (ok && n == 0 && EVP_DigestFinal_ex(ctx, digest, &size) == 1 && size == 32)
                for (unsigned i = 0; i < size; i++)
                        snprintf(hex + 2 * i, 3, "%02x", digest[i]);
        EVP_MD_CTX_free(ctx);
}

/* deny_write_access(): -ETXTBSY when the file is open for writing anywhere. The kernel's count of
 * writers (i_writecount) is what a read lease checks too: F_SETLEASE with F_RDLCK fails with EAGAIN
 * while any process has the file open for writing, and needs no access to other processes (the
 * daemon, with CAP_SYS_MODULE alone, may not look into their /proc/PID/fd). The lease is dropped at
 * once; its break signal is set to SIGWINCH, ignored by default, so that a writer opening the file
 * in that instant does not kill the daemon with SIGIO. */
static int check_writers(int fd) {
        if (fcntl(fd, F_SETSIG, SIGWINCH) < 0)
                return 0;
        if (fcntl(fd, F_SETLEASE, F_RDLCK) < 0)
                return errno == EAGAIN ? -ETXTBSY : 0;
        (void) fcntl(fd, F_SETLEASE, F_UNLCK);
        return 0;
}

static int wait_coming(const char *name) {
        unsigned long long deadline = now_nsec() + COMING_WAIT_MAX_NSEC;
        State s;

        while ((s = module_state(name)) == STATE_COMING) {
                if (now_nsec() > deadline)
                        return -ETIMEDOUT;
                usleep(COMING_POLL_USEC);
        }
        return s == STATE_LIVE ? -EEXIST : -EBUSY;
}

/* The directory appears in one step, already "coming", so that two loads of one name cannot both
 * see it absent and go on, which the kernel's module_mutex prevents. */
static int module_create(const char *name) {
        char tmp[PATH_MAX], path[PATH_MAX + 16];
        int r;

        snprintf(tmp, sizeof(tmp), SYS_MODULE "/.%s.shim-%d", name, (int) gettid());
        if (mkdir(tmp, 0755) < 0)
                return -errno;
        snprintf(path, sizeof(path), "%s/initstate", tmp);
        r = write_file(path, "coming\n");
        snprintf(path, sizeof(path), "%s/refcnt", tmp);
        if (r >= 0)
                r = write_file(path, "0\n");
        snprintf(path, sizeof(path), "%s/holders", tmp);
        if (r >= 0 && mkdir(path, 0755) < 0)
                r = -errno;
        snprintf(path, sizeof(path), SYS_MODULE "/%s", name);
        if (r >= 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) < 0)
                r = -errno;
        if (r < 0)
                remove_tree(tmp);
        return r;
}

static int module_add(const char *name) {
        for (;;) {
                int r;

                switch (module_state(name)) {
                case STATE_ABSENT:
                        r = module_create(name);
                        if (r == -EEXIST || r == -ENOTEMPTY)
                                continue;       /* another load made it meanwhile: look again */
                        return r;
                case STATE_COMING:
                        return wait_coming(name);
                case STATE_LIVE:
                        return -EEXIST;
                case STATE_GOING:
                        return -EBUSY;
                default:
                        return -EINVAL;
                }
        }
}

/* A module whose init asks for another, as request_module() does: the kernel runs its modprobe helper
 * and waits for it. Here the init (on the daemon's worker thread) asks the daemon itself over varlink
 * and waits for the answer, at most 60 s, so that a test cannot hang. */
static int nested_request(const char *address, const char *inner) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = 60 };
        char msg[512], reply[65536];
        size_t got = 0;
        int fd, n, r = 0;

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", address);
        n = snprintf(msg, sizeof(msg), "{\"method\":\"io.modgate.Manager.Load\",\"parameters\":{\"name\":\"%s\"}}",
                     inner);
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
            connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0 || write(fd, msg, (size_t) n + 1) != n + 1)
                r = -errno;
        while (r == 0 && (got == 0 || reply[got - 1] != '\0') && got < sizeof(reply) - 1) {
                ssize_t k = read(fd, reply + got, sizeof(reply) - 1 - got);

                if (k <= 0)
                        r = k < 0 ? -errno : -ECONNRESET;
                else
                        got += (size_t) k;
        }
        close(fd);
        if (r < 0)
                return r;
        reply[got] = '\0';
        return strstr(reply, "\"error\"") ? -EIO : 0;
}

/* resolve_symbol_wait() for each module NAME needs, from its line in $MODGATE_SHIM_DEPS. */
static int wait_dependencies(const char *name) {
        const char *deps = getenv("MODGATE_SHIM_DEPS");
        char line[8192];
        size_t n = strlen(name);
        int r = 0;
        FILE *f;

        if (!deps)
                return 0;
        f = fopen(deps, "re");
        if (!f)
                return -errno;
        while (r == 0 && fgets(line, sizeof(line), f)) {
                unsigned long long deadline = now_nsec() + DEP_WAIT_MAX_NSEC;

                if (strncmp(line, name, n) != 0 || line[n] != ':')
                        continue;
                for (char *save = NULL, *dep = strtok_r(line + n + 1, " \t\n", &save); dep && r == 0;
                     dep = strtok_r(NULL, " \t\n", &save)) {
                        State st;

                        while ((st = module_state(dep)) == STATE_COMING && now_nsec() < deadline)
                                usleep(DEP_POLL_USEC);
                        if (st == STATE_COMING)
                                r = -EBUSY;
                        else if (st != STATE_LIVE && st != STATE_BUILTIN)
                                r = -ENOENT;
                }
                break;
        }
        fclose(f);
        return r;
}

/* $MODGATE_SHIM_DELAY_MS: NAME's own time, else the default in front. */
static unsigned init_delay_ms(const char *name) {
        const char *delay = getenv("MODGATE_SHIM_DELAY_MS"), *own;

        own = env_list_find("MODGATE_SHIM_DELAY_MS", name, ":");
        if (own)
                return (unsigned) atoi(own + strlen(name) + 1);
        return delay && atoi(delay) > 0 ? (unsigned) atoi(delay) : 0;
}

static void module_init_run(const char *name) {
        const char *nested, *address = getenv("MODGATE_SHIM_VARLINK");
        unsigned delay = init_delay_ms(name);

        nested = env_list_find("MODGATE_SHIM_NESTED", name, ":");
        if (nested && address) {
                char inner[MODULE_NAME_LEN];
                unsigned long long start = now_nsec();
                int r;

                snprintf(inner, sizeof(inner), "%.*s", (int) strcspn(nested + strlen(name) + 1, ","),
                         nested + strlen(name) + 1);
                r = nested_request(address, inner);
                record("nested_request", NULL, NULL, NULL, inner, 0, name, r, start, now_nsec());
        }
        if (env_lists("MODGATE_SHIM_HANG", name)) {
                const char *release = getenv("MODGATE_SHIM_HANG_RELEASE");
                unsigned long long deadline = now_nsec() + HANG_MAX_NSEC;

                while (release && access(release, F_OK) < 0 && now_nsec() < deadline)
                        usleep(COMING_POLL_USEC);
        }
        if (delay > 0)
                usleep((useconds_t) delay * 1000);
        set_module_state(name, "live\n");
}

static long fake_finit_module(int fd, const char *params, long flags) {
        char link[64], path[PATH_MAX] = "", name[NAME_MAX + 1] = "", sha256[65] = "";
        unsigned long long start = 0;
        struct stat st;
        bool open_fd;
        ssize_t n;
        int r;

        open_fd = fstat(fd, &st) >= 0;
        if (open_fd) {
                snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
                n = readlink(link, path, sizeof(path) - 1);
                if (n >= 0)
                        path[n] = '\0';
                name_from_path(path, name, sizeof(name));
                if (S_ISREG(st.st_mode))
                        sha256_fd_hex(fd, sha256);
        }

        r = check_sealed();
        if (r >= 0)
                r = check_flags(flags);
        if (r >= 0 && !open_fd)
                r = -EBADF;
        if (r >= 0)
                r = check_writers(fd);
        if (r >= 0)
                r = check_format(fd, flags);
        if (r >= 0)
                r = -forced_failure(name);
        if (r >= 0 && !name_is_valid(name))
                r = -ENOEXEC;
        if (r >= 0)
                r = wait_dependencies(name);
        if (r >= 0)
                r = module_add(name);
        if (r >= 0) {
                start = now_nsec();
                module_init_run(name);
        }
        if (r < 0)
                start = now_nsec();

        if (open_fd)
                record("finit_module", path, &st, sha256, params ?: "", flags, name, r, start, r < 0 ? start : now_nsec());
        else
                record("finit_module", NULL, NULL, NULL, params, flags, NULL, r, start, start);
        return syscall_return(r);
}

/* As free_module() does: the module's links in the holders/ of the modules it used go with it. */
static void remove_holder_links(const char *name) {
        char path[PATH_MAX];
        struct dirent *de;
        DIR *d;

        d = opendir(SYS_MODULE);
        if (!d)
                return;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.') {
                        snprintf(path, sizeof(path), SYS_MODULE "/%s/holders/%s", de->d_name, name);
                        (void) unlink(path);
                }
        closedir(d);
}

static int module_remove(const char *name) {
        char path[PATH_MAX], tmp[PATH_MAX];

        set_module_state(name, "going\n");
        snprintf(path, sizeof(path), SYS_MODULE "/%s", name);
        snprintf(tmp, sizeof(tmp), SYS_MODULE "/.%s.gone-%d", name, (int) gettid());
        if (rename(path, tmp) < 0)
                return -errno;
        remove_tree(tmp);
        remove_holder_links(name);
        return 0;
}

static bool has_holders(const char *name) {
        char path[PATH_MAX];
        struct dirent *de;
        bool found = false;
        DIR *d;

        snprintf(path, sizeof(path), SYS_MODULE "/%s/holders", name);
        d = opendir(path);
        if (!d)
                return false;
        while (!found && (de = readdir(d)))
                found = strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
        closedir(d);
        return found;
}

static unsigned long module_refcount(const char *name) {
        char path[PATH_MAX], refcnt[32];

        snprintf(path, sizeof(path), SYS_MODULE "/%s/refcnt", name);
        return read_line(path, refcnt, sizeof(refcnt)) >= 0 ? strtoul(refcnt, NULL, 10) : 0;
}

static void module_take_reference(const char *name) {
        char path[PATH_MAX], refcnt[32];

        snprintf(path, sizeof(path), SYS_MODULE "/%s/refcnt", name);
        snprintf(refcnt, sizeof(refcnt), "%lu\n", module_refcount(name) + 1);
        replace_file(path, refcnt);
}

/* In the order of the kernel's delete_module(). */
static int module_delete(const char *name, long flags) {
        State s;
        int r;

        r = check_sealed();
        if (r < 0)
                return r;
        if (!name_is_valid(name))
                return -ENOENT;
        if (flags & O_TRUNC)
                return -EINVAL;
        s = module_state(name);
        if (s == STATE_ABSENT || s == STATE_BUILTIN)
                return -ENOENT;
        if (env_lists("MODGATE_SHIM_TAKE_REF", name))
                module_take_reference(name);
        if (has_holders(name))
                return -EWOULDBLOCK;
        if (s != STATE_LIVE)
                return -EBUSY;
        if (env_lists("MODGATE_SHIM_NO_EXIT", name))
                return -EBUSY;
        if (module_refcount(name) != 0)
                return -EWOULDBLOCK;
        return module_remove(name);
}

static long fake_delete_module(const char *name, long flags) {
        int r;

        if (!name) {
                record("delete_module", NULL, NULL, NULL, NULL, flags, NULL, -EFAULT, 0, 0);
                return syscall_return(-EFAULT);
        }
        r = module_delete(name, flags);
        record("delete_module", NULL, NULL, NULL, NULL, flags, name, r, 0, 0);
        return syscall_return(r);
}

long syscall(long number, ...) {
        static long (*real)(long, ...) = NULL;
        long a[6];
        va_list ap;

        va_start(ap, number);
        for (int i = 0; i < 6; i++)
                a[i] = va_arg(ap, long);
        va_end(ap);

        switch (number) {
        case SYS_finit_module:
                return fake_finit_module((int) a[0], (const char *) a[1], a[2]);
        case SYS_init_module:
                record("init_module", NULL, NULL, NULL, (const char *) a[2], 0, NULL, -ENOSYS, 0, 0);
                errno = ENOSYS;
                return -1;
        case SYS_delete_module:
                return fake_delete_module((const char *) a[0], a[1]);
        default:
                break;
        }

        if (!real)
                real = (long (*)(long, ...)) dlsym(RTLD_NEXT, "syscall");
        return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
