/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>

#include "config.h"
#include "fileio.h"
#include "policy.h"
#include "request.h"
#include "strv.h"
#include "tests-tmp.h"
#include "trust.h"

static int parse_n(Config *c, const char *text, size_t n, char **ret_message) {
        FILE *f = fmemopen((void *) text, n, "r");
        int r;

        check(f);
        r = config_parse_file(c, f, "modgate.conf", ret_message);
        fclose(f);
        return r;
}

/* Parses text over the defaults and expects it to be accepted. */
static void parse_ok(Config *c, const char *text) {
        _cleanup_free_ char *message = NULL;
        int r;

        config_init_defaults(c);
        r = parse_n(c, text, strlen(text), &message);
        if (r < 0)
                fprintf(stderr, "unexpected error %d: %s\n", r, message);
        check(r == 0);
        check(!message);
}

/* Parses n bytes and expects them to be refused with error and exactly this message. */
static void check_error_n(const char *text, size_t n, int error, const char *message) {
        _cleanup_(config_done) Config c = {};
        _cleanup_free_ char *got = NULL;
        int r;

        config_init_defaults(&c);
        r = parse_n(&c, text, n, &got);
        if (r != error)
                fprintf(stderr, "expected %d, got %d (%s) for: %s\n", error, r, got, text);
        check(r == error);
        check_streq(got, message);
}

static void check_error(const char *text, int error, const char *message) {
        check_error_n(text, strlen(text), error, message);
}

static void check_strv(char **l, const char *const *want, size_t n) {
        check(strv_length(l) == n);
        for (size_t i = 0; i < n; i++)
                check_streq(l[i], want[i]);
}

TEST(defaults) {
        _cleanup_(config_done) Config c = {};

        config_init_defaults(&c);
        check(c.workers == config_workers_default(sysconf(_SC_NPROCESSORS_ONLN)));
        check(c.workers >= 8 && c.workers <= 16);
        check(!c.load_alone);
        check(c.idle_exit_usec == 30 * USEC_PER_SEC);
        check(!c.trusted_roots);
        check(c.require_superblock_ro);

        /* An empty file and a file of comments change nothing. */
        parse_ok(&c, "");
        check(c.workers == CONFIG_WORKERS_DEFAULT && c.idle_exit_usec == 30 * USEC_PER_SEC &&
              c.require_superblock_ro);
        config_done(&c);
        parse_ok(&c, "# nothing\n; here\n\n[Load]\n[Manager]\n[Trust]\n");
        check(c.workers == CONFIG_WORKERS_DEFAULT && !c.load_alone && !c.trusted_roots);
}

TEST(workers_default) {
        /* One per online CPU, at least 8 and at most 16; unknown counts as few. */
        check(config_workers_default(-1) == 8);
        check(config_workers_default(0) == 8);
        check(config_workers_default(1) == 8);
        check(config_workers_default(2) == 8);
        check(config_workers_default(8) == 8);
        check(config_workers_default(12) == 12);
        check(config_workers_default(16) == 16);
        check(config_workers_default(17) == 16);
        check(config_workers_default(1536) == 16);
}

TEST(every_setting) {
        _cleanup_(config_done) Config c = {};

        parse_ok(&c,
                 "[Load]\n"
                 "Workers=16\n"
                 "LoadAlone=nvidia snd-hda-intel\n"
                 "[Manager]\n"
                 "IdleExitSec=5min\n"
                 "[Trust]\n"
                 "TrustedRoot=/usr/lib/modules/6.12.0 /opt/modules\n"
                 "RequireReadOnlySuperblock=no\n");
        check(c.workers == 16);
        check_strv(c.load_alone, (const char *const[]) { "nvidia", "snd_hda_intel" }, 2);
        check(c.idle_exit_usec == 5 * USEC_PER_MINUTE);
        check_strv(c.trusted_roots, (const char *const[]) { "/usr/lib/modules/6.12.0", "/opt/modules" }, 2);
        check(!c.require_superblock_ro);
}

TEST(later_assignment_wins) {
        _cleanup_(config_done) Config c = {};

        parse_ok(&c,
                 "[Load]\nWorkers=2\n[Trust]\nRequireReadOnlySuperblock=no\n"
                 "[Load]\nWorkers=8\n[Trust]\nRequireReadOnlySuperblock=yes\n"
                 "[Manager]\nIdleExitSec=1s\nIdleExitSec=2s\n");
        check(c.workers == 8);
        check(c.require_superblock_ro);
        check(c.idle_exit_usec == 2 * USEC_PER_SEC);

        /* Across files, as config_load() applies them: the second call sees the first's result. */
        check(parse_n(&c, "[Load]\nWorkers=3\n", 17, NULL) == 0);
        check(c.workers == 3);
        check(c.idle_exit_usec == 2 * USEC_PER_SEC);
}

TEST(empty_assignment_resets) {
        _cleanup_(config_done) Config c = {};

        parse_ok(&c,
                 "[Load]\nWorkers=9\nWorkers=\n"
                 "[Manager]\nIdleExitSec=1h\nIdleExitSec=\n"
                 "[Trust]\nRequireReadOnlySuperblock=off\nRequireReadOnlySuperblock=\n");
        check(c.workers == CONFIG_WORKERS_DEFAULT);
        check(c.idle_exit_usec == CONFIG_IDLE_EXIT_USEC_DEFAULT);
        check(c.require_superblock_ro);
}

TEST(lists_accumulate_and_reset) {
        _cleanup_(config_done) Config c = {};

        parse_ok(&c,
                 "[Load]\n"
                 "LoadAlone=a b\n"
                 "LoadAlone=c\n"
                 "[Trust]\n"
                 "TrustedRoot=/x\n"
                 "TrustedRoot=\n"
                 "TrustedRoot=/y\n"
                 "TrustedRoot=/z\n");
        check_strv(c.load_alone, (const char *const[]) { "a", "b", "c" }, 3);
        check_strv(c.trusted_roots, (const char *const[]) { "/y", "/z" }, 2);

        config_done(&c);
        parse_ok(&c, "[Load]\nLoadAlone=a\nLoadAlone=\n[Trust]\nTrustedRoot=/x\nTrustedRoot=\n");
        check(strv_length(c.load_alone) == 0);
        check(strv_length(c.trusted_roots) == 0);
}

TEST(module_names) {
        _cleanup_(config_done) Config c = {};

        /* Stored with '_', once each, whatever the spelling; tabs and runs of spaces separate. */
        parse_ok(&c, "[Load]\nLoadAlone=snd-hda-intel\tsnd_hda_intel   snd_hda-intel vport-vxlan\n");
        check_strv(c.load_alone, (const char *const[]) { "snd_hda_intel", "vport_vxlan" }, 2);
}

TEST(idle_exit) {
        static const struct {
                const char *value;
                uint64_t usec;
        } cases[] = {
                { "30s", 30 * USEC_PER_SEC },
                { "90", 90 * USEC_PER_SEC },
                { "5min", 5 * USEC_PER_MINUTE },
                { "1h 30min", USEC_PER_HOUR + 30 * USEC_PER_MINUTE },
                { "500ms", 500 * USEC_PER_MSEC },
                { "0", 0 },
                { "infinity", 0 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(config_done) Config c = {};
                _cleanup_free_ char *text = NULL;

                check(asprintf(&text, "[Manager]\nIdleExitSec=%s\n", cases[i].value) > 0);
                parse_ok(&c, text);
                check(c.idle_exit_usec == cases[i].usec);
        }
}

/* The connection caps: counts within 1..65536, an idle time span like IdleExitSec=. */
TEST(connections) {
        _cleanup_(config_done) Config c = {};

        parse_ok(&c, "[Manager]\nMaxConnections=100\nMaxConnectionsPerUser=10\nIdleConnectionSec=2min\n");
        check(c.connections_max == 100 && c.connections_per_user_max == 10);
        check(c.idle_connection_usec == 2 * USEC_PER_MINUTE);
        config_done(&c);
        parse_ok(&c, "[Manager]\nMaxConnections=65536\nMaxConnectionsPerUser=1\nIdleConnectionSec=infinity\n"
                     "MaxConnections=\n");
        check(c.connections_max == CONFIG_CONNECTIONS_MAX_DEFAULT && c.connections_per_user_max == 1);
        check(c.idle_connection_usec == 0);
        config_done(&c);
        parse_ok(&c, "[Manager]\nIdleConnectionSec=0\nIdleConnectionSec=\n");
        check(c.idle_connection_usec == CONFIG_IDLE_CONNECTION_USEC_DEFAULT);

        check_error("[Manager]\nMaxConnections=0\n", -EINVAL,
                    "modgate.conf:2: MaxConnections=0 is out of range 1..65536");
        check_error("[Manager]\nMaxConnectionsPerUser=65537\n", -EINVAL,
                    "modgate.conf:2: MaxConnectionsPerUser=65537 is out of range 1..65536");
        check_error("[Manager]\nMaxConnections=many\n", -EINVAL, "modgate.conf:2: MaxConnections=many is not a number");
        check_error("[Manager]\nIdleConnectionSec=soon\n", -EINVAL,
                    "modgate.conf:2: IdleConnectionSec=soon is not a time span (such as 30s, 5min, infinity)");
}

TEST(booleans) {
        static const char *const yes[] = { "yes", "true", "1", "on", "YES", "True" };
        static const char *const no[] = { "no", "false", "0", "off", "NO", "False" };

        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                _cleanup_(config_done) Config c = {};
                _cleanup_free_ char *a = NULL, *b = NULL;

                check(asprintf(&a, "[Trust]\nRequireReadOnlySuperblock=%s\n", no[i]) > 0);
                parse_ok(&c, a);
                check(!c.require_superblock_ro);
                check(asprintf(&b, "[Trust]\nRequireReadOnlySuperblock=%s\n", yes[i]) > 0);
                check(parse_n(&c, b, strlen(b), NULL) == 0);
                check(c.require_superblock_ro);
        }
}

TEST(tolerated_syntax) {
        static const char text[] =
                "\xef\xbb\xbf# a byte order mark, then comments\r\n"
                "   ; indented comment\r\n"
                "\t\r\n"
                "  [Load]  \r\n"
                "\tWorkers \t=\t 7 \r\n"
                "LoadAlone =  a  \r\n"
                "#Workers=1\r\n"
                "[Trust]\r\n"
                "TrustedRoot=/\r\n"
                "RequireReadOnlySuperblock=no";    /* no final newline */
        _cleanup_(config_done) Config c = {};

        parse_ok(&c, text);
        check(c.workers == 7);
        check_strv(c.load_alone, (const char *const[]) { "a" }, 1);
        check_strv(c.trusted_roots, (const char *const[]) { "/" }, 1);
        check(!c.require_superblock_ro);
}

TEST(value_errors) {
        check_error("# one\n# two\n# three\n\n[Load]\n# six\nWorkers=0\n", -EINVAL,
                    "modgate.conf:7: Workers=0 is out of range 1..64");
        check_error("[Load]\nWorkers=65\n", -EINVAL, "modgate.conf:2: Workers=65 is out of range 1..64");
        check_error("[Load]\nWorkers=99999999999999999999\n", -EINVAL,
                    "modgate.conf:2: Workers=99999999999999999999 is out of range 1..64");
        check_error("[Load]\nWorkers=four\n", -EINVAL, "modgate.conf:2: Workers=four is not a number");
        check_error("[Load]\nWorkers=-1\n", -EINVAL, "modgate.conf:2: Workers=-1 is not a number");
        /* Comments take a line of their own, as in systemd. */
        check_error("[Load]\nWorkers=4 # four\n", -EINVAL,
                    "modgate.conf:2: Workers=4 # four is not a number");
        check_error("[Load]\nLoadAlone=ok ../evil\n", -EINVAL,
                    "modgate.conf:2: LoadAlone=../evil is not a valid module name");
        check_error("[Load]\nLoadAlone=-r\n", -EINVAL,
                    "modgate.conf:2: LoadAlone=-r is not a valid module name");
        check_error("[Manager]\nIdleExitSec=5 parsecs\n", -EINVAL,
                    "modgate.conf:2: IdleExitSec=5 parsecs is not a time span "
                    "(such as 30s, 5min, infinity)");
        check_error("[Manager]\nIdleExitSec=99999999999999999999\n", -EINVAL,
                    "modgate.conf:2: IdleExitSec=99999999999999999999 is out of range");
        check_error("[Trust]\nTrustedRoot=usr/lib/modules\n", -EINVAL,
                    "modgate.conf:2: TrustedRoot=usr/lib/modules is not an absolute path");
        check_error("[Trust]\nTrustedRoot=/usr/lib/../../tmp\n", -EINVAL,
                    "modgate.conf:2: TrustedRoot=/usr/lib/../../tmp is not a normalized path "
                    "(it has '.', '..', '//' or a trailing '/')");
        check_error("[Trust]\nTrustedRoot=/usr//lib\n", -EINVAL,
                    "modgate.conf:2: TrustedRoot=/usr//lib is not a normalized path "
                    "(it has '.', '..', '//' or a trailing '/')");
        check_error("[Trust]\nTrustedRoot=/usr/lib/\n", -EINVAL,
                    "modgate.conf:2: TrustedRoot=/usr/lib/ is not a normalized path "
                    "(it has '.', '..', '//' or a trailing '/')");
        check_error("[Trust]\nRequireReadOnlySuperblock=maybe\n", -EINVAL,
                    "modgate.conf:2: RequireReadOnlySuperblock=maybe is not a boolean "
                    "(yes/no, true/false, on/off, 1/0)");
}

TEST(evidence) {
        _cleanup_(config_done) Config c = {};
        unsigned mask;

        /* One setting: the last assignment wins, empty is the default. */
        parse_ok(&c, "[Trust]\nEvidence=manifest\nEvidence=  read-only   ownership \n");
        check(c.trust.evidence == (EVIDENCE_MASK(EVIDENCE_READ_ONLY) | EVIDENCE_MASK(EVIDENCE_OWNERSHIP)));
        config_done(&c);
        parse_ok(&c, "[Trust]\nEvidence=manifest\nEvidence=\n");
        check(c.trust.evidence == EVIDENCE_DEFAULT);
        config_done(&c);
        /* RequireReadOnlySuperblock=no adds ownership to whatever Evidence= says. */
        parse_ok(&c, "[Trust]\nEvidence=manifest\nRequireReadOnlySuperblock=no\n");
        check(c.trust.evidence == EVIDENCE_MASK(EVIDENCE_MANIFEST));
        check(config_evidence(&c) == (EVIDENCE_MASK(EVIDENCE_MANIFEST) | EVIDENCE_MASK(EVIDENCE_OWNERSHIP)));
        config_done(&c);
        parse_ok(&c, "[Trust]\nManifest=/srv/m.sha256\n");
        check_streq(c.trust.manifest, "/srv/m.sha256");
        config_done(&c);
        parse_ok(&c, "[Trust]\nManifest=/srv/m.sha256\nManifest=\n");
        check(!c.trust.manifest);

        check_error("[Trust]\nEvidence=read-only tpm\n", -EINVAL,
                    "modgate.conf:2: Evidence=read-only tpm: the kinds of evidence are verity, read-only, manifest "
                    "and ownership");
        check_error("[Trust]\nEvidence=readonly\n", -EINVAL,
                    "modgate.conf:2: Evidence=readonly: the kinds of evidence are verity, read-only, manifest and "
                    "ownership");
        check_error("[Trust]\nManifest=m.sha256\n", -EINVAL, "modgate.conf:2: Manifest=m.sha256 is not an "
                    "absolute path");
        check_error("[Trust]\nManifest=/var/../m\n", -EINVAL, "modgate.conf:2: Manifest=/var/../m is not a "
                    "normalized path (it has '.', '..', '//' or a trailing '/')");

        check(config_parse_evidence("verity read-only manifest", &mask) == 0 && mask == EVIDENCE_DEFAULT);
        check(config_parse_evidence("", &mask) == 0 && mask == 0);
        check(config_parse_evidence("ownershipownership", &mask) == -EINVAL);
}

#define HASH_A "4b3c" "0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"
#define HASH_B "ffff" "0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"
#define DIGEST_A "sha256:" HASH_A

TEST(verity_allowlists) {
        _cleanup_(config_done) Config c = {};
        _cleanup_strv_free_ char **l = NULL;
        char upper[] = "4B3C0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789AB";

        /* Lists that accumulate; hex in any case, kept in lowercase, each once. */
        parse_ok(&c, "[Trust]\nRootHash=" HASH_A "\nRootHash=" HASH_B " " HASH_A "\nFsVerityDigest=SHA256:"
                     "4B3C0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab\nRequireIMASignature=yes\n");
        check_strv(c.trust.root_hashes, (const char *const[]) { HASH_A, HASH_B }, 2);
        check_strv(c.trust.fsverity_digests, (const char *const[]) { DIGEST_A }, 1);
        check(c.trust.require_ima);
        config_done(&c);
        parse_ok(&c, "[Trust]\nRootHash=" HASH_A "\nRootHash=\n");
        check(strv_length(c.trust.root_hashes) == 0);

        check(config_normalize_root_hash(upper) == 0);
        check_streq(upper, HASH_A);

        check_error("[Trust]\nRootHash=xyz\n", -EINVAL, "modgate.conf:2: RootHash=xyz is not a dm-verity root hash "
                    "(32 to 128 hex digits, as veritysetup prints it)");
        check_error("[Trust]\nRootHash=" HASH_A "0\n", -EINVAL, "modgate.conf:2: RootHash=" HASH_A "0 is not a "
                    "dm-verity root hash (32 to 128 hex digits, as veritysetup prints it)");
        check_error("[Trust]\nFsVerityDigest=" HASH_A "\n", -EINVAL, "modgate.conf:2: FsVerityDigest=" HASH_A
                    " is not an fs-verity digest (sha256: and 64 hex digits, or sha512: and 128, as fsverity "
                    "measure prints it)");
        check_error("[Trust]\nFsVerityDigest=sha512:" HASH_A "\n", -EINVAL, "modgate.conf:2: FsVerityDigest=sha512:"
                    HASH_A " is not an fs-verity digest (sha256: and 64 hex digits, or sha512: and 128, as "
                    "fsverity measure prints it)");
        check_error("[Trust]\nRequireIMASignature=sometimes\n", -EINVAL, "modgate.conf:2: "
                    "RequireIMASignature=sometimes is not a boolean (yes/no, true/false, on/off, 1/0)");

        /* The kernel command line: roothash= and usrhash=, each once, malformed ones left out. */
        check(config_cmdline_root_hashes("BOOT_IMAGE=/vmlinuz roothash=" HASH_A " quiet usrhash=" HASH_B
                                         " roothash=" HASH_A " usrhash=nothex roothash= root=/dev/vda\n", &l) == 0);
        check_strv(l, (const char *const[]) { HASH_A, HASH_B }, 2);
        l = strv_free(l);
        check(config_cmdline_root_hashes("quiet", &l) == 0 && !l);
}

TEST(roots) {
        _cleanup_(config_done) Config c = {};
        RootConfig *r = NULL;
        int n;

        /* Without TrustedRoot=, the default root comes first; a [Root] adds another, inheriting what it
         * leaves out from [Trust], wherever [Trust] is. */
        parse_ok(&c, "[Root]\nPath=/run/extra\nEvidence=verity\nRootHash=" HASH_B "\n"
                     "[Trust]\nRootHash=" HASH_A "\nFsVerityDigest=" DIGEST_A "\nRequireIMASignature=yes\n");
        check(c.n_roots == 1);
        n = config_trusted_roots(&c, &r);
        check(n == 2);
        check(strncmp(r[0].path, "/usr/lib/modules/", 17) == 0);
        check(r[0].evidence == EVIDENCE_DEFAULT && r[0].require_ima);
        check_strv(r[0].root_hashes, (const char *const[]) { HASH_A }, 1);
        check(r[0].manifest && strncmp(r[0].manifest, "/var/lib/modgate/manifests/", 27) == 0);
        check_streq(r[1].path, "/run/extra");
        check(r[1].evidence == EVIDENCE_MASK(EVIDENCE_VERITY) && r[1].require_ima);
        check_strv(r[1].root_hashes, (const char *const[]) { HASH_B }, 1);
        check_strv(r[1].fsverity_digests, (const char *const[]) { DIGEST_A }, 1);
        check(!r[1].manifest);
        root_config_array_free(r, n);
        config_done(&c);

        /* A [Root] for a TrustedRoot= path configures that root, a later section over an earlier one;
         * an empty assignment gives the setting back to [Trust]. RequireReadOnlySuperblock=no adds
         * ownership to the roots that take [Trust]'s Evidence=. */
        parse_ok(&c, "[Trust]\nTrustedRoot=/a /b\nManifest=/m/a\nRequireReadOnlySuperblock=no\n"
                     "[Root]\nPath=/b\nEvidence=manifest\nManifest=/m/b\n"
                     "[Root]\nManifest=/m/b2\nPath=/b\nRequireIMASignature=yes\n"
                     "[Root]\nPath=/c\nEvidence=read-only\nEvidence=\n");
        n = config_trusted_roots(&c, &r);
        check(n == 3);
        check_streq(r[0].path, "/a");
        check_streq(r[0].manifest, "/m/a");
        check(r[0].evidence == (EVIDENCE_DEFAULT | EVIDENCE_MASK(EVIDENCE_OWNERSHIP)));
        check_streq(r[1].path, "/b");
        check_streq(r[1].manifest, "/m/b2");
        /* Its own Evidence= is what it accepts: the old switch widens only [Trust]'s. */
        check(r[1].evidence == EVIDENCE_MASK(EVIDENCE_MANIFEST));
        check(r[1].require_ima);
        check_streq(r[2].path, "/c");
        check(r[2].evidence == (EVIDENCE_DEFAULT | EVIDENCE_MASK(EVIDENCE_OWNERSHIP)));
        check(!r[2].require_ima);
        /* [Trust] Manifest= is the first root's: another root has one only when its [Root] names it. */
        check(!r[2].manifest);
        root_config_array_free(r, n);

        check_error("[Root]\nEvidence=verity\n[Load]\nWorkers=2\n", -EINVAL,
                    "modgate.conf:1: [Root] section has no Path=");
        check_error("[Load]\nWorkers=2\n\n[Root]\nEvidence=verity\n", -EINVAL,
                    "modgate.conf:4: [Root] section has no Path=");
        check_error("[Root]\nPath=\n", -EINVAL, "modgate.conf:2: Path= needs the trusted root's directory");
        check_error("[Root]\nPath=x\n", -EINVAL, "modgate.conf:2: Path=x is not an absolute path");
        check_error("[Root]\nPath=/x\nTrustedRoot=/y\n", -EINVAL,
                    "modgate.conf:3: TrustedRoot= belongs in section [Trust], not [Root]");
        check_error("[Trust]\nPath=/x\n", -EINVAL, "modgate.conf:2: Path= belongs in section [Root], not [Trust]");
}

TEST(guard_mode) {
        _cleanup_(config_done) Config a = {}, b = {}, c = {};

        parse_ok(&a, "[Guard]\nMode=enforce\n");
        check(a.guard_mode == GUARD_ENFORCE);
        parse_ok(&b, "[Guard]\nMode=off\nMode=\n");
        check(b.guard_mode == GUARD_PERMISSIVE);
        parse_ok(&c, "[Guard]\nMode=enforce\nMode=off\n");
        check(c.guard_mode == GUARD_OFF);
        check_error("[Guard]\nMode=Enforce\n", -EINVAL,
                    "modgate.conf:2: Mode=Enforce is not a guard mode (off, permissive, enforce)");
        check_error("[Guard]\nMode=strict\n", -EINVAL,
                    "modgate.conf:2: Mode=strict is not a guard mode (off, permissive, enforce)");
}

TEST(signer_rules) {
        _cleanup_(config_done) Config c = {};
        RootConfig *r = NULL;
        int n;

        /* [Trust] for every root, a [Root] over it; [Source] for one source; one signer per
         * AllowSigner= (names have spaces); an empty assignment empties or gives back to [Trust]. */
        parse_ok(&c, "[Trust]\nTrustedRoot=/a /b /c\nRequireSignature=yes\nAllowSigner=Debian Secure Boot CA\n"
                     "[Root]\nPath=/b\nRequireSignature=no\nAllowSigner=\n"
                     "[Root]\nPath=/c\nAllowSigner=DE:AD:BE:EF\nAllowSigner=deadbeef\n"
                     "[Source]\nName=udev\nAllowSigner=build key\n"
                     "[Source]\nName=kernel\nRequireSignature=yes\nRequireSignature=\n");
        n = config_trusted_roots(&c, &r);
        check(n == 3);
        check(r[0].signer.require);
        check_strv(r[0].signer.allow, (const char *const[]) { SIGNER_NAME_PREFIX "Debian Secure Boot CA" }, 1);
        check_streq(r[0].signer.require_where, "modgate.conf:3");
        check_streq(r[0].signer.allow_where, "modgate.conf:4");
        check(!r[1].signer.require);
        /* An empty assignment in a [Root] gives the setting back to [Trust], as for every setting. */
        check_strv(r[1].signer.allow, (const char *const[]) { SIGNER_NAME_PREFIX "Debian Secure Boot CA" }, 1);
        check(r[2].signer.require);             /* [Trust]'s: the section leaves it out */
        check_strv(r[2].signer.allow, (const char *const[]) { SIGNER_KEY_PREFIX "deadbeef" }, 1);
        check_streq(r[2].signer.allow_where, "modgate.conf:12");
        root_config_array_free(r, n);
        check_strv(c.source_signers[SOURCE_UDEV].allow, (const char *const[]) { SIGNER_NAME_PREFIX "build key" }, 1);
        check(!c.source_signers[SOURCE_UDEV].require);
        check(!signer_rule_active(&c.source_signers[SOURCE_KERNEL]));
        check(!signer_rule_active(&c.source_signers[SOURCE_ADMIN]));

        /* A reload says they wait for the next start: they are part of what the roots trust. */
        {
                _cleanup_(config_done) Config a = {}, b = {}, same = {};

                parse_ok(&a, "[Source]\nName=udev\nRequireSignature=yes\n");
                parse_ok(&same, "[Source]\nName=udev\nRequireSignature=yes\n");
                parse_ok(&b, "[Source]\nName=udev\nRequireSignature=no\n");
                check(config_trust_equal(&a, &same));
                check(!config_trust_equal(&a, &b));
                config_done(&b);
                parse_ok(&b, "[Root]\nPath=/x\nAllowSigner=build key\n");
                check(!config_trust_equal(&b, &same));
        }

        check_error("[Trust]\nRequireSignature=maybe\n", -EINVAL,
                    "modgate.conf:2: RequireSignature=maybe is not a boolean (yes/no, true/false, on/off, 1/0)");
        check_error("[Policy]\nRequireSignature=yes\n", -EINVAL,
                    "modgate.conf:2: RequireSignature= belongs in section [Trust], not [Policy]");
}

TEST(unknown_names) {
        check_error("[Laod]\nWorkers=4\n", -EINVAL,
                    "modgate.conf:1: unknown section [Laod]; "
                    "the sections are [Load], [Manager], [Trust], "
                    "[Root], [Policy], [Source], [Parameters] and [Guard]");
        check_error("[]\n", -EINVAL,
                    "modgate.conf:1: unknown section []; the sections are [Load], [Manager], [Trust], "
                    "[Root], [Policy], [Source], [Parameters] and [Guard]");
        check_error("[load]\n", -EINVAL, "modgate.conf:1: unknown section [load] (did you mean [Load]?)");
        check_error("[Load]\nWorker=4\n", -EINVAL, "modgate.conf:2: unknown key Worker= in section [Load]");
        check_error("[Trust]\nrequirereadonlysuperblock=no\n", -EINVAL,
                    "modgate.conf:2: unknown key requirereadonlysuperblock= in section [Trust] "
                    "(did you mean RequireReadOnlySuperblock=?)");
        check_error("[Manager]\nWorkers=4\n", -EINVAL,
                    "modgate.conf:2: Workers= belongs in section [Load], not [Manager]");
}

TEST(syntax_errors) {
        check_error("Workers=4\n", -EBADMSG,
                    "modgate.conf:1: Workers= comes before the first [Section] header");
        check_error("[Load]\nWorkers\n", -EBADMSG,
                    "modgate.conf:2: expected [Section], Key=Value or a comment");
        check_error("[Load]\n\xef\xbb\xbf\n", -EBADMSG, "modgate.conf:2: expected [Section], Key=Value or a comment");
        /* A second byte order mark on the first line is not skipped (libinih, once the reader, skipped
         * it and with it a header). */
        check_error("\xef\xbb\xbf\xef\xbb\xbf[Root]\n", -EBADMSG,
                    "modgate.conf:1: expected [Section], Key=Value or a comment");
        check_error("[Load]\n = 4\n", -EBADMSG, "modgate.conf:2: assignment without a key: =4");
        check_error("[Load\n", -EBADMSG, "modgate.conf:1: section header [Load is missing ']'");
        check_error("[Load] Workers=4\n", -EBADMSG,
                    "modgate.conf:1: unexpected text after ']' in section header [Load] Workers=4");
        check_error("[Load] # load\n", -EBADMSG,
                    "modgate.conf:1: unexpected text after ']' in section header [Load] # load");
        check_error("[Load];load\n", -EBADMSG,
                    "modgate.conf:1: unexpected text after ']' in section header [Load];load");
        check_error("[Load]\nWorkers=4\x01\n", -EBADMSG,
                    "modgate.conf:2: line contains the control character 0x01");
        check_error("[Load]\nWorkers=4\rWorkers=0\n", -EBADMSG,
                    "modgate.conf:2: line contains the control character 0x0d");
        check_error("[Load]\nWorkers=4\x7f\n", -EBADMSG,
                    "modgate.conf:2: line contains the control character 0x7f");
        check_error_n("[Load]\nWorkers=4\0\n", 18, -EBADMSG, "modgate.conf:2: line contains a NUL byte");
        /* The line number counts CRLF lines, and the message has no stray '\r'. */
        check_error("[Load]\r\nWorkers=0\r\n", -EINVAL, "modgate.conf:2: Workers=0 is out of range 1..64");
}

TEST(first_error_is_reported) {
        /* The first error in the file is the one reported (libinih, once the reader, reported a line it
         * could not parse only at the end, after the lines that followed). */
        check_error("[Load]\nWorkers\nWorkers=0\n", -EBADMSG,
                    "modgate.conf:2: expected [Section], Key=Value or a comment");
        check_error("[Load]\nWorkers\n[Laod]\n", -EBADMSG,
                    "modgate.conf:2: expected [Section], Key=Value or a comment");
        check_error("[Load]\nWorkers=0\nWorkers\n", -EINVAL, "modgate.conf:2: Workers=0 is out of range 1..64");
        check_error("[Root]\nWorkers\n", -EBADMSG, "modgate.conf:2: expected [Section], Key=Value or a comment");
        check_error("[Root]\n= x\n", -EBADMSG, "modgate.conf:2: assignment without a key: =x");
}

TEST(line_numbers) {
        /* Comments, blank lines and headers count; so does a last line without a newline. */
        check_error("# one\n; two\n\n   # four\n[Load]\n\t\n;seven\nWorkers=0", -EINVAL,
                    "modgate.conf:8: Workers=0 is out of range 1..64");
        /* An empty [Root] is reported at its header, when the next one or the end of the file comes. */
        check_error("# one\n[Root]\n# three\n[Load]\nWorkers=2\n", -EINVAL,
                    "modgate.conf:2: [Root] section has no Path=");
        check_error("[Load]\n# two\n  [Root]  \n\n", -EINVAL, "modgate.conf:3: [Root] section has no Path=");
        check_error("[Root]\nPath=/a\n[Root]\n", -EINVAL, "modgate.conf:3: [Root] section has no Path=");
        check_error("# one\n\n[Laod]\n", -EINVAL,
                    "modgate.conf:3: unknown section [Laod]; the sections are [Load], [Manager], [Trust], "
                    "[Root], [Policy], [Source], [Parameters] and [Guard]");
}

TEST(libinih_syntax) {
        _cleanup_(config_done) Config c = {};

        /* A ';' after whitespace starts a comment, in a value and after a header; a '#' does not. */
        parse_ok(&c, "[Load] ; the loader\nWorkers=8 ; eight\nLoadAlone=a b ;c d\n"
                     "[Trust]\nTrustedRoot=/e;f\t;/g\n");
        check(c.workers == 8);
        check_strv(c.load_alone, (const char *const[]) { "a", "b" }, 2);
        check_strv(c.trusted_roots, (const char *const[]) { "/e;f" }, 1);
        config_done(&c);

        /* ':' separates too, as in Python's configparser; the first '=' or ':' does. */
        parse_ok(&c, "[Load]\nWorkers : 3\n[Trust]\nFsVerityDigest=" DIGEST_A "\n");
        check(c.workers == 3);
        check_strv(c.trust.fsverity_digests, (const char *const[]) { DIGEST_A }, 1);
        config_done(&c);

        /* An indented line is a line of its own, never the continuation of the value before it. */
        parse_ok(&c, "[Load]\nLoadAlone=a\n  LoadAlone=b\n\tWorkers=5\n");
        check_strv(c.load_alone, (const char *const[]) { "a", "b" }, 2);
        check(c.workers == 5);
        check_error("[Load]\nLoadAlone=a\n  c\n", -EBADMSG,
                    "modgate.conf:3: expected [Section], Key=Value or a comment");
        check_error("[Load]\nWorkers=2\n  0\n", -EBADMSG,
                    "modgate.conf:3: expected [Section], Key=Value or a comment");
}

TEST(first_error_stops) {
        _cleanup_(config_done) Config c = {};
        _cleanup_free_ char *message = NULL;

        config_init_defaults(&c);
        check(parse_n(&c, "[Load]\nWorkers=2\nWorkers=0\nWorkers=99\n", 39, &message) == -EINVAL);
        check_streq(message, "modgate.conf:3: Workers=0 is out of range 1..64");

        /* Without a place for the message, only the error. */
        check(parse_n(&c, "[Nope]\n", 7, NULL) == -EINVAL);
}

static char *repeat(char ch, size_t n) {
        char *s = malloc(n + 1);

        check(s);
        memset(s, ch, n);
        s[n] = '\0';
        return s;
}

#define LONG_LINE_ERROR "line is longer than 198 bytes; a list setting can be split over several assignments"

TEST(line_length_cap) {
        _cleanup_free_ char *ok = repeat('#', CONFIG_LINE_MAX);
        _cleanup_free_ char *long_line = repeat('#', CONFIG_LINE_MAX + 1);
        _cleanup_free_ char *path = repeat('a', CONFIG_LINE_MAX - strlen("TrustedRoot=/"));
        _cleanup_free_ char *text = NULL, *crlf = NULL, *assignment = NULL, *longer = NULL;
        _cleanup_(config_done) Config c = {};

        check(CONFIG_LINE_MAX == 198);
        parse_ok(&c, ok);
        check(asprintf(&crlf, "%s\r\n", ok) > 0);
        parse_ok(&c, crlf);
        check(asprintf(&text, "[Load]\n%s\n", long_line) > 0);
        check_error(text, -EBADMSG, "modgate.conf:2: " LONG_LINE_ERROR);
        check_error(long_line, -EBADMSG, "modgate.conf:1: " LONG_LINE_ERROR);

        /* The longest assignment arrives whole (libinih, once the reader, split longer lines). */
        check(asprintf(&assignment, "[Trust]\r\nTrustedRoot=/%s\r\n", path) > 0);
        parse_ok(&c, assignment);
        check(strv_length(c.trusted_roots) == 1 && strlen(c.trusted_roots[0]) == strlen(path) + 1);
        /* Indentation counts. */
        check(asprintf(&longer, "[Trust]\n TrustedRoot=/%s\n", path) > 0);
        check_error(longer, -EBADMSG, "modgate.conf:2: " LONG_LINE_ERROR);
}

TEST(file_size_cap) {
        _cleanup_free_ char *text = repeat('\n', CONFIG_FILE_MAX + 1);
        _cleanup_(config_done) Config c = {};

        text[0] = '#';
        text[CONFIG_FILE_MAX] = '\0';
        parse_ok(&c, text);
        text[CONFIG_FILE_MAX] = '\n';
        check_error(text, -EFBIG, "modgate.conf: file is larger than 1 MiB");
}

TEST(list_cap) {
        _cleanup_free_ char *text = NULL;
        _cleanup_(config_done) Config c = {};
        size_t n = 0, size = 64 + 20 * (CONFIG_LIST_MAX + 1);

        text = malloc(size);
        check(text);
        n += sprintf(text, "[Load]\n");
        for (int i = 0; i < CONFIG_LIST_MAX; i++)
                n += sprintf(text + n, "LoadAlone=m%d\n", i);
        check(n + sizeof("LoadAlone=one_more\n") <= size);
        parse_ok(&c, text);
        check(strv_length(c.load_alone) == CONFIG_LIST_MAX);
        /* A name already there is no new entry. */
        check(parse_n(&c, "[Load]\nLoadAlone=m0\n", 20, NULL) == 0);
        check_error(strcat(text, "LoadAlone=one_more\n"), -EINVAL,
                    "modgate.conf:1026: LoadAlone= has more than 1024 entries");
}

static int load(Config *c, const char *root, char **ret_message) {
        return config_load(c, root, ret_message);
}

TEST(load_precedence) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_(config_done) Config c = {};

        tmp_write(root, "usr/lib/modgate/modgate.conf", "[Load]\nWorkers=2\nLoadAlone=a\n");
        tmp_write(root, "etc/modgate/modgate.conf", "[Load]\nWorkers=3\n");
        tmp_write(root, "usr/lib/modgate/modgate.conf.d/50-b.conf", "[Load]\nLoadAlone=b\nWorkers=5\n");
        tmp_write(root, "usr/lib/modgate/modgate.conf.d/60-c.conf", "[Manager]\nIdleExitSec=1min\n");
        tmp_write(root, "run/modgate/modgate.conf.d/60-c.conf", "[Manager]\nIdleExitSec=2min\n");
        tmp_write(root, "etc/modgate/modgate.conf.d/70-d.conf", "[Load]\nLoadAlone=\nLoadAlone=d\n");

        /* Only the /etc main file, then the drop-ins by name: 50-b, 60-c from /usr (never /run), 70-d. */
        check(load(&c, root, NULL) == 0);
        check(c.workers == 5);
        check_strv(c.load_alone, (const char *const[]) { "d" }, 1);
        check(c.idle_exit_usec == USEC_PER_MINUTE);
        check(c.require_superblock_ro);
}

TEST(load_ignores_run) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_(config_done) Config c = {};
        _cleanup_strv_free_ char **ignored = NULL;
        _cleanup_free_ char *main_file = NULL, *dropin = NULL;

        /* What a root without CAP_SYS_MODULE could write: none of it is read, all of it is named. */
        tmp_write(root, "etc/modgate/modgate.conf.d/50-deny.conf", "[Policy]\nDeny=ifb\n");
        tmp_write(root, "run/modgate/modgate.conf", "[Load]\nWorkers=7\n");
        tmp_write(root, "run/modgate/modgate.conf.d/zz.conf", "[Policy]\nMode=permissive\nDeny=\n");
        check(load(&c, root, NULL) == 0);
        check(c.workers == CONFIG_WORKERS_DEFAULT);
        check(c.policy.mode == POLICY_ENFORCE);
        check(c.policy.global.n_rules == 1);

        check(config_ignored_files(root, &ignored) == 0);
        check(asprintf(&main_file, "%s/run/modgate/modgate.conf", root) > 0);
        check(asprintf(&dropin, "%s/run/modgate/modgate.conf.d/zz.conf", root) > 0);
        check_strv(ignored, (const char *const[]) { main_file, dropin }, 2);
}

TEST(load_nothing_gives_defaults) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_(config_done) Config c = {};

        c.workers = 99;
        check(load(&c, root, NULL) == 0);
        check(c.workers == CONFIG_WORKERS_DEFAULT);
        check(c.idle_exit_usec == CONFIG_IDLE_EXIT_USEC_DEFAULT);
}

TEST(load_masked_main_file) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_(config_done) Config c = {};

        tmp_write(root, "usr/lib/modgate/modgate.conf", "[Load]\nWorkers=0\n");
        tmp_symlink(root, "etc/modgate/modgate.conf", "/dev/null");
        tmp_write(root, "usr/lib/modgate/modgate.conf.d/10-a.conf", "[Load]\nWorkers=6\n");
        check(load(&c, root, NULL) == 0);
        check(c.workers == 6);
}

TEST(load_error_keeps_config) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_(config_done) Config c = {};
        _cleanup_free_ char *message = NULL, *want = NULL;

        tmp_write(root, "etc/modgate/modgate.conf", "[Load]\nWorkers=7\nLoadAlone=a\n");
        check(load(&c, root, NULL) == 0);
        check(c.workers == 7);

        tmp_write(root, "etc/modgate/modgate.conf.d/10-bad.conf",
                  "[Load]\nWorkers=8\n[Trust]\nTrustedRoot=x\n");
        check(load(&c, root, &message) == -EINVAL);
        check(asprintf(&want, "%s/etc/modgate/modgate.conf.d/10-bad.conf:4: "
                       "TrustedRoot=x is not an absolute path", root) > 0);
        check_streq(message, want);
        check(c.workers == 7);
        check_strv(c.load_alone, (const char *const[]) { "a" }, 1);
}

TEST(load_refuses_unsafe_files) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_free_ char *path = tmp_path(root, "etc/modgate/modgate.conf.d/10-a.conf");
        _cleanup_free_ char *message = NULL, *want = NULL;
        _cleanup_(config_done) Config c = {};

        tmp_write(root, "etc/modgate/modgate.conf.d/10-a.conf", "[Trust]\nRequireReadOnlySuperblock=no\n");
        check(chmod(path, 0664) == 0);
        check(load(&c, root, &message) == -EPERM);
        check(asprintf(&want, "%s: refusing a file writable by group or others (mode 0664)", path) > 0);
        check_streq(message, want);

        check(chmod(path, 0644) == 0);
        if (geteuid() == 0) {
                free(message);
                free(want);
                message = want = NULL;
                check(chown(path, 4711, 4711) == 0);
                check(load(&c, root, &message) == -EPERM);
                check(asprintf(&want, "%s: refusing a file owned by uid 4711: it must be owned by root",
                               path) > 0);
                check_streq(message, want);
                check(chown(path, 0, 0) == 0);
        }
        check(load(&c, root, NULL) == 0);
        check(!c.require_superblock_ro);
}

/* Parses text over what c holds, as config_load() applies a later file. */
static int parse_more(Config *c, const char *text) {
        return parse_n(c, text, strlen(text), NULL);
}

static void check_rule(const PolicyRule *r, RuleKind kind, const char *pattern, unsigned line, const char *option) {
        check(r->kind == kind);
        check(streq_ptr(r->pattern, pattern));
        check_streq(r->file, "modgate.conf");
        check(r->line == line);
        check_streq(r->option, option);
}

static void check_no_rule(const PolicyRule *r) {
        check(!r->pattern && !r->file && !r->option && r->line == 0);
}

TEST(policy_defaults) {
        _cleanup_(config_done) Config c = {};

        parse_ok(&c, "[Policy]\n[Policy]\n");
        check(c.policy.mode == POLICY_ENFORCE);
        check_no_rule(&c.policy.mode_rule);
        check(!c.policy.global.default_deny && c.policy.global.n_rules == 0);
        check(c.policy.request_parameters_any);
        check(c.policy.n_parameters == 0);
        for (size_t i = 0; i < _SOURCE_MAX; i++)
                check(!c.policy.sources[i].default_deny && c.policy.sources[i].n_rules == 0);
}

TEST(policy_mode) {
        _cleanup_(config_done) Config c = {};

        parse_ok(&c, "[Policy]\n# testing\nMode=permissive\n");
        check(c.policy.mode == POLICY_PERMISSIVE);
        check_rule(&c.policy.mode_rule, RULE_DEFAULT, NULL, 3, "Mode=permissive");
        config_done(&c);
        parse_ok(&c, "[Policy]\nMode=permissive\nMode=enforce\n");
        check(c.policy.mode == POLICY_ENFORCE);
        check_rule(&c.policy.mode_rule, RULE_DEFAULT, NULL, 3, "Mode=enforce");
        config_done(&c);
        parse_ok(&c, "[Policy]\nMode=permissive\nMode=\n");
        check(c.policy.mode == POLICY_ENFORCE);
        check_no_rule(&c.policy.mode_rule);

        check_error("[Policy]\nMode=strict\n", -EINVAL,
                    "modgate.conf:2: Mode=strict: the modes are enforce and permissive");
        check_error("[Policy]\nMode=Permissive\n", -EINVAL,
                    "modgate.conf:2: Mode=Permissive: the modes are enforce and permissive");
        check_error("[Source]\nName=udev\nMode=permissive\n", -EINVAL,
                    "modgate.conf:3: Mode= belongs in section [Policy], not [Source]");
}

TEST(policy_default) {
        _cleanup_(config_done) Config c = {};

        parse_ok(&c, "[Policy]\nDefault=deny\n");
        check(c.policy.global.default_deny);
        check_rule(&c.policy.global.default_rule, RULE_DEFAULT, NULL, 2, "Default=deny");
        /* Across files: a later drop-in gives the default back. */
        check(parse_more(&c, "[Policy]\nDefault=allow\n") == 0);
        check(!c.policy.global.default_deny);
        check_no_rule(&c.policy.global.default_rule);
        config_done(&c);
        parse_ok(&c, "[Policy]\nDefault=deny\nDefault=\n");
        check(!c.policy.global.default_deny);
        check_no_rule(&c.policy.global.default_rule);

        check_error("[Policy]\nDefault=block\n", -EINVAL, "modgate.conf:2: Default=block is neither allow nor deny");
}

TEST(policy_rules) {
        _cleanup_(config_done) Config c = {};
        const PolicyRule *r;

        parse_ok(&c,
                 "[Policy]\n"
                 "Allow=snd-hda-* e1000e\n"
                 "Deny=algif-aead [a-c]-x? algif_aead\n"
                 "DenyRequest=net-pf-38 char-major-10-* crypto-*\n");
        check(c.policy.global.n_rules == 7);
        r = c.policy.global.rules;
        check_rule(&r[0], RULE_ALLOW, "snd_hda_*", 2, "Allow=snd-hda-*");
        check_rule(&r[1], RULE_ALLOW, "e1000e", 2, "Allow=e1000e");
        /* '-' is '_' outside brackets, where it is a range; a pattern is kept once. */
        check_rule(&r[2], RULE_DENY, "algif_aead", 3, "Deny=algif-aead");
        check_rule(&r[3], RULE_DENY, "[a-c]_x?", 3, "Deny=[a-c]-x?");
        /* Request keys are kept as asked. */
        check_rule(&r[4], RULE_DENY_REQUEST, "net-pf-38", 4, "DenyRequest=net-pf-38");
        check_rule(&r[5], RULE_DENY_REQUEST, "char-major-10-*", 4, "DenyRequest=char-major-10-*");
        check_rule(&r[6], RULE_DENY_REQUEST, "crypto-*", 4, "DenyRequest=crypto-*");

        /* A later [Policy] adds to the same layer. */
        config_done(&c);
        parse_ok(&c, "[Policy]\nDeny=a\n[Load]\n[Policy]\nDeny=b\n");
        check(c.policy.global.n_rules == 2);
        check_rule(&c.policy.global.rules[1], RULE_DENY, "b", 5, "Deny=b");

        check_error("[Policy]\nDeny=ok ../evil\n", -EINVAL, "modgate.conf:2: Deny=../evil is not a module name glob "
                    "(letters, digits, '_', '-' and * ? [ ] !)");
        check_error("[Policy]\nAllow=snd.hda\n", -EINVAL, "modgate.conf:2: Allow=snd.hda is not a module name glob "
                    "(letters, digits, '_', '-' and * ? [ ] !)");
        check_error("[Policy]\nDenyRequest=fs-cramfs a/b\n", -EINVAL, "modgate.conf:2: DenyRequest=a/b is not a "
                    "request key glob (printable ASCII without '/', '\\' or quotes)");
        check_error("[Policy]\nDenyRequest=\"x\"\n", -EINVAL, "modgate.conf:2: DenyRequest=\"x\" is not a "
                    "request key glob (printable ASCII without '/', '\\' or quotes)");
        check_error("[Policy]\nDenyRequest=\xc3\xa9\n", -EINVAL, "modgate.conf:2: DenyRequest=\xc3\xa9 is not a "
                    "request key glob (printable ASCII without '/', '\\' or quotes)");
        check_error("[Policy]\ndeny=a\n", -EINVAL,
                    "modgate.conf:2: unknown key deny= in section [Policy] (did you mean Deny=?)");
}

TEST(policy_rules_reset) {
        _cleanup_(config_done) Config c = {};

        /* An empty assignment drops that kind's rules written so far, and only those. */
        parse_ok(&c, "[Policy]\nAllow=a\nDeny=b\nAllow=c\nAllow=\nAllow=d\n");
        check(c.policy.global.n_rules == 2);
        check_rule(&c.policy.global.rules[0], RULE_DENY, "b", 3, "Deny=b");
        check_rule(&c.policy.global.rules[1], RULE_ALLOW, "d", 6, "Allow=d");
        /* Across files, as drop-ins: a later file empties what an earlier one wrote. */
        check(parse_more(&c, "[Policy]\nDeny=\nDenyRequest=\n") == 0);
        check(c.policy.global.n_rules == 1);
        check_rule(&c.policy.global.rules[0], RULE_ALLOW, "d", 6, "Allow=d");
}

TEST(policy_request_parameters) {
        _cleanup_(config_done) Config c = {};

        parse_ok(&c, "[Policy]\nRequestParameters=none\n");
        check(!c.policy.request_parameters_any);
        check_rule(&c.policy.request_parameters_rule, RULE_PARAMETERS, NULL, 2, "RequestParameters=none");
        check(parse_more(&c, "[Policy]\nRequestParameters=\n") == 0);
        check(c.policy.request_parameters_any);
        check_no_rule(&c.policy.request_parameters_rule);
        check(parse_more(&c, "[Policy]\nRequestParameters=any\n") == 0);
        check(c.policy.request_parameters_any);
        check_rule(&c.policy.request_parameters_rule, RULE_PARAMETERS, NULL, 2, "RequestParameters=any");

        check_error("[Policy]\nRequestParameters=some\n", -EINVAL,
                    "modgate.conf:2: RequestParameters=some is neither any nor none");
}

TEST(source_sections) {
        _cleanup_(config_done) Config c = {};
        const PolicyLayer *udev, *kernel;

        parse_ok(&c,
                 "[Source]\nName=udev\nDefault=deny\nAllow=snd-*\n"
                 "[Source]\nName=kernel\nDenyRequest=net-pf-*\n"
                 "[Source]\nName=udev\nDeny=floppy\n"
                 "[Source]\nName=boot\n[Source]\nName=admin\nDefault=allow\n");
        udev = &c.policy.sources[SOURCE_UDEV];
        kernel = &c.policy.sources[SOURCE_KERNEL];
        check(udev->default_deny);
        check_rule(&udev->default_rule, RULE_DEFAULT, NULL, 3, "Default=deny");
        check(udev->n_rules == 2);
        check_rule(&udev->rules[0], RULE_ALLOW, "snd_*", 4, "Allow=snd-*");
        check_rule(&udev->rules[1], RULE_DENY, "floppy", 10, "Deny=floppy");
        check(!kernel->default_deny && kernel->n_rules == 1);
        check_rule(&kernel->rules[0], RULE_DENY_REQUEST, "net-pf-*", 7, "DenyRequest=net-pf-*");
        check(c.policy.sources[SOURCE_BOOT].n_rules == 0 && c.policy.sources[SOURCE_ADMIN].n_rules == 0);
        check(!c.policy.sources[SOURCE_ADMIN].default_deny);
        check(c.policy.global.n_rules == 0 && !c.policy.global.default_deny);

        /* A reset in one section of a source empties what its earlier sections wrote. */
        config_done(&c);
        parse_ok(&c, "[Source]\nName=udev\nAllow=a\n[Source]\nName=udev\nAllow=\n");
        check(c.policy.sources[SOURCE_UDEV].n_rules == 0);

        check_error("[Source]\nAllow=a\n", -EINVAL,
                    "modgate.conf:2: Allow= comes before Name= in a [Source] section: Name= must come first");
        check_error("[Source]\nName=udev\n[Source]\n# none\nDefault=deny\n", -EINVAL,
                    "modgate.conf:5: Default= comes before Name= in a [Source] section: Name= must come first");
        check_error("[Source]\n# nothing\n[Load]\n", -EINVAL, "modgate.conf:1: [Source] section has no Name=");
        check_error("[Load]\n[Source]\n", -EINVAL, "modgate.conf:2: [Source] section has no Name=");
        check_error("[Source]\nName=usb\n", -EINVAL, "modgate.conf:2: Name=usb: the sources are kernel, udev, boot "
                    "and admin");
        check_error("[Source]\nName=\n", -EINVAL, "modgate.conf:2: Name=: the sources are kernel, udev, boot "
                    "and admin");
        check_error("[Source]\nName=udev\nName=boot\n", -EINVAL,
                    "modgate.conf:3: Name= is given twice in one [Source] section");
        check_error("[Source]\nName=udev\nRequestParameters=none\n", -EINVAL,
                    "modgate.conf:3: RequestParameters= belongs in section [Policy], not [Source]");
        check_error("[Policy]\nName=udev\n", -EINVAL, "modgate.conf:2: Name= belongs in section [Source], not [Policy]");
        check_error("[Source]\nName=udev\nDeny=a/b\n", -EINVAL, "modgate.conf:3: Deny=a/b is not a module name "
                    "glob (letters, digits, '_', '-' and * ? [ ] !)");
}

TEST(parameters_sections) {
        _cleanup_(config_done) Config c = {};
        const ParameterRule *p;

        parse_ok(&c,
                 "[Parameters]\nModule=snd-hda-*\nAllow=index=* enable-msi=[01] mode=a-b\nAllow=*\n"
                 "[Parameters]\nModule=e1000e\n"
                 "[Parameters]\nModule=x\nAllow=a=1\nAllow=\nAllow=b=2 b=2\n");
        check(c.policy.n_parameters == 3);
        p = c.policy.parameters;
        check_streq(p[0].module, "snd_hda_*");
        /* The name is canonical, the value kept as written. */
        check_strv(p[0].allow, (const char *const[]) { "index=*", "enable_msi=[01]", "mode=a-b", "*" }, 4);
        check_rule(&p[0].rule, RULE_PARAMETERS, "snd_hda_*", 1, "Module=snd-hda-*");
        /* No Allow=: no request parameters at all. */
        check_streq(p[1].module, "e1000e");
        check(strv_length(p[1].allow) == 0);
        check_rule(&p[1].rule, RULE_PARAMETERS, "e1000e", 5, "Module=e1000e");
        check_strv(p[2].allow, (const char *const[]) { "b=2" }, 1);
        check_rule(&p[2].rule, RULE_PARAMETERS, "x", 7, "Module=x");

        check_error("[Parameters]\nAllow=*\n", -EINVAL,
                    "modgate.conf:2: Allow= comes before Module= in a [Parameters] section: Module= must come first");
        check_error("[Parameters]\n\n", -EINVAL, "modgate.conf:1: [Parameters] section has no Module=");
        check_error("[Parameters]\nModule=a\nModule=b\n", -EINVAL,
                    "modgate.conf:3: Module= is given twice in one [Parameters] section");
        check_error("[Parameters]\nModule=a b\n", -EINVAL,
                    "modgate.conf:2: Module=a b: a [Parameters] section is about one module name glob");
        check_error("[Parameters]\nModule=\n", -EINVAL, "modgate.conf:2: Module= is not a module name glob "
                    "(letters, digits, '_', '-' and * ? [ ] !)");
        check_error("[Parameters]\nModule=../a\n", -EINVAL, "modgate.conf:2: Module=../a is not a module name glob "
                    "(letters, digits, '_', '-' and * ? [ ] !)");
        check_error("[Parameters]\nModule=a\nAllow=debug\n", -EINVAL,
                    "modgate.conf:3: Allow=debug is neither KEY=VALUE nor *");
        check_error("[Parameters]\nModule=a\nAllow=a.b=1\n", -EINVAL,
                    "modgate.conf:3: Allow=a.b=1: a parameter name is letters, digits, '_' and '-', or a glob of them");
        check_error("[Parameters]\nModule=a\nAllow==1\n", -EINVAL,
                    "modgate.conf:3: Allow==1: a parameter name is letters, digits, '_' and '-', or a glob of them");
        check_error("[Parameters]\nModule=a\nAllow=a=\xc3\xa9\n", -EINVAL,
                    "modgate.conf:3: Allow=a=\xc3\xa9: a parameter value is printable ASCII");
        check_error("[Parameters]\nModule=a\nDeny=b\n", -EINVAL,
                    "modgate.conf:3: Deny= belongs in section [Policy], not [Parameters]");
}

TEST(policy_caps) {
        _cleanup_free_ char *text = NULL;
        _cleanup_(config_done) Config c = {};
        size_t n = 0, size = 64 + 24 * (CONFIG_LIST_MAX + 1);

        text = malloc(size);
        check(text);
        n += sprintf(text, "[Policy]\nAllow=a\n");
        for (int i = 0; i < CONFIG_LIST_MAX; i++)
                n += sprintf(text + n, "Deny=m%d m%d\n", i, i);
        check(n + sizeof("Deny=one_more\n") <= size);
        parse_ok(&c, text);
        check(c.policy.global.n_rules == CONFIG_LIST_MAX + 1);
        /* A pattern already there is no new entry; another list has its own count. */
        check(parse_more(&c, "[Policy]\nDeny=m0\nAllow=b\n") == 0);
        check_error(strcat(text, "Deny=one-more\n"), -EINVAL, "modgate.conf:1027: Deny= has more than 1024 entries");
}

TEST(parameters_cap) {
        _cleanup_free_ char *text = NULL;
        _cleanup_(config_done) Config c = {};
        size_t n = 0, size = 32 * (CONFIG_PARAMETERS_MAX + 1);

        text = malloc(size);
        check(text);
        text[0] = '\0';
        for (int i = 0; i < CONFIG_PARAMETERS_MAX; i++)
                n += sprintf(text + n, "[Parameters]\nModule=m%d\n", i);
        check(n + sizeof("[Parameters]\nModule=one_more\n") <= size);
        parse_ok(&c, text);
        check(c.policy.n_parameters == CONFIG_PARAMETERS_MAX);
        check_error(strcat(text, "[Parameters]\nModule=one_more\n"), -EINVAL,
                    "modgate.conf:513: more than 256 [Parameters] sections");
}

TEST(load_policy) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_free_ char *dropin = tmp_path(root, "etc/modgate/modgate.conf.d/50-cve.conf");
        _cleanup_(config_done) Config c = {};
        const PolicyRule *r;

        tmp_write(root, "usr/lib/modgate/modgate.conf", "[Policy]\nDeny=a\n");
        tmp_write(root, "etc/modgate/modgate.conf.d/50-cve.conf",
                  "[Policy]\nDeny=\nDeny=algif-aead\n[Source]\nName=udev\nAllow=c\n");
        check(load(&c, root, NULL) == 0);
        check(c.policy.global.n_rules == 1);
        r = &c.policy.global.rules[0];
        check(r->kind == RULE_DENY && r->line == 3);
        check_streq(r->pattern, "algif_aead");
        check_streq(r->file, dropin);
        check(c.policy.sources[SOURCE_UDEV].n_rules == 1);
        check_streq(c.policy.sources[SOURCE_UDEV].rules[0].file, dropin);
}

TEST(module_glob) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "snd-hda-intel", "snd_hda_intel" },
                { "snd-*", "snd_*" },
                { "[a-z]-[!-]?", "[a-z]_[!-]?" },
                { "*", "*" },
        };
        static const char *const bad[] = { "", "a/b", "a b", "a.ko", "mod\\x", "é" };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                char s[32];

                strcpy(s, cases[i].in);
                check(config_normalize_module_glob(s) == 0);
                check_streq(s, cases[i].out);
        }
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char s[32];

                strcpy(s, bad[i]);
                check(config_normalize_module_glob(s) == -EINVAL);
                check_streq(s, bad[i]);
        }
}

static void check_defaults(const Config *c) {
        check(c->workers == CONFIG_WORKERS_DEFAULT);
        check(strv_length(c->load_alone) == 0);
        check(c->idle_exit_usec == CONFIG_IDLE_EXIT_USEC_DEFAULT);
        check(c->connections_max == 4096 && c->connections_per_user_max == 16);
        check(c->idle_connection_usec == 60 * USEC_PER_SEC);
        check(strv_length(c->trusted_roots) == 0);
        check(c->require_superblock_ro);
        check(c->trust.evidence == EVIDENCE_DEFAULT && config_evidence(c) == EVIDENCE_DEFAULT);
        check(!c->trust.manifest);
        check(strv_length(c->trust.root_hashes) == 0 && strv_length(c->trust.fsverity_digests) == 0);
        check(!c->trust.require_ima);
        check(!signer_rule_active(&c->trust.signer));
        for (RequestSource s = 0; s < _SOURCE_MAX; s++)
                check(!signer_rule_active(&c->source_signers[s]));
        check(c->n_roots == 0);
        check(c->policy.mode == POLICY_ENFORCE);
        check(!c->policy.global.default_deny && c->policy.global.n_rules == 0);
        check(c->policy.request_parameters_any && c->policy.n_parameters == 0);
        check(c->guard_mode == GUARD_PERMISSIVE);
}

/* "#Key=value" lines, with the '#' removed; *ret_n counts them. */
static char *uncomment_settings(const char *text, unsigned *ret_n) {
        char *out = malloc(strlen(text) + 1), *o = out;
        unsigned n = 0;

        check(out);
        for (const char *p = text; *p;) {
                size_t len = strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n');

                if (p[0] == '#' && p[1] >= 'A' && p[1] <= 'Z' && memchr(p, '=', len)) {
                        p++;
                        len--;
                        n++;
                }
                memcpy(o, p, len);
                o += len;
                p += len;
        }
        *o = '\0';
        *ret_n = n;
        return out;
}

/* conf/modgate.conf shows every setting with its default: parsed as it is and with each setting
 * uncommented, it must give the defaults. */
TEST(example_file_documents_defaults) {
        _cleanup_(config_done) Config a = {}, b = {};
        _cleanup_free_ char *text = NULL, *uncommented = NULL;
        unsigned n;
        size_t size;
        FILE *f;

        f = fopen(PROJECT_SOURCE_ROOT "/conf/modgate.conf", "re");
        check(f);
        check(read_full_stream(f, CONFIG_FILE_MAX, &text, &size) == 0);
        fclose(f);

        parse_ok(&a, text);
        check_defaults(&a);
        uncommented = uncomment_settings(text, &n);
        check(n == 23);
        parse_ok(&b, uncommented);
        check_defaults(&b);
}

int main(void) {
        RUN(defaults);
        RUN(workers_default);
        RUN(every_setting);
        RUN(later_assignment_wins);
        RUN(empty_assignment_resets);
        RUN(lists_accumulate_and_reset);
        RUN(module_names);
        RUN(idle_exit);
        RUN(connections);
        RUN(booleans);
        RUN(tolerated_syntax);
        RUN(value_errors);
        RUN(evidence);
        RUN(verity_allowlists);
        RUN(roots);
        RUN(guard_mode);
        RUN(signer_rules);
        RUN(unknown_names);
        RUN(syntax_errors);
        RUN(first_error_is_reported);
        RUN(line_numbers);
        RUN(libinih_syntax);
        RUN(first_error_stops);
        RUN(line_length_cap);
        RUN(file_size_cap);
        RUN(list_cap);
        RUN(load_precedence);
        RUN(load_ignores_run);
        RUN(load_nothing_gives_defaults);
        RUN(load_masked_main_file);
        RUN(load_error_keeps_config);
        RUN(load_refuses_unsafe_files);
        RUN(policy_defaults);
        RUN(policy_mode);
        RUN(policy_default);
        RUN(policy_rules);
        RUN(policy_rules_reset);
        RUN(policy_request_parameters);
        RUN(source_sections);
        RUN(parameters_sections);
        RUN(policy_caps);
        RUN(parameters_cap);
        RUN(load_policy);
        RUN(module_glob);
        RUN(example_file_documents_defaults);
        return tests_done();
}
