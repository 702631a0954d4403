/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf-parser.h"
#include "fileio.h"
#include "macro.h"
#include "manifest.h"

_Static_assert(MANIFEST_FILE_MAX % (1024 * 1024) == 0, "the size message counts in MiB");

typedef struct ManifestEntry {
        const char *path;               /* points into Manifest.text */
        uint8_t digest[SHA256_DIGEST_SIZE];
} ManifestEntry;

struct Manifest {
        char *text;                     /* the file, each line NUL-terminated in place */
        char *kernel;
        ManifestOrigin origin;
        ManifestEntry *entries;         /* sorted by path, in strcmp() order */
        size_t n_entries;
};

typedef struct ParseState {
        Manifest *manifest;
        unsigned line;                  /* 0 for errors about the whole file */
        unsigned prev_line;             /* where the last entry was */
        size_t allocated;
        char **reterr_message;
} ParseState;

static const char *const origin_table[_MANIFEST_ORIGIN_MAX] = {
        [MANIFEST_ORIGIN_KERNEL_INSTALL] = "kernel-install",
        [MANIFEST_ORIGIN_FIRST_USE] = "first-use",
        [MANIFEST_ORIGIN_ADMIN] = "admin",
};

static const char *const module_suffixes[] = { ".ko", ".ko.xz", ".ko.zst", ".ko.gz" };

const char *manifest_origin_to_string(ManifestOrigin o) {
        if ((unsigned) o >= _MANIFEST_ORIGIN_MAX)
                return NULL;
        return origin_table[o];
}

int manifest_origin_from_string(const char *s) {
        for (int i = 0; s && i < _MANIFEST_ORIGIN_MAX; i++)
                if (strcmp(s, origin_table[i]) == 0)
                        return i;
        return -EINVAL;
}

bool manifest_kernel_is_valid(const char *kver) {
        size_t n = strnlen(kver, MANIFEST_KERNEL_MAX + 1);

        if (n == 0 || n > MANIFEST_KERNEL_MAX || strcmp(kver, ".") == 0 || strcmp(kver, "..") == 0)
                return false;
        return strspn(kver, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._+~-") == n;
}

bool manifest_name_is_module(const char *name) {
        size_t n = strlen(name);

        for (size_t i = 0; i < ELEMENTSOF(module_suffixes); i++) {
                size_t k = strlen(module_suffixes[i]);

                if (n > k && strcmp(name + n - k, module_suffixes[i]) == 0 && name[n - k - 1] != '/')
                        return true;
        }
        return false;
}

const char *manifest_path_problem(const char *path) {
        size_t n = strnlen(path, MANIFEST_PATH_MAX + 1);

        if (n == 0)
                return "the path is empty";
        if (n > MANIFEST_PATH_MAX)
                return "the path is longer than 4096 bytes";
        if (path[0] == '/')
                return "the path is absolute; entries are relative to the module tree";
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) path[i];

                if (c <= ' ' || c == 0x7f)
                        return "the path contains whitespace or a control character";
                if (c == '\\')
                        return "the path contains a backslash (which sha256sum would escape)";
        }
        for (const char *p = path;; p++) {
                size_t k = strcspn(p, "/");

                if (k == 0)
                        return "the path has an empty component ('//' or a trailing '/')";
                if ((k == 1 && p[0] == '.') || (k == 2 && p[0] == '.' && p[1] == '.'))
                        return "the path has a '.' or '..' component";
                p += k;
                if (*p == '\0')
                        break;
        }
        if (!manifest_name_is_module(path))
                return "the path does not name a module file (.ko, .ko.xz, .ko.zst or .ko.gz)";
        return NULL;
}

/* Sets the message, "LINE: " followed by the format, and returns r. */
_printf_(3, 4) static int parse_error(ParseState *s, int r, const char *format, ...) {
        va_list ap;

        va_start(ap, format);
        (void) line_error_va(s->reterr_message, NULL, s->line, r, format, ap);
        va_end(ap);
        return r;
}

/* Refuses bytes that have no place in a line, so that messages echo only printable text. */
static int check_line_bytes(ParseState *s, const char *line, size_t n) {
        char buf[LINE_PROBLEM_MAX];
        const char *problem = line_bytes_problem(line, n, buf);

        return problem ? parse_error(s, -EBADMSG, "the line %s", problem) : 0;
}

/* "# modgate manifest 1 kernel=KVER origin=ORIGIN", exactly. */
static int parse_header(ParseState *s, char *line) {
        const char *want = "the first line must be the header '" MANIFEST_HEADER_PREFIX
                           "kernel=KVER origin=ORIGIN'";
        char *version, *kernel, *origin;
        int o;

        if (strncmp(line, "# modgate manifest ", strlen("# modgate manifest ")) != 0)
                return parse_error(s, -EBADMSG, "%s", want);
        line += strlen("# modgate manifest ");
        version = strsep(&line, " ");
        if (strcmp(version, "1") != 0)
                return parse_error(s, -EBADMSG, "unsupported manifest version '%s' (this is version 1)",
                                   version);

        kernel = line ? strsep(&line, " ") : NULL;
        origin = line ? strsep(&line, " ") : NULL;
        if (!kernel || strncmp(kernel, "kernel=", strlen("kernel=")) != 0 ||
            !origin || strncmp(origin, "origin=", strlen("origin=")) != 0 || line)
                return parse_error(s, -EBADMSG, "%s", want);
        kernel += strlen("kernel=");
        origin += strlen("origin=");

        if (!manifest_kernel_is_valid(kernel))
                return parse_error(s, -EBADMSG, "kernel=%s is not a kernel release (1..%d letters, digits, "
                                   "'.', '_', '+', '~' or '-')", kernel, MANIFEST_KERNEL_MAX);
        o = manifest_origin_from_string(origin);
        if (o < 0)
                return parse_error(s, -EBADMSG, "unknown origin=%s (kernel-install, first-use or admin)",
                                   origin);

        s->manifest->kernel = strdup(kernel);
        if (!s->manifest->kernel)
                return parse_error(s, -ENOMEM, "out of memory");
        s->manifest->origin = o;
        return 0;
}

static int parse_digest(ParseState *s, const char *line, uint8_t ret[SHA256_DIGEST_SIZE]) {
        size_t k = strspn(line, "0123456789abcdefABCDEF");
        char hex[SHA256_HEX_SIZE];

        if (k != SHA256_HEX_SIZE - 1)
                return parse_error(s, -EBADMSG, "expected a SHA-256 digest (64 hex digits) at the start of "
                                   "the line, found %zu hex digits", k);
        if (strcspn(line, "ABCDEF") < k)
                return parse_error(s, -EBADMSG, "the digest has uppercase hex digits; manifests use "
                                   "lowercase, as sha256sum writes them");
        memcpy(hex, line, k);
        hex[k] = '\0';
        if (sha256_from_hex(hex, ret) < 0)
                return parse_error(s, -EBADMSG, "the digest is not valid hex");
        return 0;
}

static int add_entry(ParseState *s, const char *path, const uint8_t digest[SHA256_DIGEST_SIZE]) {
        Manifest *m = s->manifest;

        if (m->n_entries > 0) {
                const char *prev = m->entries[m->n_entries - 1].path;
                int c = strcmp(prev, path);

                if (c == 0)
                        return parse_error(s, -EBADMSG, "duplicate entry for %s (also on line %u)",
                                           path, s->prev_line);
                if (c > 0)
                        return parse_error(s, -EBADMSG, "%s is out of order: entries are sorted by path in "
                                           "byte order, and it sorts before %s on line %u",
                                           path, prev, s->prev_line);
        }
        if (m->n_entries >= MANIFEST_ENTRIES_MAX)
                return parse_error(s, -EFBIG, "more than %d entries", MANIFEST_ENTRIES_MAX);
        if (m->n_entries >= s->allocated) {
                size_t n = MIN(MAX(s->allocated * 2, (size_t) 64), (size_t) MANIFEST_ENTRIES_MAX);
                ManifestEntry *t = reallocarray(m->entries, n, sizeof(ManifestEntry));

                if (!t)
                        return parse_error(s, -ENOMEM, "out of memory");
                m->entries = t;
                s->allocated = n;
        }

        m->entries[m->n_entries].path = path;
        memcpy(m->entries[m->n_entries].digest, digest, SHA256_DIGEST_SIZE);
        m->n_entries++;
        s->prev_line = s->line;
        return 0;
}

/* "DIGEST  PATH", as sha256sum writes it in text mode. */
static int parse_entry(ParseState *s, char *line) {
        uint8_t digest[SHA256_DIGEST_SIZE];
        const char *path, *problem;
        int r;

        r = parse_digest(s, line, digest);
        if (r < 0)
                return r;
        line += SHA256_HEX_SIZE - 1;
        if (line[0] == ' ' && line[1] == '*')
                return parse_error(s, -EBADMSG, "binary-mode entries (' *PATH') are not used: expected two "
                                   "spaces between the digest and the path");
        if (line[0] != ' ' || line[1] != ' ')
                return parse_error(s, -EBADMSG, "expected two spaces between the digest and the path");
        path = line + 2;

        /* Echoed after the problem, unless there is nothing or too much to show. */
        problem = manifest_path_problem(path);
        if (problem && (path[0] == '\0' || strnlen(path, MANIFEST_PATH_MAX + 1) > MANIFEST_PATH_MAX))
                return parse_error(s, -EBADMSG, "%s", problem);
        if (problem)
                return parse_error(s, -EBADMSG, "%s: %s", problem, path);
        return add_entry(s, path, digest);
}

/* One line, without its '\n' (and with line[n] == '\0'). */
static int parse_line(ParseState *s, char *line, size_t n) {
        int r;

        r = check_line_bytes(s, line, n);
        if (r < 0)
                return r;
        if (s->line == 1)
                return parse_header(s, line);
        if (n == 0)
                return parse_error(s, -EBADMSG, "empty line");
        if (strncmp(line, "# modgate manifest ", strlen("# modgate manifest ")) == 0)
                return parse_error(s, -EBADMSG, "a second manifest header (two manifests joined?)");
        if (line[0] == '#')
                return 0;
        return parse_entry(s, line);
}

/* buf holds size bytes and a '\0' after them; the entries keep pointing into it. */
static int parse_buffer(ParseState *s, char *buf, size_t size) {
        char *p = buf, *end = buf + size;
        int r;

        if (size == 0) {
                s->line = 1;
                return parse_error(s, -EBADMSG, "the file is empty; the first line must be the header '"
                                   MANIFEST_HEADER_PREFIX "kernel=KVER origin=ORIGIN'");
        }

        while (p < end) {
                char *nl = memchr(p, '\n', (size_t) (end - p));
                size_t n = nl ? (size_t) (nl - p) : (size_t) (end - p);

                s->line++;
                if (!nl) {
                        /* What a manifest cut short looks like: never read a partial last entry. */
                        r = check_line_bytes(s, p, n);
                        return r < 0 ? r : parse_error(s, -EBADMSG, "the last line does not end with a "
                                                       "newline (is the file truncated?)");
                }
                *nl = '\0';
                r = parse_line(s, p, n);
                if (r < 0)
                        return r;
                p = nl + 1;
        }
        return 0;
}

static int parse_text(char *text, size_t size, Manifest **ret, char **reterr_message) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        ParseState s = { .reterr_message = reterr_message };
        int r;

        m = calloc(1, sizeof(Manifest));
        if (!m) {
                free(text);
                return parse_error(&s, -ENOMEM, "out of memory");
        }
        m->text = text;
        s.manifest = m;

        r = parse_buffer(&s, text, size);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

static int read_error(ParseState *s, int r) {
        if (r == -EFBIG)
                return parse_error(s, r, "the file is larger than %d MiB",
                                   MANIFEST_FILE_MAX / (1024 * 1024));
        if (r == -ENOMEM)
                return parse_error(s, r, "out of memory");
        return parse_error(s, r, "failed to read: %s", strerror(-r));
}

int manifest_parse(FILE *f, Manifest **ret, char **reterr_message) {
        ParseState s = { .reterr_message = reterr_message };
        char *text = NULL;
        size_t size;
        int r;

        r = read_full_stream(f, MANIFEST_FILE_MAX, &text, &size);
        if (r < 0)
                return read_error(&s, r);
        return parse_text(text, size, ret, reterr_message);
}

static const char *file_type(mode_t mode) {
        switch (mode & S_IFMT) {
        case S_IFDIR:
                return "directory";
        case S_IFIFO:
                return "FIFO";
        case S_IFSOCK:
                return "socket";
        case S_IFCHR:
                return "character device";
        case S_IFBLK:
                return "block device";
        case S_IFLNK:
                return "symbolic link";
        default:
                return "file of unknown type";
        }
}

/* The manifest decides what the daemon trusts: only root may have written it. */
static int check_metadata(ParseState *s, int fd, struct stat *ret) {
        struct stat st;

        if (fstat(fd, &st) < 0) {
                int r = negative_errno();
                return parse_error(s, r, "failed to stat: %s", strerror(-r));
        }
        if (!S_ISREG(st.st_mode))
                return parse_error(s, -EPERM, "refusing a %s: a manifest must be a regular file",
                                   file_type(st.st_mode));
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return parse_error(s, -EPERM, "refusing a manifest writable by group or others (mode %04o)",
                                   (unsigned) (st.st_mode & 07777));
        if (st.st_uid != 0)
                return parse_error(s, -EPERM, "refusing a manifest owned by uid %u: it must be owned by "
                                   "root", (unsigned) st.st_uid);
        *ret = st;
        return 0;
}

/* At most MANIFEST_FILE_MAX bytes from offset 0, and one more to know it is too large. */
static int pread_full(int fd, size_t hint, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t allocated = MIN(hint, (size_t) MANIFEST_FILE_MAX) + 2, size = 0;

        buf = malloc(allocated);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                ssize_t n;

                if (size > MANIFEST_FILE_MAX)
                        return -EFBIG;
                if (size + 1 >= allocated) {
                        size_t a = MIN(allocated * 2, (size_t) MANIFEST_FILE_MAX + 2);
                        char *t = realloc(buf, a);

                        if (!t)
                                return -ENOMEM;
                        buf = t;
                        allocated = a;
                }
                n = pread(fd, buf + size, allocated - 1 - size, (off_t) size);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return negative_errno();
                if (n == 0)
                        break;
                size += (size_t) n;
        }
        buf[size] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_size = size;
        return 0;
}

int manifest_load_fd(int fd, Manifest **ret, char **reterr_message) {
        ParseState s = { .reterr_message = reterr_message };
        struct stat st;
        char *text = NULL;
        size_t size;
        int r;

        r = check_metadata(&s, fd, &st);
        if (r < 0)
                return r;
        if (st.st_size > MANIFEST_FILE_MAX)
                return read_error(&s, -EFBIG);

        r = pread_full(fd, (size_t) st.st_size, &text, &size);
        if (r < 0)
                return read_error(&s, r);
        return parse_text(text, size, ret, reterr_message);
}

int manifest_load_path(const char *path, Manifest **ret, char **reterr_message) {
        _cleanup_close_ int fd = -EBADF;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
        if (fd < 0)
                return negative_errno();
        return manifest_load_fd(fd, ret, reterr_message);
}

static int entry_compare(const void *key, const void *e) {
        return strcmp(key, ((const ManifestEntry *) e)->path);
}

const uint8_t *manifest_lookup(const Manifest *m, const char *relpath) {
        const ManifestEntry *e;

        if (!m || !relpath || m->n_entries == 0)
                return NULL;
        e = bsearch(relpath, m->entries, m->n_entries, sizeof(ManifestEntry), entry_compare);
        return e ? e->digest : NULL;
}

const char *manifest_kernel(const Manifest *m) {
        assert(m);

        return m->kernel;
}

ManifestOrigin manifest_origin(const Manifest *m) {
        assert(m);

        return m->origin;
}

size_t manifest_entries(const Manifest *m) {
        assert(m);

        return m->n_entries;
}

Manifest *manifest_free(Manifest *m) {
        if (!m)
                return NULL;
        free(m->entries);
        free(m->kernel);
        free(m->text);
        free(m);
        return NULL;
}
