/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "conf-files.h"
#include "config-internal.h"
#include "config.h"
#include "fileio.h"
#include "kernel-cmdline.h"
#include "macro.h"
#include "manifest.h"
#include "module-name.h"
#include "strv.h"
#include "trust.h"

_Static_assert(CONFIG_FILE_MAX % (1024 * 1024) == 0, "the size message counts in MiB");

/* Not /run/modgate: a process denied module loading (ProtectKernelModules=yes, udevd under the
 * takeover, a container sharing /run) can usually still write /run, and nothing it writes may steer
 * the gate. /etc and /usr can be written only by what could give itself CAP_SYS_MODULE anyway. */
const char *const config_dirs[] = {
        "/etc/modgate",
        "/usr/local/lib/modgate",
        "/usr/lib/modgate",
        NULL,
};

const char *const config_ignored_dirs[] = {
        "/run/modgate",
        NULL,
};

unsigned config_workers_default(long online_cpus) {
        if (online_cpus < (long) CONFIG_WORKERS_AUTO_MIN)
                return CONFIG_WORKERS_AUTO_MIN;
        return (unsigned) MIN(online_cpus, (long) CONFIG_WORKERS_AUTO_MAX);
}

void config_init_defaults(Config *c) {
        assert(c);

        *c = (Config) {
                .workers = CONFIG_WORKERS_DEFAULT,
                .idle_exit_usec = CONFIG_IDLE_EXIT_USEC_DEFAULT,
                .connections_max = CONFIG_CONNECTIONS_MAX_DEFAULT,
                .connections_per_user_max = CONFIG_CONNECTIONS_PER_USER_MAX_DEFAULT,
                .idle_connection_usec = CONFIG_IDLE_CONNECTION_USEC_DEFAULT,
                .require_superblock_ro = true,
                .trust.evidence = EVIDENCE_DEFAULT,
                .guard_mode = GUARD_MODE_DEFAULT,
        };
        policy_init(&c->policy);
}

int config_default_trusted_root(char **ret) {
        struct utsname u;

        assert(ret);

        if (uname(&u) < 0)
                return negative_errno();
        return asprintf(ret, "/usr/lib/modules/%s", u.release) < 0 ? -ENOMEM : 0;
}

int config_default_manifest_path(char **ret) {
        struct utsname u;

        assert(ret);

        if (uname(&u) < 0)
                return negative_errno();
        return asprintf(ret, "%s/%s%s", MANIFEST_DIR, u.release, MANIFEST_SUFFIX) < 0 ? -ENOMEM : 0;
}

unsigned config_evidence(const Config *c) {
        assert(c);

        return c->trust.evidence | (c->require_superblock_ro ? 0 : EVIDENCE_MASK(EVIDENCE_OWNERSHIP));
}

static bool root_config_equal(const RootConfig *a, const RootConfig *b) {
        return strcmp(a->path ?: "", b->path ?: "") == 0 && a->set == b->set && a->evidence == b->evidence &&
                strv_equal(a->root_hashes, b->root_hashes) &&
                strv_equal(a->fsverity_digests, b->fsverity_digests) &&
                strcmp(a->manifest ?: "", b->manifest ?: "") == 0 && a->require_ima == b->require_ima &&
                signer_rule_equal(&a->signer, &b->signer);
}

bool config_trust_equal(const Config *a, const Config *b) {
        assert(a);
        assert(b);

        if (!strv_equal(a->trusted_roots, b->trusted_roots) ||
            a->require_superblock_ro != b->require_superblock_ro ||
            !root_config_equal(&a->trust, &b->trust) || a->n_roots != b->n_roots)
                return false;
        for (size_t i = 0; i < a->n_roots; i++)
                if (!root_config_equal(&a->roots[i], &b->roots[i]))
                        return false;
        for (size_t i = 0; i < _SOURCE_MAX; i++)
                if (!signer_rule_equal(&a->source_signers[i], &b->source_signers[i]))
                        return false;
        return true;
}

void root_config_done(RootConfig *r) {
        free(r->path);
        strv_free(r->root_hashes);
        strv_free(r->fsverity_digests);
        free(r->manifest);
        signer_rule_done(&r->signer);
        *r = (RootConfig) {};
}

void root_config_array_free(RootConfig *a, size_t n) {
        for (size_t i = 0; a && i < n; i++)
                root_config_done(&a[i]);
        free(a);
}

void config_done(Config *c) {
        strv_free(c->load_alone);
        strv_free(c->trusted_roots);
        root_config_done(&c->trust);
        root_config_array_free(c->roots, c->n_roots);
        policy_done(&c->policy);
        for (size_t i = 0; i < _SOURCE_MAX; i++)
                signer_rule_done(&c->source_signers[i]);
        *c = (Config) {};
}

/* Copies the settings in from->set over those of to. */
static int root_config_apply(RootConfig *to, const RootConfig *from) {
        if (from->set & ROOT_FIELD_EVIDENCE)
                to->evidence = from->evidence;
        if (from->set & ROOT_FIELD_ROOT_HASH) {
                strv_free(to->root_hashes);
                to->root_hashes = strv_copy_n(from->root_hashes, strv_length(from->root_hashes));
                if (!to->root_hashes && from->root_hashes)
                        return -ENOMEM;
        }
        if (from->set & ROOT_FIELD_FSVERITY_DIGEST) {
                strv_free(to->fsverity_digests);
                to->fsverity_digests =
                        strv_copy_n(from->fsverity_digests, strv_length(from->fsverity_digests));
                if (!to->fsverity_digests && from->fsverity_digests)
                        return -ENOMEM;
        }
        if (from->set & ROOT_FIELD_MANIFEST) {
                free(to->manifest);
                to->manifest = from->manifest ? strdup(from->manifest) : NULL;
                if (!to->manifest && from->manifest)
                        return -ENOMEM;
        }
        if (from->set & ROOT_FIELD_REQUIRE_IMA)
                to->require_ima = from->require_ima;
        if (from->set & (ROOT_FIELD_REQUIRE_SIGNATURE | ROOT_FIELD_ALLOW_SIGNER) &&
            signer_rule_copy_parts(&to->signer, &from->signer, from->set & ROOT_FIELD_REQUIRE_SIGNATURE,
                                   from->set & ROOT_FIELD_ALLOW_SIGNER) < 0)
                return -ENOMEM;
        to->set |= from->set;
        return 0;
}

/* A root with [Trust]'s settings; its Manifest= only for the first root, the kernel's tree, which is
 * what a manifest lists. */
static int root_config_init(RootConfig *r, const Config *c, const char *path, bool first) {
        RootConfig trust = c->trust;

        trust.set = ROOT_FIELD_EVIDENCE | ROOT_FIELD_ROOT_HASH | ROOT_FIELD_FSVERITY_DIGEST |
                ROOT_FIELD_REQUIRE_IMA | ROOT_FIELD_REQUIRE_SIGNATURE | ROOT_FIELD_ALLOW_SIGNER |
                (first ? ROOT_FIELD_MANIFEST : 0);
        *r = (RootConfig) {};
        r->path = strdup(path);
        if (!r->path || root_config_apply(r, &trust) < 0)
                return -ENOMEM;
        r->set = 0;
        return 0;
}

int config_trusted_roots(const Config *c, RootConfig **ret) {
        _cleanup_free_ char *def = NULL;
        char *const *paths = c->trusted_roots;
        char *one[2] = {};
        RootConfig *a;
        size_t n = 0, cap;
        int r;

        assert(c);
        assert(ret);

        if (strv_length(paths) == 0) {
                r = config_default_trusted_root(&def);
                if (r < 0)
                        return r;
                one[0] = def;
                paths = one;
        }

        cap = strv_length(paths) + c->n_roots;
        a = calloc(cap, sizeof(RootConfig));
        if (!a)
                return -ENOMEM;
        for (; paths[n]; n++)
                if (root_config_init(&a[n], c, paths[n], n == 0) < 0)
                        goto oom;

        for (size_t i = 0; i < c->n_roots; i++) {
                const RootConfig *sec = &c->roots[i];
                size_t k;

                for (k = 0; k < n; k++)
                        if (strcmp(a[k].path, sec->path) == 0)
                                break;
                if (k == n && root_config_init(&a[n++], c, sec->path, false) < 0)
                        goto oom;
                if (root_config_apply(&a[k], sec) < 0)
                        goto oom;
        }

        for (size_t k = 0; k < n; k++) {
                /* The old switch widens what [Trust] accepts, never what a [Root] states itself. */
                if (!c->require_superblock_ro && !(a[k].set & ROOT_FIELD_EVIDENCE))
                        a[k].evidence |= EVIDENCE_MASK(EVIDENCE_OWNERSHIP);
                if (k == 0 && !a[k].manifest && config_default_manifest_path(&a[k].manifest) < 0)
                        goto oom;
        }
        *ret = a;
        return (int) n;
oom:
        root_config_array_free(a, cap);
        return -ENOMEM;
}

static int parse_workers(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);
        unsigned v;
        int r;

        if (value[0] == '\0') {
                s->config->workers = CONFIG_WORKERS_DEFAULT;
                return 0;
        }
        r = parse_unsigned(value, &v);
        if (r == -EINVAL)
                return parse_error(s, -EINVAL, "%s=%s is not a number", key, value);
        if (r < 0 || v < 1 || v > CONFIG_WORKERS_MAX)
                return parse_error(s, -EINVAL, "%s=%s is out of range 1..%u",
                                   key, value, CONFIG_WORKERS_MAX);
        s->config->workers = v;
        return 0;
}

/* A time span, where "infinity" and 0 both mean never; empty: def. */
static int parse_span_or_never(ParseState *s, const char *key, const char *value, uint64_t def,
                               uint64_t *ret) {
        uint64_t v;
        int r;

        if (value[0] == '\0') {
                *ret = def;
                return 0;
        }
        r = parse_timespan(value, &v);
        if (r == -ERANGE)
                return parse_error(s, -EINVAL, "%s=%s is out of range", key, value);
        if (r < 0)
                return parse_error(s, -EINVAL, "%s=%s is not a time span (such as 30s, 5min, infinity)",
                                   key, value);
        *ret = v == USEC_INFINITY ? 0 : v;
        return 0;
}

static int parse_idle_exit(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        return parse_span_or_never(s, key, value, CONFIG_IDLE_EXIT_USEC_DEFAULT, &s->config->idle_exit_usec);
}

/* A number of connections, 1..CONFIG_CONNECTIONS_LIMIT; empty: def. */
static int parse_connections(ParseState *s, const char *key, const char *value, unsigned def,
                             unsigned *ret) {
        unsigned v;
        int r;

        if (value[0] == '\0') {
                *ret = def;
                return 0;
        }
        r = parse_unsigned(value, &v);
        if (r == -EINVAL)
                return parse_error(s, -EINVAL, "%s=%s is not a number", key, value);
        if (r < 0 || v < 1 || v > CONFIG_CONNECTIONS_LIMIT)
                return parse_error(s, -EINVAL, "%s=%s is out of range 1..%u", key, value,
                                   CONFIG_CONNECTIONS_LIMIT);
        *ret = v;
        return 0;
}

static int parse_connections_max(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        return parse_connections(s, key, value, CONFIG_CONNECTIONS_MAX_DEFAULT, &s->config->connections_max);
}

static int parse_connections_per_user_max(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        return parse_connections(s, key, value, CONFIG_CONNECTIONS_PER_USER_MAX_DEFAULT,
                                 &s->config->connections_per_user_max);
}

static int parse_idle_connection(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        return parse_span_or_never(s, key, value, CONFIG_IDLE_CONNECTION_USEC_DEFAULT,
                                   &s->config->idle_connection_usec);
}

/* A group's gid by name; a group with many members needs a bigger buffer than the first. */
static int group_lookup(const char *name, gid_t *ret) {
        for (size_t size = 4096; size <= 1024 * 1024; size *= 4) {
                _cleanup_free_ char *buf = malloc(size);
                struct group g, *found = NULL;
                int r;

                if (!buf)
                        return -ENOMEM;
                r = getgrnam_r(name, &g, buf, size, &found);
                if (r == ERANGE)
                        continue;
                if (r != 0)
                        return -r;
                if (!found)
                        return -ENOENT;
                *ret = found->gr_gid;
                return 0;
        }
        return -ERANGE;
}

/* A group name, resolved now, or a number. */
static int parse_read_group(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);
        unsigned v;
        int r;

        s->config->have_read_group = false;
        if (value[0] == '\0')
                return 0;
        if (parse_unsigned(value, &v) >= 0 && v < (unsigned) -1)
                s->config->read_group = (gid_t) v;
        else {
                r = group_lookup(value, &s->config->read_group);
                if (r == -ENOMEM)
                        return parse_error(s, r, "out of memory");
                if (r < 0)
                        return parse_error(s, -EINVAL, "%s=%s is not a group of this system (%s)", key,
                                           value, r == -ENOENT ? "no such group" : strerror(-r));
        }
        s->config->have_read_group = true;
        return 0;
}

static int parse_require_superblock_ro(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);
        int r;

        if (value[0] == '\0') {
                s->config->require_superblock_ro = true;
                return 0;
        }
        r = parse_boolean(value);
        if (r < 0)
                return parse_error(s, -EINVAL, "%s=%s is not a boolean (yes/no, true/false, on/off, 1/0)",
                                   key, value);
        s->config->require_superblock_ro = r;
        return 0;
}

/* "/" alone, or "/" followed by components that are neither empty, "." nor "..". */
static bool path_is_normalized(const char *p) {
        if (strcmp(p, "/") == 0)
                return true;
        while (*p == '/') {
                size_t n = strcspn(++p, "/");

                if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                p += n;
        }
        return *p == '\0';
}

static int check_module_name(ParseState *s, const char *key, char *word) {
        if (!module_name_is_valid(word))
                return parse_error(s, -EINVAL, "%s=%s is not a valid module name", key, word);
        module_name_normalize(word);
        return 0;
}

static int check_path(ParseState *s, const char *key, char *word) {
        if (word[0] != '/')
                return parse_error(s, -EINVAL, "%s=%s is not an absolute path", key, word);
        if (!path_is_normalized(word))
                return parse_error(s, -EINVAL, "%s=%s is not a normalized path (it has '.', '..', '//' "
                                   "or a trailing '/')", key, word);
        return 0;
}

static int parse_load_alone(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        return config_parse_list(s, key, value, &s->config->load_alone, check_module_name);
}

static int parse_trusted_root(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        return config_parse_list(s, key, value, &s->config->trusted_roots, check_path);
}

/* One setting, not a list: the last assignment wins, so that a drop-in states all that a root
 * accepts. Empty: the default. */
int config_parse_evidence(const char *value, unsigned *ret) {
        unsigned mask = 0;

        assert(value);
        assert(ret);

        for (const char *p = value + strspn(value, CONF_WHITESPACE); *p; p += strspn(p, CONF_WHITESPACE)) {
                size_t n = strcspn(p, CONF_WHITESPACE);
                char word[16];
                Evidence e;

                if (n >= sizeof(word))
                        return -EINVAL;
                memcpy(word, p, n);
                word[n] = '\0';
                p += n;
                e = evidence_from_string(word);
                if (e < 0)
                        return -EINVAL;
                mask |= EVIDENCE_MASK(e);
        }
        *ret = mask;
        return 0;
}

/* In a [Root], an empty assignment gives the setting back to [Trust]; in [Trust], to its default. */
static bool reset_setting(ParseState *s, const char *value, RootField field) {
        if (value[0] != '\0')
                return false;
        s->root->set &= ~field;
        return true;
}

static int parse_evidence(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);
        unsigned mask;

        if (reset_setting(s, value, ROOT_FIELD_EVIDENCE)) {
                s->root->evidence = EVIDENCE_DEFAULT;
                return 0;
        }
        if (config_parse_evidence(value, &mask) < 0)
                return parse_error(s, -EINVAL,
                                   "%s=%s: the kinds of evidence are verity, read-only, manifest and "
                                   "ownership",
                                   key, value);
        s->root->evidence = mask;
        s->root->set |= ROOT_FIELD_EVIDENCE;
        return 0;
}

/* A path setting of the current root: Manifest=, Path=. */
static int parse_root_path(ParseState *s, const char *key, const char *value, char **field) {
        _cleanup_free_ char *path = NULL;
        int r;

        path = strdup(value);
        if (!path)
                return parse_error(s, -ENOMEM, "out of memory");
        r = check_path(s, key, path);
        if (r < 0)
                return r;
        free(*field);
        *field = TAKE_PTR(path);
        return 0;
}

static int parse_manifest(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        if (reset_setting(s, value, ROOT_FIELD_MANIFEST)) {
                free(s->root->manifest);
                s->root->manifest = NULL;
                return 0;
        }
        s->root->set |= ROOT_FIELD_MANIFEST;
        return parse_root_path(s, key, value, &s->root->manifest);
}

static int parse_path(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        if (value[0] == '\0')
                return parse_error(s, -EINVAL, "%s= needs the trusted root's directory", key);
        return parse_root_path(s, key, value, &s->root->path);
}

static bool hex_lower(char *s, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '\0' || !strchr("0123456789abcdefABCDEF", s[i]))
                        return false;
                if (s[i] >= 'A' && s[i] <= 'F')
                        s[i] += 'a' - 'A';
        }
        return true;
}

int config_normalize_root_hash(char *s) {
        size_t n = strlen(s);

        assert(s);

        if (n < 32 || n > 128 || n % 2 != 0 || !hex_lower(s, n))
                return -EINVAL;
        return 0;
}

int config_cmdline_root_hashes(const char *cmdline, char ***ret) {
        static const char *const keys[] = { "roothash", "usrhash", NULL };
        _cleanup_strv_free_ char **values = NULL, **l = NULL;
        int r;

        assert(cmdline);
        assert(ret);

        /* As systemd-veritysetup-generator reads them, which sets up the images they name. */
        r = systemd_cmdline_values(cmdline, keys, &values);
        if (r < 0)
                return r;
        for (char **v = values; v && *v; v++) {
                if (config_normalize_root_hash(*v) < 0 || strv_contains(l, *v))
                        continue;
                if (strv_extend(&l, *v) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

int config_normalize_fsverity_digest(char *s) {
        static const struct {
                const char *prefix;
                size_t hex;
        } algorithms[] = {
                { "sha256:", 64 },
                { "sha512:", 128 },
        };

        assert(s);

        for (size_t i = 0; i < ELEMENTSOF(algorithms); i++) {
                size_t p = strlen(algorithms[i].prefix);

                if (strncasecmp(s, algorithms[i].prefix, p) != 0)
                        continue;
                if (strlen(s + p) != algorithms[i].hex || !hex_lower(s + p, algorithms[i].hex))
                        return -EINVAL;
                memcpy(s, algorithms[i].prefix, p);
                return 0;
        }
        return -EINVAL;
}

static int check_root_hash(ParseState *s, const char *key, char *word) {
        if (config_normalize_root_hash(word) < 0)
                return parse_error(s, -EINVAL,
                                   "%s=%s is not a dm-verity root hash (32 to 128 hex digits, as "
                                   "veritysetup prints it)",
                                   key, word);
        return 0;
}

static int check_fsverity_digest(ParseState *s, const char *key, char *word) {
        if (config_normalize_fsverity_digest(word) < 0)
                return parse_error(s, -EINVAL,
                                   "%s=%s is not an fs-verity digest (sha256: and 64 hex digits, or "
                                   "sha512: and 128, as fsverity measure prints it)",
                                   key, word);
        return 0;
}

static int parse_root_hash(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        if (reset_setting(s, value, ROOT_FIELD_ROOT_HASH)) {
                s->root->root_hashes = strv_free(s->root->root_hashes);
                return 0;
        }
        s->root->set |= ROOT_FIELD_ROOT_HASH;
        return config_parse_list(s, key, value, &s->root->root_hashes, check_root_hash);
}

static int parse_fsverity_digest(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        if (reset_setting(s, value, ROOT_FIELD_FSVERITY_DIGEST)) {
                s->root->fsverity_digests = strv_free(s->root->fsverity_digests);
                return 0;
        }
        s->root->set |= ROOT_FIELD_FSVERITY_DIGEST;
        return config_parse_list(s, key, value, &s->root->fsverity_digests, check_fsverity_digest);
}

static int parse_require_ima(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);
        int r;

        if (reset_setting(s, value, ROOT_FIELD_REQUIRE_IMA)) {
                s->root->require_ima = false;
                return 0;
        }
        r = parse_boolean(value);
        if (r < 0)
                return parse_error(s, -EINVAL, "%s=%s is not a boolean (yes/no, true/false, on/off, 1/0)",
                                   key, value);
        s->root->require_ima = r;
        s->root->set |= ROOT_FIELD_REQUIRE_IMA;
        return 0;
}

/* The signer rule an assignment goes to: the root's in [Trust] and [Root], the source's in [Source]. */
static SignerRule *signer_rule(ParseState *s, RootField field, bool reset) {
        if (s->root) {
                if (reset)
                        s->root->set &= ~field;
                else
                        s->root->set |= field;
                return &s->root->signer;
        }
        assert(s->layer);
        return &s->config->source_signers[s->layer - s->config->policy.sources];
}

static int signer_where(ParseState *s, char **where) {
        free(*where);
        *where = NULL;
        if (asprintf(where, "%s:%u", s->parser.filename ?: "?", s->parser.line) < 0)
                return parse_error(s, -ENOMEM, "out of memory");
        return 0;
}

/* RequireSignature=: a module loads only with a signature appended (docs/guard.md). */
static int parse_require_signature(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);
        SignerRule *rule = signer_rule(s, ROOT_FIELD_REQUIRE_SIGNATURE, value[0] == '\0');
        int r;

        if (value[0] == '\0') {
                rule->require = false;
                return 0;
        }
        r = parse_boolean(value);
        if (r < 0)
                return parse_error(s, -EINVAL, "%s=%s is not a boolean (yes/no, true/false, on/off, 1/0)",
                                   key, value);
        rule->require = r;
        return signer_where(s, &rule->require_where);
}

/* AllowSigner=: one key id or signer name per assignment, since a name has spaces; the list grows. */
static int parse_allow_signer(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);
        SignerRule *rule = signer_rule(s, ROOT_FIELD_ALLOW_SIGNER, value[0] == '\0');
        char *entry;
        int r;

        if (value[0] == '\0') {
                rule->allow = strv_free(rule->allow);
                return 0;
        }
        if (strv_length(rule->allow) >= CONFIG_LIST_MAX)
                return parse_error(s, -E2BIG, "%s= has more than %d entries", key, CONFIG_LIST_MAX);
        r = signer_allow_entry(value, &entry);
        if (r == -ENOMEM)
                return parse_error(s, r, "out of memory");
        if (r < 0)
                return parse_error(s, r, "%s=%s is neither a key id nor a signer's name", key, value);
        if (strv_contains(rule->allow, entry)) {
                free(entry);
                return signer_where(s, &rule->allow_where);
        }
        if (strv_consume(&rule->allow, entry) < 0)
                return parse_error(s, -ENOMEM, "out of memory");
        return signer_where(s, &rule->allow_where);
}

/* [Guard] Mode=: the kernel's own check (docs/guard.md); empty: the default. */
static int parse_guard_mode(ConfParser *parser, const char *key, const char *value) {
        ParseState *s = parse_state(parser);

        if (value[0] == '\0') {
                s->config->guard_mode = GUARD_MODE_DEFAULT;
                return 0;
        }
        if (guard_mode_from_string(value, &s->config->guard_mode) < 0)
                return parse_error(s, -EINVAL, "%s=%s is not a guard mode (off, permissive, enforce)", key,
                                   value);
        return 0;
}

/* The settings, by section: the reader (conf-parser.c) knows the sections from here. */
static const ConfSetting settings[] = {
        { "Load",       "Workers",                   parse_workers                   },
        { "Load",       "LoadAlone",                 parse_load_alone                },
        { "Manager",    "IdleExitSec",               parse_idle_exit                 },
        { "Manager",    "ReadGroup",                 parse_read_group                },
        { "Manager",    "MaxConnections",            parse_connections_max           },
        { "Manager",    "MaxConnectionsPerUser",     parse_connections_per_user_max  },
        { "Manager",    "IdleConnectionSec",         parse_idle_connection           },
        { "Trust",      "TrustedRoot",               parse_trusted_root              },
        { "Trust",      "RequireReadOnlySuperblock", parse_require_superblock_ro     },
        { "Trust",      "Evidence",                  parse_evidence                  },
        { "Trust",      "Manifest",                  parse_manifest                  },
        { "Trust",      "RootHash",                  parse_root_hash                 },
        { "Trust",      "FsVerityDigest",            parse_fsverity_digest           },
        { "Trust",      "RequireIMASignature",       parse_require_ima               },
        { "Trust",      "RequireSignature",          parse_require_signature         },
        { "Trust",      "AllowSigner",               parse_allow_signer              },
        { "Root",       "Path",                      parse_path, CONF_SETTING_REQUIRED   },
        { "Root",       "Evidence",                  parse_evidence                  },
        { "Root",       "Manifest",                  parse_manifest                  },
        { "Root",       "RootHash",                  parse_root_hash                 },
        { "Root",       "FsVerityDigest",            parse_fsverity_digest           },
        { "Root",       "RequireIMASignature",       parse_require_ima               },
        { "Root",       "RequireSignature",          parse_require_signature         },
        { "Root",       "AllowSigner",               parse_allow_signer              },
        { "Policy",     "Mode",                      config_parse_mode               },
        { "Policy",     "Default",                   config_parse_default            },
        { "Policy",     "Allow",                     config_parse_allow              },
        { "Policy",     "Deny",                      config_parse_deny               },
        { "Policy",     "DenyRequest",               config_parse_deny_request       },
        { "Policy",     "RequestParameters",         config_parse_request_parameters },
        { "Source",     "Name",                      config_parse_source_name,
                                                     CONF_SETTING_REQUIRED | CONF_SETTING_FIRST },
        { "Source",     "Default",                   config_parse_default            },
        { "Source",     "Allow",                     config_parse_allow              },
        { "Source",     "Deny",                      config_parse_deny               },
        { "Source",     "DenyRequest",               config_parse_deny_request       },
        { "Source",     "RequireSignature",          parse_require_signature         },
        { "Source",     "AllowSigner",               parse_allow_signer              },
        { "Parameters", "Module",                    config_parse_parameters_module,
                                                     CONF_SETTING_REQUIRED | CONF_SETTING_FIRST },
        { "Parameters", "Allow",                     config_parse_parameters_allow   },
        { "Guard",      "Mode",                      parse_guard_mode                },
};

static int start_root(ParseState *s) {
        Config *c = s->config;
        RootConfig *a;

        if (c->n_roots >= CONFIG_ROOTS_MAX)
                return parse_error(s, -EINVAL, "more than %d [Root] sections", CONFIG_ROOTS_MAX);
        a = reallocarray(c->roots, c->n_roots + 1, sizeof(RootConfig));
        if (!a)
                return parse_error(s, -ENOMEM, "out of memory");
        c->roots = a;
        s->root = &a[c->n_roots++];
        *s->root = (RootConfig) { .line = s->parser.line, .evidence = EVIDENCE_DEFAULT };
        return 0;
}

/* What the keys of the new section apply to; [Source] and [Parameters] learn it from their first. */
static int start_section(ConfParser *parser) {
        ParseState *s = parse_state(parser);
        const char *section = parser->section;

        s->root = NULL;
        s->layer = NULL;
        s->parameters = NULL;
        if (strcmp(section, "Root") == 0)
                return start_root(s);
        if (strcmp(section, "Trust") == 0)
                s->root = &s->config->trust;
        if (strcmp(section, "Policy") == 0)
                s->layer = &s->config->policy.global;
        if (strcmp(section, "Parameters") == 0)
                return config_start_parameters(s);
        return 0;
}

int config_parse_list(ParseState *s, const char *key, const char *value, char ***list, WordCheck check) {
        int r;

        assert(s);
        assert(key);
        assert(value);
        assert(list);

        if (value[0] == '\0') {
                *list = strv_free(*list);
                return 0;
        }

        for (const char *p = value;;) {
                _cleanup_free_ char *word = NULL;

                if (conf_next_word(&p, &word) < 0)
                        return parse_error(s, -ENOMEM, "out of memory");
                if (!word)
                        return 0;
                r = check(s, key, word);
                if (r < 0)
                        return r;
                if (strv_contains(*list, word))
                        continue;
                if (strv_length(*list) >= CONFIG_LIST_MAX)
                        return parse_error(s, -EINVAL, "%s= has more than %d entries", key, CONFIG_LIST_MAX);
                if (strv_consume(list, TAKE_PTR(word)) < 0)
                        return parse_error(s, -ENOMEM, "out of memory");
        }
}

static ParseState parse_state_new(Config *c, const char *filename, char **reterr_message) {
        return (ParseState) {
                .parser = {
                        .settings = settings,
                        .n_settings = ELEMENTSOF(settings),
                        .start_section = start_section,
                        .filename = filename,
                        .line_max = CONFIG_LINE_MAX,
                        .reterr_message = reterr_message,
                },
                .config = c,
        };
}

int config_parse_file(Config *c, FILE *f, const char *filename, char **reterr_message) {
        ParseState s = parse_state_new(c, filename, reterr_message);

        assert(c);
        assert(f);
        assert(filename);

        return conf_parse_file(&s.parser, f, CONFIG_FILE_MAX);
}

/* Settings can turn trust checks off: only root (or the caller, for tests) may write them. */
static int check_owner_and_mode(ParseState *s, FILE *f) {
        struct stat st;

        if (fstat(fileno(f), &st) < 0)
                return parse_error(s, negative_errno(), "failed to stat: %m");
        if (st.st_uid != 0 && st.st_uid != geteuid())
                return parse_error(s, -EPERM, "refusing a file owned by uid %u: it must be owned by root",
                                   (unsigned) st.st_uid);
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return parse_error(s, -EPERM, "refusing a file writable by group or others (mode %04o)",
                                   (unsigned) (st.st_mode & 07777));
        return 0;
}

static int load_file(Config *c, const char *path, char **reterr_message) {
        ParseState s = parse_state_new(c, path, reterr_message);
        _cleanup_(fclosep) FILE *f = NULL;
        int r;

        f = fopen(path, "re");
        if (!f && errno == ENOENT)
                return 0;       /* removed since it was listed */
        if (!f)
                return parse_error(&s, negative_errno(), "failed to open: %m");
        r = check_owner_and_mode(&s, f);
        if (r < 0)
                return r;
        return conf_parse_file(&s.parser, f, CONFIG_FILE_MAX);
}

int config_load(Config *c, const char *root, char **reterr_message) {
        _cleanup_(config_done) Config t = {};
        _cleanup_strv_free_ char **files = NULL;
        int r;

        assert(c);

        config_init_defaults(&t);

        r = conf_files_list_main(config_dirs, root, "modgate.conf", &files);
        if (r < 0) {
                ParseState s = parse_state_new(NULL, "modgate.conf", reterr_message);

                return parse_error(&s, r, "failed to list configuration files: %s", strerror(-r));
        }

        for (char **p = files; p && *p; p++) {
                r = load_file(&t, *p, reterr_message);
                if (r < 0)
                        return r;
        }

        config_done(c);
        *c = t;
        t = (Config) {};
        return 0;
}

int config_ignored_files(const char *root, char ***ret) {
        assert(ret);

        return conf_files_list_main(config_ignored_dirs, root, "modgate.conf", ret);
}
