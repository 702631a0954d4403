/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
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
#include "module-name.h"

_Static_assert(MANIFEST_FILE_MAX % (1024 * 1024) == 0, "the size message counts in MiB");

typedef struct ManifestEntry {
        const char *path;               /* points into Manifest.text */
        const char *info;               /* version 2: the fields of its "#: " line, checked; or NULL */
        uint8_t digest[SHA256_DIGEST_SIZE];
} ManifestEntry;

struct Manifest {
        char *text;                     /* the file, each line NUL-terminated in place */
        unsigned version;
        char *kernel;
        ManifestOrigin origin;
        ManifestEntry *entries;         /* sorted by path, in strcmp() order */
        size_t n_entries;
};

typedef struct ParseState {
        Manifest *manifest;
        unsigned line;                  /* 0 for errors about the whole file */
        unsigned prev_line;             /* where the last entry was */
        bool after_entry;               /* the line before was an entry */
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

/* "# modgate manifest VERSION kernel=KVER origin=ORIGIN", exactly. */
static int parse_header(ParseState *s, char *line) {
        const char *want = "the first line must be the header '" MANIFEST_HEADER_WANT "'";
        char *version, *kernel, *origin;
        int o;

        if (strncmp(line, MANIFEST_HEADER_PREFIX, strlen(MANIFEST_HEADER_PREFIX)) != 0)
                return parse_error(s, -EBADMSG, "%s", want);
        line += strlen(MANIFEST_HEADER_PREFIX);
        version = strsep(&line, " ");
        if (strcmp(version, "1") == 0)
                s->manifest->version = 1;
        else if (strcmp(version, "2") == 0)
                s->manifest->version = 2;
        else
                return parse_error(s, -EBADMSG, "unsupported manifest version '%s' (versions 1 and 2 are "
                                   "read)", version);

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
        m->entries[m->n_entries].info = NULL;
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

/* The next "KEY=VALUE" of an info line at *p: the key, the value as written (escaped) and its length;
 * *p moves past it and its separating space. False at the end of the line, or where the line is
 * not fields separated by single spaces (then *ret_problem says so). */
static bool next_field(const char **p, const char **ret_key, size_t *ret_key_len, const char **ret_value,
                       size_t *ret_value_len, const char **ret_problem) {
        const char *f = *p, *eq;
        size_t n;

        *ret_problem = NULL;
        if (*f == '\0')
                return false;
        n = strcspn(f, " ");
        eq = memchr(f, '=', n);
        if (n == 0 || !eq || eq == f) {
                *ret_problem = "expected KEY=VALUE fields separated by single spaces";
                return false;
        }
        *ret_key = f;
        *ret_key_len = (size_t) (eq - f);
        *ret_value = eq + 1;
        *ret_value_len = n - *ret_key_len - 1;
        f += n;
        if (*f == ' ') {
                f++;
                if (*f == '\0' || *f == ' ') {
                        *ret_problem = "expected KEY=VALUE fields separated by single spaces";
                        return false;
                }
        }
        *p = f;
        return true;
}

static bool key_is(const char *key, size_t n, const char *want) {
        return strlen(want) == n && memcmp(key, want, n) == 0;
}

bool manifest_info_byte_escaped(unsigned char c) {
        return c <= ' ' || c == 0x7f || c == '\\';
}

/* The value as it was before manifest_info_format() escaped it (into ret, n + 1 bytes at least, when
 * not NULL), or what is wrong with it. */
static const char *unescape(const char *v, size_t n, char *ret) {
        size_t k = 0;

        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) v[i];
                int hi, lo;

                if (c != '\\') {
                        if (manifest_info_byte_escaped(c))
                                return "a value has a byte that must be written as \\xHH";
                        if (ret)
                                ret[k] = (char) c;
                        k++;
                        continue;
                }
                if (i + 3 >= n || v[i + 1] != 'x' || !strchr("0123456789abcdef", v[i + 2]) ||
                    !strchr("0123456789abcdef", v[i + 3]))
                        return "a value has a '\\' that is not \\xHH (lowercase hex)";
                hi = v[i + 2] <= '9' ? v[i + 2] - '0' : v[i + 2] - 'a' + 10;
                lo = v[i + 3] <= '9' ? v[i + 3] - '0' : v[i + 3] - 'a' + 10;
                c = (unsigned char) (hi * 16 + lo);
                if (c == '\0' || !manifest_info_byte_escaped(c))
                        return "a value escapes a byte that is written as it is (or NUL)";
                if (ret)
                        ret[k] = (char) c;
                k++;
                i += 3;
        }
        if (ret)
                ret[k] = '\0';
        return NULL;
}

/* The fields of an info line, in their order: the name, then a signature's, then the aliases. */
typedef enum InfoField {
        INFO_NAME,
        INFO_SIGNATURE,
        INFO_SIGNER,
        INFO_KEY,
        INFO_HASH,
        INFO_ALIAS,
        _INFO_FIELD_MAX,
} InfoField;

static const char *const info_keys[_INFO_FIELD_MAX] = {
        [INFO_NAME] = "name",
        [INFO_SIGNATURE] = "signature",
        [INFO_SIGNER] = "signer",
        [INFO_KEY] = "key",
        [INFO_HASH] = "hash",
        [INFO_ALIAS] = "alias",
};

/* Walks an info line; for each field calls f (when not NULL) with its unescaped value. Returns NULL,
 * or what is wrong with the line. */
typedef int (*info_field_fn)(InfoField field, char *value, void *userdata);

static const char *info_walk(const char *p, info_field_fn f, void *userdata, int *ret_error) {
        InfoField last = _INFO_FIELD_MAX;
        bool any = false;

        *ret_error = 0;
        for (;;) {
                const char *key, *value, *problem;
                size_t key_len, value_len;
                InfoField field;

                if (!next_field(&p, &key, &key_len, &value, &value_len, &problem)) {
                        if (problem)
                                return problem;
                        break;
                }
                for (field = 0; field < _INFO_FIELD_MAX; field++)
                        if (key_is(key, key_len, info_keys[field]))
                                break;
                if (field == _INFO_FIELD_MAX)
                        return "unknown field (name, signature, signer, key, hash, alias)";
                if (!any && field != INFO_NAME)
                        return "the first field must be name=";
                if (any && (field < last || (field == last && field != INFO_ALIAS)))
                        return "fields out of order or repeated (name, signature, signer, key, hash, "
                               "then any alias)";
                if (field >= INFO_SIGNER && field <= INFO_HASH && last < INFO_SIGNATURE)
                        return "signer=, key= and hash= come only after signature=";
                if (value_len == 0 && field != INFO_SIGNATURE)
                        return "a value is empty (only signature= may be)";
                problem = unescape(value, value_len, NULL);
                if (problem)
                        return problem;
                if (f) {
                        _cleanup_free_ char *v = malloc(value_len + 1);
                        int r;

                        if (!v) {
                                *ret_error = -ENOMEM;
                                return "out of memory";
                        }
                        (void) unescape(value, value_len, v);
                        r = f(field, v, userdata);
                        if (r < 0) {
                                *ret_error = r;
                                return "out of memory";
                        }
                }
                last = field;
                any = true;
        }
        return any ? NULL : "the line has no fields";
}

/* "#: name=NAME ...": what modgate-manifest read from the entry's bytes, right after that entry. */
static int parse_info(ParseState *s, const char *fields) {
        Manifest *m = s->manifest;
        const char *problem;
        int r;

        if (!s->after_entry)
                return parse_error(s, -EBADMSG, "an info line ('" MANIFEST_INFO_PREFIX "') must come right "
                                   "after its entry, once");
        s->after_entry = false;
        problem = info_walk(fields, NULL, NULL, &r);
        if (problem)
                return parse_error(s, -EBADMSG, "the info line: %s", problem);
        m->entries[m->n_entries - 1].info = fields;
        return 0;
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
        if (strncmp(line, MANIFEST_HEADER_PREFIX, strlen(MANIFEST_HEADER_PREFIX)) == 0)
                return parse_error(s, -EBADMSG, "a second manifest header (two manifests joined?)");
        if (s->manifest->version >= 2 &&
            strncmp(line, MANIFEST_INFO_PREFIX, strlen(MANIFEST_INFO_PREFIX)) == 0)
                return parse_info(s, line + strlen(MANIFEST_INFO_PREFIX));
        s->after_entry = false;
        if (line[0] == '#')
                return 0;
        r = parse_entry(s, line);
        s->after_entry = r >= 0;
        return r;
}

/* buf holds size bytes and a '\0' after them; the entries keep pointing into it. */
static int parse_buffer(ParseState *s, char *buf, size_t size) {
        char *p = buf, *end = buf + size;
        int r;

        if (size == 0) {
                s->line = 1;
                return parse_error(s, -EBADMSG, "the file is empty; the first line must be the header '"
                                   MANIFEST_HEADER_WANT "'");
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

static const ManifestEntry *lookup(const Manifest *m, const char *relpath) {
        if (!m || !relpath || m->n_entries == 0)
                return NULL;
        return bsearch(relpath, m->entries, m->n_entries, sizeof(ManifestEntry), entry_compare);
}

const uint8_t *manifest_lookup(const Manifest *m, const char *relpath) {
        const ManifestEntry *e = lookup(m, relpath);

        return e ? e->digest : NULL;
}

typedef struct InfoFill {
        ModInfo *info;
        const char *alias_key;
} InfoFill;

static int info_fill(InfoField field, char *value, void *userdata) {
        InfoFill *f = userdata;
        char **slot = NULL;

        switch (field) {
        case INFO_NAME:
                slot = &f->info->name;
                break;
        case INFO_SIGNATURE:
                f->info->is_signed = true;
                if (*value)
                        slot = &f->info->signature_type;
                break;
        case INFO_SIGNER:
                slot = &f->info->signer;
                break;
        case INFO_KEY:
                slot = &f->info->signature_key;
                break;
        case INFO_HASH:
                slot = &f->info->signature_hash;
                break;
        case INFO_ALIAS:
                if (f->alias_key && !f->info->alias && fnmatch(value, f->alias_key, 0) == 0)
                        slot = &f->info->alias;
                break;
        default:
                break;
        }
        if (!slot)
                return 0;
        *slot = strdup(value);
        return *slot ? 0 : -ENOMEM;
}

int manifest_lookup_modinfo(const Manifest *m, const char *relpath, const uint8_t digest[SHA256_DIGEST_SIZE],
                            const char *alias_key, ModInfo *ret) {
        const ManifestEntry *e = lookup(m, relpath);
        _cleanup_(modinfo_done) ModInfo info = {};
        InfoFill fill = { .info = &info, .alias_key = alias_key };
        int r;

        assert(digest);
        assert(ret);

        if (!e || !e->info || memcmp(e->digest, digest, SHA256_DIGEST_SIZE) != 0)
                return 0;
        /* Checked when it was parsed: only memory can fail now. */
        if (info_walk(e->info, info_fill, &fill, &r) && r < 0)
                return r;
        module_name_normalize(info.name);
        *ret = info;
        info = (ModInfo) {};
        return 1;
}

static void escape_append(FILE *f, const char *key, const char *value) {
        fprintf(f, " %s=", key);
        for (const char *c = value; *c; c++)
                if (manifest_info_byte_escaped((unsigned char) *c))
                        fprintf(f, "\\x%02x", (unsigned) (unsigned char) *c);
                else
                        fputc(*c, f);
}

int manifest_info_format(const ModInfo *info, char *const *aliases, char **ret) {
        _cleanup_free_ char *buf = NULL;
        _cleanup_(fclosep) FILE *f = NULL;
        size_t size = 0;

        assert(info);
        assert(ret);

        if (!info->name || !*info->name)
                return -EINVAL;
        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        escape_append(f, "name", info->name);
        if (info->is_signed) {
                escape_append(f, "signature", info->signature_type ?: "");
                if (info->signer && *info->signer)
                        escape_append(f, "signer", info->signer);
                if (info->signature_key && *info->signature_key)
                        escape_append(f, "key", info->signature_key);
                if (info->signature_hash && *info->signature_hash)
                        escape_append(f, "hash", info->signature_hash);
        }
        for (char *const *a = aliases; a && *a; a++)
                if (**a)
                        escape_append(f, "alias", *a);
        if (fflush(f) != 0 || ferror(f))
                return -ENOMEM;
        fclose(TAKE_PTR(f));
        /* Without the first field's leading space. */
        *ret = strdup(buf + 1);
        return *ret ? 0 : -ENOMEM;
}

unsigned manifest_version(const Manifest *m) {
        assert(m);

        return m->version;
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
