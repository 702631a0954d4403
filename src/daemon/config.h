/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include "guard-util.h"
#include "parse-util.h"
#include "policy.h"
#include "signer.h"

/* The settings of a trusted root: which kinds of evidence vouch for its module files, and what that
 * evidence is checked against. [Trust] holds every root's; a [Root] section those of one root, and
 * what it leaves unset is [Trust]'s. */
typedef enum RootField {
        ROOT_FIELD_EVIDENCE = 1u << 0,
        ROOT_FIELD_ROOT_HASH = 1u << 1,
        ROOT_FIELD_FSVERITY_DIGEST = 1u << 2,
        ROOT_FIELD_MANIFEST = 1u << 3,
        ROOT_FIELD_REQUIRE_IMA = 1u << 4,
        ROOT_FIELD_REQUIRE_SIGNATURE = 1u << 5,
        ROOT_FIELD_ALLOW_SIGNER = 1u << 6,
} RootField;

typedef struct RootConfig {
        char *path;                     /* [Root] Path=; NULL in [Trust] */
        unsigned line;                  /* of the [Root] header, for the message when Path= is missing */
        unsigned set;                   /* RootField()s this section sets */
        unsigned evidence;              /* Evidence=, EVIDENCE_MASK()s (trust.h) */
        char **root_hashes;             /* RootHash=, dm-verity root hashes, lowercase hex */
        char **fsverity_digests;        /* FsVerityDigest=, "sha256:" or "sha512:" and lowercase hex */
        char *manifest;                 /* Manifest=; NULL: the first root's default, none for others */
        bool require_ima;               /* RequireIMASignature= */
        SignerRule signer;              /* RequireSignature=, AllowSigner= */
} RootConfig;

void root_config_done(RootConfig *r);
void root_config_array_free(RootConfig *a, size_t n);

/* The daemon's settings, from modgate.conf and the drop-ins in modgate.conf.d/ (config_load()).
 * conf/modgate.conf documents each one for administrators. */
typedef struct Config {
        unsigned workers;               /* [Load] Workers=, 1..CONFIG_WORKERS_MAX */
        char **load_alone;              /* [Load] LoadAlone=, canonical module names (with '_') */
        uint64_t idle_exit_usec;        /* [Manager] IdleExitSec=, 0 means never */
        bool have_read_group;           /* [Manager] ReadGroup=: its members may use Explain */
        gid_t read_group;
        unsigned connections_max;       /* [Manager] MaxConnections=, 1..CONFIG_CONNECTIONS_LIMIT */
        unsigned connections_per_user_max; /* [Manager] MaxConnectionsPerUser=, the same range */
        uint64_t idle_connection_usec;  /* [Manager] IdleConnectionSec=, 0 means never */
        char **trusted_roots;           /* [Trust] TrustedRoot=, absolute paths; NULL: the default */
        bool require_superblock_ro;     /* [Trust] RequireReadOnlySuperblock=; no adds "ownership" */
        RootConfig trust;               /* [Trust] Evidence=, RootHash=, ...: every root's settings */
        RootConfig *roots;              /* [Root] sections, as written */
        size_t n_roots;
        Policy policy;                  /* [Policy], [Source] and [Parameters] */
        SignerRule source_signers[_SOURCE_MAX]; /* [Source] RequireSignature=, AllowSigner= */
        GuardMode guard_mode;           /* [Guard] Mode=; modgate.guard= of the kernel command line wins */
} Config;

/* /usr/lib/modules/$(uname -r), the trusted root when TrustedRoot= is empty. */
int config_default_trusted_root(char **ret);

/* The default manifest of the first root: MANIFEST_DIR/$(uname -r).sha256. */
int config_default_manifest_path(char **ret);

/* The trusted roots, each with its settings in effect: TrustedRoot= in order (the default root when
 * it is empty), then the paths of [Root] sections that are not among them. A [Root] for a path
 * configures that root, a later section over an earlier one; what none sets is [Trust]'s, but
 * [Trust] Manifest= is the first root's only (another root has a manifest when its [Root] names
 * one). Evidence includes "ownership" when RequireReadOnlySuperblock=no, for roots whose [Root]
 * does not set Evidence=. The first root's manifest defaults to config_default_manifest_path().
 * Returns the number of roots (at least 1), or a negative errno. */
int config_trusted_roots(const Config *c, RootConfig **ret);

/* Parses a list of kinds of evidence (Evidence=, --evidence=) into EVIDENCE_MASK()s; -EINVAL. */
int config_parse_evidence(const char *value, unsigned *ret);

/* Whether a and b trust the same: TrustedRoot=, RequireReadOnlySuperblock=, [Trust], [Root] and the
 * signer rules of [Source]. */
bool config_trust_equal(const Config *a, const Config *b);

/* What the roots accept unless a [Root] says otherwise: Evidence=, and "ownership" when
 * RequireReadOnlySuperblock=no. */
unsigned config_evidence(const Config *c);

/* Checks and normalizes (to lowercase) a dm-verity root hash: 32 to 128 hex digits, an even number. */
int config_normalize_root_hash(char *s);
/* The dm-verity root hashes a kernel command line names (systemd's roothash= and usrhash=, split by
 * systemd's rules: kernel-cmdline.h), each once, normalized; malformed ones are left out. Returns 0
 * or -ENOMEM. */
int config_cmdline_root_hashes(const char *cmdline, char ***ret);

/* The same for an fs-verity digest as `fsverity measure` prints it: "sha256:" and 64 hex digits, or
 * "sha512:" and 128. */
int config_normalize_fsverity_digest(char *s);

/* Checks a module name glob (fnmatch(3): letters, digits, '_' and '-', and * ? [ ] !) and makes it
 * canonical: '-' becomes '_' outside bracket expressions, where it may be a range. -EINVAL. */
int config_normalize_module_glob(char *s);

/* Workers= unset: one per online CPU, within these. A module's init mostly waits (for its device, its
 * firmware, the modules it needs) rather than computes, so a machine of few CPUs still gets enough
 * to follow a boot list's longest chain (bench scenario 4); beyond the upper bound a boot gains
 * nothing measurable, and each worker is a thread. */
#define CONFIG_WORKERS_AUTO_MIN 8u
#define CONFIG_WORKERS_AUTO_MAX 16u
#define CONFIG_WORKERS_DEFAULT config_workers_default(sysconf(_SC_NPROCESSORS_ONLN))
/* Pure: Workers= for a machine with this many online CPUs (sysconf()'s answer; < 1 when unknown). */
unsigned config_workers_default(long online_cpus);
#define CONFIG_WORKERS_MAX 64u
#define CONFIG_IDLE_EXIT_USEC_DEFAULT (30 * USEC_PER_SEC)
/* Connections in total: sd-varlink's own default. At boot every client is root (udev's workers and the
 * kernel's helpers, at most a few hundred at once), and root is held to this only. Another uid is a
 * reader (ReadGroup=), or a process whose call is refused: modgatectl holds one connection per
 * command and one per monitor, so 16 is a terminal's worth of them at once, and what 16 connections
 * can make the daemon hold (CONNECTION_INPUT_MAX each, READER_PENDING_PER_UID calls) is small. */
#define CONFIG_CONNECTIONS_MAX_DEFAULT 4096u
#define CONFIG_CONNECTIONS_PER_USER_MAX_DEFAULT 16u
#define CONFIG_CONNECTIONS_LIMIT 65536u
/* Far longer than any client of ours is silent between connecting and calling, or between calls. */
#define CONFIG_IDLE_CONNECTION_USEC_DEFAULT (60 * USEC_PER_SEC)

/* Caps, each with its own error message. */
#define CONFIG_LINE_MAX 198             /* bytes in a line, without its newline: libinih's limit once,
                                         * kept so that every version reads the same files; a list is
                                         * split over several assignments */
#define CONFIG_FILE_MAX (1024 * 1024)   /* bytes in a file */
#define CONFIG_LIST_MAX 1024            /* entries in a list setting */
#define CONFIG_ROOTS_MAX 64             /* [Root] sections */
#define CONFIG_PARAMETERS_MAX 256       /* [Parameters] sections. A [Source] section adds no storage
                                         * of its own: its lists have CONFIG_LIST_MAX. */

/* Where modgate.conf and modgate.conf.d/ are looked for, highest priority first (NULL-terminated):
 * /etc and /usr only, never /run. */
extern const char *const config_dirs[];

/* Where a configuration was looked for once and is not any more, because what can write there need
 * not be able to load modules: /run/modgate (NULL-terminated). */
extern const char *const config_ignored_dirs[];

/* modgate.conf and the drop-ins in modgate.conf.d/ that config_ignored_dirs hold below root, which
 * config_load() does not read: for the record that says so. Returns 0, or a negative errno. */
int config_ignored_files(const char *root, char ***ret);

/* Fills c with the defaults; c must not hold allocations yet. */
void config_init_defaults(Config *c);
void config_done(Config *c);

/* Applies one file to c, read by conf_parse_buffer() (conf-parser.h) with the table of settings in
 * config.c. The syntax is that of systemd unit files, without line continuation or quoting:
 * [Section] headers, Key=Value (or Key:Value) assignments, comment lines starting with '#' or ';',
 * blank lines; a ';' after whitespace starts a comment in a value too.
 * Whitespace around keys and values, and the indentation of a line, is ignored; CRLF line ends and a
 * UTF-8 byte order mark are accepted. A line has at most CONFIG_LINE_MAX bytes. A later assignment
 * overrides an earlier one; list settings accumulate, and an empty assignment empties the list (and
 * sets any other setting back to its default). Each [Root] header starts the settings of one more
 * trusted root, which must have a Path=. A [Source] section must begin with Name=, which says whose
 * layer of the policy it adds to; a [Parameters] section with Module=, and is a rule of its own.
 *
 * The first error is the one returned, and none is skipped: an unknown section or key is an error,
 * so that a typo cannot silently leave a security setting at a weaker value. Returns 0, or:
 *   -EBADMSG  a line that is not [Section], Key=Value, a comment or blank; longer than
 *             CONFIG_LINE_MAX; NUL or other control characters
 *   -EINVAL   an unknown section or key, or a value that is invalid or out of range
 *   -EFBIG    the file is larger than CONFIG_FILE_MAX
 *   -ENOMEM, or the error reading f.
 * On failure c may be partly updated (discard it), and *reterr_message (when not NULL) is set to a
 * message for the administrator, such as "modgate.conf:7: Workers=0 is out of range 1..64"; it is
 * NULL only when there was no memory for it. The caller frees it. */
int config_parse_file(Config *c, FILE *f, const char *filename, char **reterr_message);

/* Reads the configuration below root (NULL or "/" for the running system): modgate.conf and its
 * drop-ins from config_dirs, with systemd's precedence (see conf-files.h). A file must be owned by
 * root (or by the caller) and not writable by group or others, or it is refused with -EPERM. On
 * success c is replaced; on failure c is left as it was, and *reterr_message is set as above. */
int config_load(Config *c, const char *root, char **reterr_message);
