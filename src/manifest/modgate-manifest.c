/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* modgate-manifest: writes the manifest of one kernel's module tree (docs/manifest.md), the SHA-256
 * of every module file as sha256sum lists it with what the file's .modinfo says (its name, signature
 * and aliases, so that modgated need not decompress those bytes again), or removes it. Run by the
 * kernel-install plugin and the Debian kernel hooks when a kernel is installed or removed, by
 * modgate-manifest.service for the running kernel when it has none, and by the administrator. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fileio.h"
#include "log.h"
#include "macro.h"
#include "manifest.h"
#include "modinfo-kmod.h"
#include "sha256.h"
#include "strv.h"

#define EXIT_USAGE 2
/* Module trees are a handful of levels deep (kernel/drivers/net/ethernet/intel/ice/). */
#define WALK_DEPTH_MAX 64U
#define TMPFILE_TRIES 16

static const char *arg_tree = NULL;
static const char *arg_output = NULL;
static ManifestOrigin arg_origin = MANIFEST_ORIGIN_ADMIN;
static bool arg_if_missing = false;
static bool arg_remove = false;
static bool arg_digests_only = false;
static const char *arg_kernel = NULL;

typedef struct Entry {
        char *path;
        char *info;                     /* the info line's fields, or NULL */
        uint8_t digest[SHA256_DIGEST_SIZE];
} Entry;

typedef struct Walk {
        Entry *entries;
        size_t n_entries, allocated;
        size_t n_unread;                /* files listed without their .modinfo */
        dev_t dev;                      /* the tree's filesystem: mounts inside it are not entered */
        char path[MANIFEST_PATH_MAX + 1];
        size_t path_len;
        const char *tree;               /* for messages */
} Walk;

DEFINE_TRIVIAL_CLEANUP_FUNC(DIR *, closedir);

/* A copy for messages, with control characters shown as '?': file names may hold any byte. */
static const char *printable(const char *s) {
        static char buf[MANIFEST_PATH_MAX + 1];
        size_t i;

        for (i = 0; s[i] && i < sizeof(buf) - 1; i++)
                buf[i] = (unsigned char) s[i] < ' ' || s[i] == 0x7f ? '?' : s[i];
        buf[i] = '\0';
        return buf;
}

static void walk_done(Walk *w) {
        for (size_t i = 0; i < w->n_entries; i++) {
                free(w->entries[i].path);
                free(w->entries[i].info);
        }
        free(w->entries);
        *w = (Walk) {};
}

static void help(void) {
        printf("%s [OPTIONS...] KVER\n"
               "%s --remove [--output=FILE] KVER\n\n"
               "Write the manifest of a kernel's module tree: the SHA-256 of every module file, which\n"
               "modgated checks before it loads one. Written to a temporary file and renamed into place.\n\n"
               "  -h --help             Show this help\n"
               "     --version          Show package version\n"
               "     --origin=ORIGIN    kernel-install, first-use or admin (default: admin)\n"
               "     --tree=DIR         The module tree (default: /usr/lib/modules/KVER)\n"
               "     --output=FILE      The manifest (default: " MANIFEST_DIR "/KVER" MANIFEST_SUFFIX ")\n"
               "     --if-missing       Do nothing when the manifest exists already\n"
               "     --digests-only     List digests alone (version 1), without reading each file's\n"
               "                        .modinfo: faster, and modgated then reads it at each load\n"
               "     --remove           Remove the manifest (nothing to do when there is none)\n\n"
               "Exit status: 0 on success or when there was nothing to do, 1 on failure, 2 for bad usage.\n",
               program_invocation_short_name, program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_ORIGIN,
                ARG_TREE,
                ARG_OUTPUT,
                ARG_IF_MISSING,
                ARG_REMOVE,
                ARG_DIGESTS_ONLY,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "origin", required_argument, NULL, ARG_ORIGIN },
                { "tree", required_argument, NULL, ARG_TREE },
                { "output", required_argument, NULL, ARG_OUTPUT },
                { "if-missing", no_argument, NULL, ARG_IF_MISSING },
                { "remove", no_argument, NULL, ARG_REMOVE },
                { "digests-only", no_argument, NULL, ARG_DIGESTS_ONLY },
                {}
        };
        int c, o;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("modgate-manifest %s\n", PROJECT_VERSION);
                        return 0;
                case ARG_ORIGIN:
                        o = manifest_origin_from_string(optarg);
                        if (o < 0)
                                return log_error_errno(EINVAL, "Unknown origin '%s': use kernel-install, "
                                                       "first-use or admin.", optarg);
                        arg_origin = o;
                        break;
                case ARG_TREE:
                        arg_tree = optarg;
                        break;
                case ARG_OUTPUT:
                        arg_output = optarg;
                        break;
                case ARG_IF_MISSING:
                        arg_if_missing = true;
                        break;
                case ARG_REMOVE:
                        arg_remove = true;
                        break;
                case ARG_DIGESTS_ONLY:
                        arg_digests_only = true;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        abort();
                }

        if (optind + 1 != argc)
                return log_error_errno(EINVAL, "Expected exactly one kernel release, see --help.");
        arg_kernel = argv[optind];
        if (!manifest_kernel_is_valid(arg_kernel))
                return log_error_errno(EINVAL, "'%s' is not a kernel release (1..%d letters, digits, '.', "
                                       "'_', '+', '~' or '-').", arg_kernel, MANIFEST_KERNEL_MAX);
        if (arg_remove && (arg_if_missing || arg_tree || arg_digests_only))
                return log_error_errno(EINVAL, "--remove takes no --if-missing, --tree= or --digests-only.");
        if (arg_output && arg_output[0] == '\0')
                return log_error_errno(EINVAL, "--output= needs a file name.");
        return 1;
}

static int entry_compare(const void *a, const void *b) {
        return strcmp(((const Entry *) a)->path, ((const Entry *) b)->path);
}

/* info (the info line's fields, or NULL) is taken on success. */
static int walk_add(Walk *w, const uint8_t digest[SHA256_DIGEST_SIZE], char **info) {
        if (w->n_entries >= MANIFEST_ENTRIES_MAX)
                return log_error_errno(EFBIG, "%s has more than %d module files, more than a manifest "
                                       "lists.", w->tree, MANIFEST_ENTRIES_MAX);
        if (w->n_entries >= w->allocated) {
                size_t n = MAX(w->allocated * 2, (size_t) 1024);
                Entry *t = reallocarray(w->entries, n, sizeof(Entry));

                if (!t)
                        return log_oom();
                w->entries = t;
                w->allocated = n;
        }
        w->entries[w->n_entries].path = strdup(w->path);
        if (!w->entries[w->n_entries].path)
                return log_oom();
        memcpy(w->entries[w->n_entries].digest, digest, SHA256_DIGEST_SIZE);
        w->entries[w->n_entries].info = info ? TAKE_PTR(*info) : NULL;
        w->n_entries++;
        return 0;
}

/* The info line of the file at w->path, open as fd, whose bytes hash to digest: what libkmod reads
 * from the same fd, as modgated would. The bytes are hashed again after, so that the line goes with
 * the digest it is listed under. *ret NULL for a file that cannot be read as a module: listed with
 * its digest alone, and modgated checks it as with a version 1 manifest. */
static int read_info(Walk *w, int fd, const uint8_t digest[SHA256_DIGEST_SIZE], char **ret) {
        _cleanup_(modinfo_done) ModInfo mi = {};
        _cleanup_strv_free_ char **aliases = NULL;
        uint8_t again[SHA256_DIGEST_SIZE];
        int r;

        r = modinfo_from_fd(fd, NULL, &aliases, &mi);
        if (r == -ENOMEM)
                return log_oom();
        if (r >= 0 && !mi.name)
                r = -ENOMSG;
        if (r < 0) {
                log_warning("Listing %s/%s without its .modinfo: %s.", w->tree, printable(w->path),
                            r == -ENOMSG ? "it has no name=" : strerror(-r));
                w->n_unread++;
                *ret = NULL;
                return 0;
        }
        r = sha256_fd(fd, again);
        if (r < 0)
                return log_error_errno(r, "Failed to hash %s/%s: %m", w->tree, printable(w->path));
        if (memcmp(again, digest, SHA256_DIGEST_SIZE) != 0)
                return log_error_errno(EBUSY, "%s/%s changed while the tree was read.",
                                       w->tree, printable(w->path));
        r = manifest_info_format(&mi, aliases, ret);
        if (r < 0)
                return log_oom();
        return 0;
}

/* A regular file named like a module, at w->path: opened without following a symlink, checked on the
 * fd that it still is a regular file, and hashed from that fd, as the daemon will read it. */
static int walk_file(Walk *w, int dfd, const char *name) {
        uint8_t digest[SHA256_DIGEST_SIZE];
        _cleanup_free_ char *info = NULL;
        _cleanup_close_ int fd = -EBADF;
        const char *problem;
        struct stat st;
        int r;

        /* Not listed, so modgated finds no digest for it: it is refused, not trusted. */
        problem = manifest_path_problem(w->path);
        if (problem) {
                log_warning("Not listing %s/%s: %s.", w->tree, printable(w->path), problem);
                return 0;
        }

        fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return log_error_errno(errno, "Failed to open %s/%s: %m", w->tree, printable(w->path));
        if (fstat(fd, &st) < 0)
                return log_error_errno(errno, "Failed to stat %s/%s: %m", w->tree, printable(w->path));
        if (!S_ISREG(st.st_mode))
                return log_error_errno(EBUSY, "%s/%s changed while the tree was read.",
                                       w->tree, printable(w->path));

        r = sha256_fd(fd, digest);
        if (r < 0)
                return log_error_errno(r, "Failed to hash %s/%s: %m", w->tree, printable(w->path));
        if (arg_digests_only)
                return walk_add(w, digest, NULL);

        r = read_info(w, fd, digest, &info);
        if (r < 0)
                return r;
        return walk_add(w, digest, &info);
}

static int walk_dir(Walk *w, int dfd, unsigned depth);

static int walk_subdir(Walk *w, int parent, const char *name, unsigned depth) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        if (depth >= WALK_DEPTH_MAX)
                return log_error_errno(ELOOP, "%s/%s is more than %u directories deep.",
                                       w->tree, printable(w->path), WALK_DEPTH_MAX);
        fd = openat(parent, name, O_RDONLY | O_CLOEXEC | O_DIRECTORY | O_NOFOLLOW);
        if (fd < 0)
                return log_error_errno(errno, "Failed to open %s/%s: %m", w->tree, printable(w->path));
        if (fstat(fd, &st) < 0)
                return log_error_errno(errno, "Failed to stat %s/%s: %m", w->tree, printable(w->path));
        if (st.st_dev != w->dev) {
                /* modgated opens modules with RESOLVE_NO_XDEV: it would not load these anyway. */
                log_warning("Not listing %s/%s: another filesystem is mounted there.",
                            w->tree, printable(w->path));
                return 0;
        }
        return walk_dir(w, TAKE_FD(fd), depth + 1);
}

/* Returns the type of name in dfd, without following a symlink. */
static int entry_type(int dfd, const struct dirent *de, unsigned char *ret) {
        struct stat st;

        if (de->d_type != DT_UNKNOWN) {
                *ret = de->d_type;
                return 0;
        }
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return negative_errno();
        *ret = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
        return 0;
}

static int walk_entry(Walk *w, int dfd, const struct dirent *de, unsigned depth) {
        size_t old = w->path_len, n = strlen(de->d_name);
        unsigned char type;
        int r;

        r = entry_type(dfd, de, &type);
        if (r < 0)
                return log_error_errno(r, "Failed to stat %s/%s%s%s: %m", w->tree, printable(w->path),
                                       old > 0 ? "/" : "", de->d_name);
        if (type != DT_DIR && !(type == DT_REG && manifest_name_is_module(de->d_name)))
                return 0;       /* symlinks are neither followed nor listed */

        if (old + (old > 0) + n > MANIFEST_PATH_MAX) {
                log_warning("Not listing %s/%s/...: the path is longer than %d bytes.",
                            w->tree, printable(w->path), MANIFEST_PATH_MAX);
                return 0;
        }
        if (old > 0)
                w->path[w->path_len++] = '/';
        memcpy(w->path + w->path_len, de->d_name, n + 1);
        w->path_len += n;

        r = type == DT_DIR ? walk_subdir(w, dfd, de->d_name, depth) : walk_file(w, dfd, de->d_name);

        w->path_len = old;
        w->path[old] = '\0';
        return r;
}

/* Takes dfd. */
static int walk_dir(Walk *w, int dfd, unsigned depth) {
        _cleanup_(closedirp) DIR *d = NULL;

        d = fdopendir(dfd);
        if (!d) {
                int r = log_error_errno(errno, "Failed to read %s/%s: %m", w->tree, printable(w->path));
                safe_close(dfd);
                return r;
        }

        for (;;) {
                struct dirent *de;
                int r;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return log_error_errno(errno, "Failed to read %s/%s: %m",
                                                       w->tree, printable(w->path));
                        return 0;
                }
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                r = walk_entry(w, dirfd(d), de, depth);
                if (r < 0)
                        return r;
        }
}

/* Opens the tree for the walk w (which walk_dir() then takes) and sets w up. The tree itself may be
 * reached through symlinks (/lib/modules); nothing below it is. */
static int walk_open(const char *tree, Walk *w) {
        _cleanup_close_ int fd = open(tree, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
        struct stat st;

        if (fd < 0)
                return log_error_errno(errno, "Failed to open the module tree %s: %m", tree);
        if (fstat(fd, &st) < 0)
                return log_error_errno(errno, "Failed to stat %s: %m", tree);
        *w = (Walk) { .dev = st.st_dev, .tree = tree };
        return TAKE_FD(fd);
}

/* Creates each missing directory of path, mode 0755 whatever the umask. */
static int mkdir_parents_and_self(const char *path) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *s = p + 1;; s++) {
                bool last = *s == '\0';

                if (*s != '/' && !last)
                        continue;
                *s = '\0';
                if (mkdir(p, 0755) >= 0) {
                        if (chmod(p, 0755) < 0)
                                return negative_errno();
                } else if (errno != EEXIST)
                        return negative_errno();
                if (last)
                        return 0;
                *s = '/';
        }
}

typedef struct Output {
        char *dir;
        const char *base;
        char *storage;
        int dfd;
        char *tmp;                      /* the temporary file while it exists */
        int fd;                         /* the temporary file, until it is written */
} Output;

static void output_done(Output *o) {
        if (o->tmp && o->dfd >= 0)
                (void) unlinkat(o->dfd, o->tmp, 0);
        free(o->tmp);
        safe_close(o->fd);
        safe_close(o->dfd);
        free(o->dir);
        free(o->storage);
        *o = (Output) { .dfd = -EBADF, .fd = -EBADF };
}

static int output_path(char **ret) {
        if (arg_output)
                *ret = strdup(arg_output);
        else if (asprintf(ret, "%s/%s%s", MANIFEST_DIR, arg_kernel, MANIFEST_SUFFIX) < 0)
                *ret = NULL;
        return *ret ? 0 : log_oom();
}

/* Splits the output path into its directory, which is created when missing, and its name. */
static int output_open(Output *o, bool create) {
        char *slash;
        int r;

        *o = (Output) { .dfd = -EBADF, .fd = -EBADF };
        r = output_path(&o->storage);
        if (r < 0)
                return r;
        slash = strrchr(o->storage, '/');
        if (!slash)
                o->dir = strdup(".");
        else
                o->dir = slash == o->storage ? strdup("/") : strndup(o->storage, slash - o->storage);
        o->base = slash ? slash + 1 : o->storage;
        if (!o->dir)
                return log_oom();
        if (o->base[0] == '\0' || strcmp(o->base, ".") == 0 || strcmp(o->base, "..") == 0)
                return log_error_errno(EINVAL, "%s is not a file name.", o->storage);

        if (create) {
                r = mkdir_parents_and_self(o->dir);
                if (r < 0)
                        return log_error_errno(r, "Failed to create %s: %m", o->dir);
        }
        o->dfd = open(o->dir, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
        if (o->dfd < 0 && !create && errno == ENOENT)
                return -ENOENT;
        if (o->dfd < 0)
                return log_error_errno(errno, "Failed to open %s: %m", o->dir);
        return 0;
}

/* A new file next to the manifest, so that rename(2) replaces it in one step. */
static int output_create_tmp(Output *o) {
        for (int i = 0; i < TMPFILE_TRIES; i++) {
                struct timespec ts;
                int fd;

                (void) clock_gettime(CLOCK_MONOTONIC, &ts);
                free(o->tmp);
                if (asprintf(&o->tmp, ".%s.%d.%lx.tmp", o->base, (int) getpid(),
                             (unsigned long) ts.tv_nsec ^ (unsigned long) i) < 0) {
                        o->tmp = NULL;
                        return log_oom();
                }
                fd = openat(o->dfd, o->tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY,
                            0644);
                if (fd >= 0)
                        return fd;
                o->tmp = mfree(o->tmp);
                if (errno != EEXIST)
                        return log_error_errno(errno, "Failed to create a temporary file in %s: %m", o->dir);
        }
        return log_error_errno(EEXIST, "Failed to create a temporary file in %s: %m", o->dir);
}

static unsigned written_version(void) {
        return arg_digests_only ? 1 : 2;
}

static int write_entries(FILE *f, const Walk *w) {
        fprintf(f, MANIFEST_HEADER_PREFIX "%u kernel=%s origin=%s\n", written_version(), arg_kernel,
                manifest_origin_to_string(arg_origin));
        for (size_t i = 0; i < w->n_entries; i++) {
                char hex[SHA256_HEX_SIZE];

                sha256_to_hex(w->entries[i].digest, hex);
                fprintf(f, "%s  %s\n", hex, w->entries[i].path);
                if (w->entries[i].info)
                        fprintf(f, MANIFEST_INFO_PREFIX "%s\n", w->entries[i].info);
        }
        return fflush(f) == 0 && !ferror(f) ? 0 : negative_errno();
}

/* Reads the new file back with the parser the daemon uses, before it replaces anything. */
static int verify_written(int fd, const Walk *w) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_free_ char *message = NULL;
        _cleanup_(fclosep) FILE *f = NULL;
        int copy, r;

        copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
        if (copy < 0)
                return log_error_errno(errno, "Failed to duplicate a file descriptor: %m");
        f = fdopen(copy, "r");
        if (!f) {
                r = log_error_errno(errno, "Failed to read the new manifest back: %m");
                safe_close(copy);
                return r;
        }
        if (fseeko(f, 0, SEEK_SET) < 0)
                return log_error_errno(errno, "Failed to read the new manifest back: %m");

        r = manifest_parse(f, &m, &message);
        if (r < 0)
                return log_error_errno(r, "The new manifest does not parse (%s), not installing it.",
                                       message ?: strerror(-r));
        if (manifest_entries(m) != w->n_entries || strcmp(manifest_kernel(m), arg_kernel) != 0 ||
            manifest_origin(m) != arg_origin || manifest_version(m) != written_version())
                return log_error_errno(EBADMSG, "The new manifest does not read back as written, not "
                                       "installing it.");
        return 0;
}

/* The output's directory, made when missing, and the temporary file in it, before the tree is read:
 * a manifest that cannot be written fails at once, not after every module file was read. */
static int output_prepare(Output *o) {
        int r;

        r = output_open(o, true);
        if (r < 0)
                return r;
        o->fd = output_create_tmp(o);
        if (o->fd < 0)
                return o->fd;
        /* 0644 whatever the umask: modgated refuses a manifest that group or others can write. */
        if (fchmod(o->fd, 0644) < 0)
                return log_error_errno(errno, "Failed to set the mode of %s/%s: %m", o->dir, o->tmp);
        return 0;
}

/* Writes the walk into o's temporary file and renames it over the manifest. */
static int write_manifest(Output *o, const Walk *w) {
        _cleanup_(fclosep) FILE *f = NULL;
        int fd, r;

        f = fdopen(o->fd, "w");
        if (!f)
                return log_error_errno(errno, "Failed to write %s/%s: %m", o->dir, o->tmp);
        fd = TAKE_FD(o->fd);

        r = write_entries(f, w);
        if (r < 0)
                return log_error_errno(r, "Failed to write %s/%s: %m", o->dir, o->tmp);
        if (fsync(fd) < 0)
                return log_error_errno(errno, "Failed to write %s/%s: %m", o->dir, o->tmp);
        r = verify_written(fd, w);
        if (r < 0)
                return r;
        if (fclose(TAKE_PTR(f)) != 0)
                return log_error_errno(errno, "Failed to write %s/%s: %m", o->dir, o->tmp);

        if (renameat(o->dfd, o->tmp, o->dfd, o->base) < 0)
                return log_error_errno(errno, "Failed to rename %s/%s to %s: %m", o->dir, o->tmp,
                                       o->storage);
        o->tmp = mfree(o->tmp);
        if (fsync(o->dfd) < 0)
                return log_error_errno(errno, "Failed to sync %s: %m", o->dir);

        if (w->n_entries == 0)
                log_warning("No module files in %s: the manifest lists none.", w->tree);
        log_info("Wrote %s: %zu module files of %s (origin %s, %s).", o->storage, w->n_entries, w->tree,
                 manifest_origin_to_string(arg_origin),
                 arg_digests_only ? "digests only" : w->n_unread > 0 ? "some without their .modinfo" :
                 "with their .modinfo");
        return 0;
}

static int remove_manifest(void) {
        _cleanup_(output_done) Output o = { .dfd = -EBADF, .fd = -EBADF };
        int r;

        r = output_open(&o, false);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (unlinkat(o.dfd, o.base, 0) < 0) {
                if (errno == ENOENT) {
                        log_debug("No manifest %s, nothing to remove.", o.storage);
                        return 0;
                }
                return log_error_errno(errno, "Failed to remove %s: %m", o.storage);
        }
        if (fsync(o.dfd) < 0)
                return log_error_errno(errno, "Failed to sync %s: %m", o.dir);
        log_info("Removed %s.", o.storage);
        return 0;
}

static int manifest_exists(bool *ret) {
        _cleanup_free_ char *path = NULL;
        struct stat st;
        int r;

        r = output_path(&path);
        if (r < 0)
                return r;
        if (lstat(path, &st) >= 0) {
                *ret = true;
                return 0;
        }
        if (errno != ENOENT)
                return log_error_errno(errno, "Failed to check for %s: %m", path);
        *ret = false;
        return 0;
}

static int run(void) {
        _cleanup_(output_done) Output o = { .dfd = -EBADF, .fd = -EBADF };
        _cleanup_(walk_done) Walk w = {};
        _cleanup_free_ char *tree = NULL;
        _cleanup_close_ int fd = -EBADF;
        int r;

        if (arg_remove)
                return remove_manifest();

        if (arg_if_missing) {
                bool exists = false;

                r = manifest_exists(&exists);
                if (r < 0)
                        return r;
                if (exists) {
                        log_debug("The manifest of %s exists already, leaving it as it is.", arg_kernel);
                        return 0;
                }
        }

        if (arg_tree)
                tree = strdup(arg_tree);
        else if (asprintf(&tree, "/usr/lib/modules/%s", arg_kernel) < 0)
                tree = NULL;
        if (!tree)
                return log_oom();

        fd = walk_open(tree, &w);
        if (fd < 0)
                return fd;
        r = output_prepare(&o);
        if (r < 0)
                return r;
        r = walk_dir(&w, TAKE_FD(fd), 0);
        if (r < 0)
                return r;
        if (w.n_entries > 0)
                qsort(w.entries, w.n_entries, sizeof(Entry), entry_compare);
        return write_manifest(&o, &w);
}

int main(int argc, char *argv[]) {
        int r;

        log_open();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r < 0 ? EXIT_USAGE : EXIT_SUCCESS;
        return run() < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
