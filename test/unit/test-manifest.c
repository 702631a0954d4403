/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "manifest.h"
#include "tests-tmp.h"

#define KVER "6.12.48+deb13-amd64"
#define HEADER "# modgate manifest 1 kernel=" KVER " origin=kernel-install\n"
#define D1 "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define D2 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define D3 "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"

/* The messages that come back often. */
#define WANT_HEADER "the first line must be the header '# modgate manifest VERSION kernel=KVER origin=ORIGIN'"
#define WANT_DIGEST "expected a SHA-256 digest (64 hex digits) at the start of the line, found "
#define WANT_KERNEL " is not a kernel release (1..64 letters, digits, '.', '_', '+', '~' or '-')"
#define WANT_MODULE "the path does not name a module file (.ko, .ko.xz, .ko.zst or .ko.gz)"
#define WANT_SPACES "expected two spaces between the digest and the path"
#define WANT_VERSIONS "(versions 1 and 2 are read)"
#define WANT_ORDER " is out of order: entries are sorted by path in byte order, and it sorts before "
#define LONG_KERNEL "1234567890123456789012345678901234567890123456789012345678901234"

static int parse_n(const char *text, size_t n, Manifest **ret, char **ret_message) {
        FILE *f = fmemopen(n > 0 ? (void *) text : (void *) "", n, "r");
        int r;

        check(f);
        r = manifest_parse(f, ret, ret_message);
        fclose(f);
        return r;
}

static Manifest *parse_ok(const char *text) {
        _cleanup_free_ char *message = NULL;
        Manifest *m = NULL;
        int r;

        r = parse_n(text, strlen(text), &m, &message);
        if (r < 0)
                fprintf(stderr, "unexpected error %d: %s\n", r, message);
        check(r == 0);
        check(m);
        check(!message);
        return m;
}

/* Expects n bytes to be refused with error and exactly this message, and nothing returned. */
static void check_error_n(const char *text, size_t n, int error, const char *message) {
        _cleanup_free_ char *got = NULL;
        Manifest *m = NULL;
        int r;

        r = parse_n(text, n, &m, &got);
        if (r != error)
                fprintf(stderr, "expected %d, got %d (%s) for: %.200s\n", error, r, got, text);
        check(r == error);
        check(!m);
        check_streq(got, message);

        /* Without a message pointer, the same answer. */
        check(parse_n(text, n, &m, NULL) == error);
        check(!m);
}

static void check_error(const char *text, int error, const char *message) {
        check_error_n(text, strlen(text), error, message);
}

static void check_digest(const Manifest *m, const char *path, const char *hex) {
        uint8_t want[SHA256_DIGEST_SIZE];
        const uint8_t *got = manifest_lookup(m, path);

        check(sha256_from_hex(hex, want) == 0);
        if (!got)
                fprintf(stderr, "no digest for %s\n", path);
        check(got);
        check(memcmp(got, want, SHA256_DIGEST_SIZE) == 0);
}

TEST(parse_valid) {
        _cleanup_(manifest_freep) Manifest *m = NULL;

        m = parse_ok(HEADER
                     "# written by hand, for this test\n"
                     D1 "  kernel/drivers/net/dummy.ko.xz\n"
                     "#\n"
                     D2 "  kernel/drivers/net/vxlan/vxlan.ko.xz\n"
                     D3 "  updates/dkms/zfs.ko\n");
        check_streq(manifest_kernel(m), KVER);
        check(manifest_origin(m) == MANIFEST_ORIGIN_KERNEL_INSTALL);
        check(manifest_entries(m) == 3);
        check_digest(m, "kernel/drivers/net/dummy.ko.xz", D1);
        check_digest(m, "kernel/drivers/net/vxlan/vxlan.ko.xz", D2);
        check_digest(m, "updates/dkms/zfs.ko", D3);

        /* A header alone: a tree without modules. */
        manifest_free(m);
        m = parse_ok("# modgate manifest 1 kernel=6.1.0 origin=admin\n");
        check(manifest_entries(m) == 0);
        check_streq(manifest_kernel(m), "6.1.0");
        check(!manifest_lookup(m, "kernel/x.ko"));

        /* Every suffix, and bytes beyond ASCII in a path. */
        manifest_free(m);
        m = parse_ok(HEADER D1 "  a.ko\n" D2 "  b.ko.gz\n" D3 "  c.ko.xz\n" D1 "  d.ko.zst\n"
                     D2 "  kernel/caf\xc3\xa9.ko\n");
        check(manifest_entries(m) == 5);
        check_digest(m, "b.ko.gz", D2);
        check_digest(m, "d.ko.zst", D1);
        check_digest(m, "kernel/caf\xc3\xa9.ko", D2);
}

TEST(origins) {
        static const struct {
                const char *name;
                ManifestOrigin origin;
        } table[] = {
                { "kernel-install", MANIFEST_ORIGIN_KERNEL_INSTALL },
                { "first-use", MANIFEST_ORIGIN_FIRST_USE },
                { "admin", MANIFEST_ORIGIN_ADMIN },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                _cleanup_(manifest_freep) Manifest *m = NULL;
                _cleanup_free_ char *text = NULL;

                check(asprintf(&text, "# modgate manifest 1 kernel=6.1.0 origin=%s\n" D1 "  a.ko\n",
                               table[i].name) > 0);
                m = parse_ok(text);
                check(manifest_origin(m) == table[i].origin);
                check_streq(manifest_origin_to_string(table[i].origin), table[i].name);
                check(manifest_origin_from_string(table[i].name) == (int) table[i].origin);
        }
        check(ELEMENTSOF(table) == _MANIFEST_ORIGIN_MAX);
        check(!manifest_origin_to_string(_MANIFEST_ORIGIN_MAX));
        check(!manifest_origin_to_string((ManifestOrigin) -1));
        check(manifest_origin_from_string("Admin") == -EINVAL);
        check(manifest_origin_from_string("first_use") == -EINVAL);
        check(manifest_origin_from_string("") == -EINVAL);
        check(manifest_origin_from_string(NULL) == -EINVAL);
}

TEST(lookup) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_free_ char *text = NULL;
        size_t n = 0;
        FILE *f;

        /* 1000 entries: the search must find every one, and nothing in between. */
        f = open_memstream(&text, &n);
        check(f);
        fputs(HEADER, f);
        for (unsigned i = 0; i < 1000; i++)
                fprintf(f, "%s  kernel/m%04u.ko.xz\n", i % 2 ? D1 : D2, i * 2);
        check(fclose(f) == 0);
        m = parse_ok(text);
        check(manifest_entries(m) == 1000);

        for (unsigned i = 0; i < 2000; i++) {
                char path[64];

                snprintf(path, sizeof(path), "kernel/m%04u.ko.xz", i);
                if (i % 2 == 0)
                        check_digest(m, path, (i / 2) % 2 ? D1 : D2);
                else
                        check(!manifest_lookup(m, path));
        }

        /* Exactly as listed: no normalization, no prefix or suffix matches. */
        check_digest(m, "kernel/m0000.ko.xz", D2);
        check(!manifest_lookup(m, "/kernel/m0000.ko.xz"));
        check(!manifest_lookup(m, "./kernel/m0000.ko.xz"));
        check(!manifest_lookup(m, "kernel//m0000.ko.xz"));
        check(!manifest_lookup(m, "kernel/m0000.ko"));
        check(!manifest_lookup(m, "kernel/m0000.ko.xz2"));
        check(!manifest_lookup(m, "KERNEL/m0000.ko.xz"));
        check(!manifest_lookup(m, "kernel/a.ko"));          /* before the first */
        check(!manifest_lookup(m, "kernel/z.ko"));          /* after the last */
        check(!manifest_lookup(m, ""));
        check(!manifest_lookup(m, NULL));
        check(!manifest_lookup(NULL, "kernel/m0000.ko.xz"));
}

TEST(header_errors) {
        const char *want = "1: " WANT_HEADER;

        check_error("", -EBADMSG, "1: the file is empty; " WANT_HEADER);
        check_error(D1 "  a.ko\n", -EBADMSG, want);
        check_error("# a comment first\n" HEADER, -EBADMSG, want);
        check_error("\n" HEADER, -EBADMSG, want);
        check_error("# modgate manifest\n", -EBADMSG, want);
        check_error("#modgate manifest 1 kernel=x origin=admin\n", -EBADMSG, want);
        check_error("# modgate manifest 1 kernel=x\n", -EBADMSG, want);
        check_error("# modgate manifest 1 kernel=x origin=admin extra=1\n", -EBADMSG, want);
        check_error("# modgate manifest 1 kernel=x origin=admin \n", -EBADMSG, want);
        check_error("# modgate manifest 1 origin=admin kernel=x\n", -EBADMSG, want);
        check_error("# modgate manifest 1  kernel=x origin=admin\n", -EBADMSG, want);
        check_error("# modgate manifest 1\tkernel=x origin=admin\n", -EBADMSG,
                    "1: unsupported manifest version '1\tkernel=x' " WANT_VERSIONS);
        check_error("# modgate manifest 3 kernel=x origin=admin\n", -EBADMSG,
                    "1: unsupported manifest version '3' " WANT_VERSIONS);
        check_error("# modgate manifest 10 kernel=x origin=admin\n", -EBADMSG,
                    "1: unsupported manifest version '10' " WANT_VERSIONS);
        check_error("# modgate manifest 0 kernel=x origin=admin\n", -EBADMSG,
                    "1: unsupported manifest version '0' " WANT_VERSIONS);
        check_error("# modgate manifest 02 kernel=x origin=admin\n", -EBADMSG,
                    "1: unsupported manifest version '02' " WANT_VERSIONS);
        check_error("# modgate manifest  kernel=x origin=admin\n", -EBADMSG,
                    "1: unsupported manifest version '' " WANT_VERSIONS);
        /* Version 2's header is the same but for its number, and its errors the same. */
        check_error("# modgate manifest 2 kernel=x\n", -EBADMSG, want);
        check_error("# modgate manifest 2 kernel=x origin=distro\n", -EBADMSG,
                    "1: unknown origin=distro (kernel-install, first-use or admin)");
        check_error("# modgate manifest 1 kernel=x origin=distro\n", -EBADMSG,
                    "1: unknown origin=distro (kernel-install, first-use or admin)");
        check_error("# modgate manifest 1 kernel=x origin=\n", -EBADMSG,
                    "1: unknown origin= (kernel-install, first-use or admin)");
        check_error("# modgate manifest 1 kernel=../x origin=admin\n", -EBADMSG,
                    "1: kernel=../x" WANT_KERNEL);
        check_error("# modgate manifest 1 kernel= origin=admin\n", -EBADMSG,
                    "1: kernel=" WANT_KERNEL);
        check_error("# modgate manifest 1 kernel=.. origin=admin\n", -EBADMSG,
                    "1: kernel=.." WANT_KERNEL);
        check_error("# modgate manifest 1 kernel=" LONG_KERNEL "5 origin=admin\n", -EBADMSG,
                    "1: kernel=" LONG_KERNEL "5" WANT_KERNEL);

        /* 64 bytes is the longest a release can be. */
        manifest_free(parse_ok("# modgate manifest 1 kernel=" LONG_KERNEL " origin=admin\n"));

        /* A header where an entry belongs: two manifests joined. */
        check_error(HEADER D1 "  a.ko\n" HEADER D2 "  b.ko\n", -EBADMSG,
                    "3: a second manifest header (two manifests joined?)");
}

TEST(entry_errors) {
        check_error(HEADER "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a  a.ko\n",
                    -EBADMSG, "2: " WANT_DIGEST "63 hex digits");
        check_error(HEADER D1 "0  a.ko\n", -EBADMSG,
                    "2: " WANT_DIGEST "65 hex digits");
        check_error(HEADER "da39a3ee5e6b4b0d3255bfef95601890afd80709  a.ko\n", -EBADMSG,
                    "2: " WANT_DIGEST "40 hex digits");
        check_error(HEADER "  " D1 "  a.ko\n", -EBADMSG,
                    "2: " WANT_DIGEST "0 hex digits");
        check_error(HEADER "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD  a.ko\n",
                    -EBADMSG,
                    "2: the digest has uppercase hex digits; manifests use lowercase, as sha256sum writes them");
        check_error(HEADER D1 " a.ko\n", -EBADMSG, "2: " WANT_SPACES);
        check_error(HEADER D1 "\ta.ko\n", -EBADMSG, "2: " WANT_SPACES);
        check_error(HEADER D1 "\n", -EBADMSG, "2: " WANT_SPACES);
        check_error(HEADER D1 " *a.ko\n", -EBADMSG,
                    "2: binary-mode entries (' *PATH') are not used: expected two spaces between the digest "
                    "and the path");
        check_error(HEADER D1 "  \n", -EBADMSG, "2: the path is empty");
        check_error(HEADER D1 "   a.ko\n", -EBADMSG,
                    "2: the path contains whitespace or a control character:  a.ko");
}

TEST(path_errors) {
        static const struct {
                const char *path;
                const char *message;
        } table[] = {
                { "/kernel/a.ko", "the path is absolute; entries are relative to the module tree" },
                { "kernel/../a.ko", "the path has a '.' or '..' component" },
                { "../a.ko", "the path has a '.' or '..' component" },
                { "./a.ko", "the path has a '.' or '..' component" },
                { "kernel/./a.ko", "the path has a '.' or '..' component" },
                { "kernel//a.ko", "the path has an empty component ('//' or a trailing '/')" },
                { "kernel/a.ko/", "the path has an empty component ('//' or a trailing '/')" },
                { "kernel/a b.ko", "the path contains whitespace or a control character" },
                { "kernel/a.ko ", "the path contains whitespace or a control character" },
                { "kernel/a\tb.ko", "the path contains whitespace or a control character" },
                { "kernel\\a.ko", "the path contains a backslash (which sha256sum would escape)" },
                { "kernel/modules.dep", WANT_MODULE },
                { "kernel/a.ko.bz2", WANT_MODULE },
                { "kernel/a.kox", WANT_MODULE },
                { "kernel/.ko", WANT_MODULE },
                { ".ko.xz", WANT_MODULE },
                { "kernel/a.ko.xz/b", WANT_MODULE },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++) {
                _cleanup_free_ char *text = NULL, *message = NULL;

                check(asprintf(&text, HEADER D1 "  %s\n", table[i].path) > 0);
                check(asprintf(&message, "2: %s: %s", table[i].message, table[i].path) > 0);
                check_error(text, -EBADMSG, message);
                check_streq(manifest_path_problem(table[i].path), table[i].message);
        }
}

TEST(path_length) {
        _cleanup_free_ char *path = malloc(MANIFEST_PATH_MAX + 2), *text = NULL;

        /* 4096 bytes is accepted, 4097 is not, and is not echoed. */
        check(path);
        memset(path, 'a', MANIFEST_PATH_MAX);
        memcpy(path + MANIFEST_PATH_MAX - 3, ".ko", 4);
        for (size_t i = 100; i < MANIFEST_PATH_MAX - 100; i += 100)
                path[i] = '/';
        check(strlen(path) == 4096);
        check(!manifest_path_problem(path));
        check(asprintf(&text, HEADER D1 "  %s\n", path) > 0);
        {
                _cleanup_(manifest_freep) Manifest *m = parse_ok(text);
                check(manifest_entries(m) == 1);
                check_digest(m, path, D1);
        }

        free(text);
        memmove(path + 1, path, MANIFEST_PATH_MAX + 1);
        check(strlen(path) == 4097);
        check_streq(manifest_path_problem(path), "the path is longer than 4096 bytes");
        check(asprintf(&text, HEADER D1 "  %s\n", path) > 0);
        check_error(text, -EBADMSG, "2: the path is longer than 4096 bytes");
}

TEST(line_errors) {
        static const char nul[] = HEADER D1 "  a\0.ko\n";

        check_error(HEADER D1 "  a.ko\r\n", -EBADMSG, "2: the line contains the control character 0x0d");
        check_error("# modgate manifest 1 kernel=x origin=admin\r\n", -EBADMSG,
                    "1: the line contains the control character 0x0d");
        check_error(HEADER "# a comment with an escape \x1b[31m\n", -EBADMSG,
                    "2: the line contains the control character 0x1b");
        check_error(HEADER D1 "  a.ko\x7f\n", -EBADMSG, "2: the line contains the control character 0x7f");
        check_error_n(nul, sizeof(nul) - 1, -EBADMSG, "2: the line contains a NUL byte");
        check_error(HEADER D1 "  a.ko\n\n" D2 "  b.ko\n", -EBADMSG, "3: empty line");
        check_error(HEADER D1 "  a.ko\n\n", -EBADMSG, "3: empty line");
        check_error(HEADER "\n", -EBADMSG, "2: empty line");
        check_error(HEADER " # indented comment\n", -EBADMSG,
                    "2: " WANT_DIGEST "0 hex digits");

        /* A file cut short: the last entry is not read, however good it looks. */
        check_error(HEADER D1 "  a.ko\n" D2 "  b.ko", -EBADMSG,
                    "3: the last line does not end with a newline (is the file truncated?)");
        check_error(HEADER D1 "  kernel/a.ko.x", -EBADMSG,
                    "2: the last line does not end with a newline (is the file truncated?)");
        check_error("# modgate manifest 1 kernel=x origin=admin", -EBADMSG,
                    "1: the last line does not end with a newline (is the file truncated?)");
        check_error(HEADER "# comment\x01", -EBADMSG, "2: the line contains the control character 0x01");

        /* A tab is fine in a comment, and comments may say anything else. */
        manifest_free(parse_ok(HEADER "#\tindented\n# a modgate manifest 1 kernel=y, said in passing\n"
                                      "## " D1 "  a.ko\n"));
        /* Except what reads as a header. */
        check_error(HEADER "# modgate manifest 1 kernel=y (said in passing)\n", -EBADMSG,
                    "2: a second manifest header (two manifests joined?)");
}

TEST(order_and_duplicates) {
        _cleanup_(manifest_freep) Manifest *m = NULL;

        check_error(HEADER D1 "  b.ko\n" D2 "  a.ko\n", -EBADMSG,
                    "3: a.ko" WANT_ORDER
                    "b.ko on line 2");
        check_error(HEADER D1 "  a.ko\n# between\n" D2 "  a.ko\n", -EBADMSG,
                    "4: duplicate entry for a.ko (also on line 2)");
        check_error(HEADER D1 "  a.ko\n" D1 "  a.ko\n", -EBADMSG,
                    "3: duplicate entry for a.ko (also on line 2)");
        /* Byte order, not a locale's: '_' (0x5f) sorts after 'Z' and before 'a', '-' before '.'. */
        check_error(HEADER D1 "  a_b.ko\n" D2 "  aZb.ko\n", -EBADMSG,
                    "3: aZb.ko" WANT_ORDER
                    "a_b.ko on line 2");
        check_error(HEADER D1 "  kernel/\xc3\xa9.ko\n" D2 "  kernel/z.ko\n", -EBADMSG,
                    "3: kernel/z.ko" WANT_ORDER
                    "kernel/\xc3\xa9.ko on line 2");
        m = parse_ok(HEADER D1 "  a-b.ko\n" D2 "  a.ko\n" D3 "  aZb.ko\n" D1 "  a_b.ko\n" D2 "  ab.ko\n"
                     D3 "  kernel/z.ko\n" D1 "  kernel/\xc3\xa9.ko\n");
        check(manifest_entries(m) == 7);
        check_digest(m, "a_b.ko", D1);
        check_digest(m, "kernel/\xc3\xa9.ko", D1);
        /* A directory sorts by its name followed by '/', as sha256sum lists a sorted find(1). */
        manifest_free(TAKE_PTR(m));
        m = parse_ok(HEADER D1 "  kernel/a-b.ko\n" D2 "  kernel/a/b.ko\n");
        check(manifest_entries(m) == 2);
        check_error(HEADER D2 "  kernel/a/b.ko\n" D1 "  kernel/a-b.ko\n", -EBADMSG,
                    "3: kernel/a-b.ko" WANT_ORDER
                    "kernel/a/b.ko on line 2");
}

/* Version 2: each entry may be followed by one info line, what its bytes' .modinfo says. */
#define HEADER2 "# modgate manifest 2 kernel=" KVER " origin=kernel-install\n"
#define WANT_INFO_PLACE "an info line ('#: ') must come right after its entry, once"
#define WANT_INFO_FIELDS "the info line: expected KEY=VALUE fields separated by single spaces"
#define WANT_INFO_ORDER "the info line: fields out of order or repeated (name, signature, signer, key, hash, " \
                        "then any alias)"
#define WANT_INFO_BACKSLASH "the info line: a value has a '\\' that is not \\xHH (lowercase hex)"
#define WANT_INFO_NEEDLESS "the info line: a value escapes a byte that is written as it is (or NUL)"

static void digest_of(const char *hex, uint8_t ret[static SHA256_DIGEST_SIZE]) {
        check(sha256_from_hex(hex, ret) == 0);
}

/* Looks relpath up with the digest hex and alias_key, expecting its info. */
static void lookup_info(const Manifest *m, const char *relpath, const char *hex, const char *alias_key,
                        ModInfo *ret) {
        uint8_t d[SHA256_DIGEST_SIZE];
        int r;

        digest_of(hex, d);
        *ret = (ModInfo) {};
        r = manifest_lookup_modinfo(m, relpath, d, alias_key, ret);
        if (r != 1)
                fprintf(stderr, "no info for %s (%d)\n", relpath, r);
        check(r == 1);
}

/* Expects no info for relpath with the digest hex, and *ret left alone. */
static void check_no_info(const Manifest *m, const char *relpath, const char *hex) {
        uint8_t d[SHA256_DIGEST_SIZE];
        ModInfo info = { .name = (char *) "untouched" };

        digest_of(hex, d);
        check(manifest_lookup_modinfo(m, relpath, d, "x", &info) == 0);
        check_streq(info.name, "untouched");
        check(!info.is_signed && !info.signer && !info.alias);
}

TEST(version2_valid) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_(modinfo_done) ModInfo info = {};

        m = parse_ok(HEADER2
                     "# written by hand, for this test\n"
                     D1 "  kernel/drivers/net/dummy.ko.xz\n"
                     "#: name=dummy signature=PKCS#7 signer=Debian\\x20Secure\\x20Boot\\x20CA key=4b:6e:f5 "
                        "hash=sha256 alias=rtnl-link-dummy\n"
                     D2 "  kernel/drivers/net/vxlan/vxlan.ko.xz\n"
                     "#: name=vxlan signature= alias=rtnl-link-vxlan alias=net-pf-16-proto-*\n"
                     D3 "  updates/dkms/no-info.ko\n"
                     "# a comment may follow an entry's info line\n"
                     D1 "  updates/dkms/zfs.ko\n"
                     "#: name=zfs alias=devname:zfs alias=char-major-10-249\n"
                     D2 "  updates/plain.ko\n"
                     "#: name=plain\n");
        check(manifest_version(m) == 2);
        check_streq(manifest_kernel(m), KVER);
        check(manifest_entries(m) == 5);
        check_digest(m, "kernel/drivers/net/dummy.ko.xz", D1);
        check_digest(m, "updates/dkms/no-info.ko", D3);
        check_digest(m, "updates/plain.ko", D2);

        /* Signed, every field known. */
        lookup_info(m, "kernel/drivers/net/dummy.ko.xz", D1, "rtnl-link-dummy", &info);
        check_streq(info.name, "dummy");
        check(info.is_signed);
        check_streq(info.signature_type, "PKCS#7");
        check_streq(info.signer, "Debian Secure Boot CA");
        check_streq(info.signature_key, "4b:6e:f5");
        check_streq(info.signature_hash, "sha256");
        check_streq(info.alias, "rtnl-link-dummy");
        modinfo_done(&info);

        /* Signed, but what signed it unknown; a second alias is the one that matches. */
        lookup_info(m, "kernel/drivers/net/vxlan/vxlan.ko.xz", D2, "net-pf-16-proto-12", &info);
        check_streq(info.name, "vxlan");
        check(info.is_signed);
        check(!info.signature_type && !info.signer && !info.signature_key && !info.signature_hash);
        check_streq(info.alias, "net-pf-16-proto-*");
        modinfo_done(&info);

        /* Unsigned, with aliases. */
        lookup_info(m, "updates/dkms/zfs.ko", D1, "char-major-10-249", &info);
        check_streq(info.name, "zfs");
        check(!info.is_signed);
        check(!info.signature_type && !info.signer && !info.signature_key && !info.signature_hash);
        check_streq(info.alias, "char-major-10-249");
        modinfo_done(&info);

        /* Unsigned, no alias. */
        lookup_info(m, "updates/plain.ko", D2, "plain", &info);
        check_streq(info.name, "plain");
        check(!info.is_signed && !info.signature_type && !info.alias);
        modinfo_done(&info);

        /* Only for the bytes listed: another digest, an entry without info, no entry. */
        check_no_info(m, "kernel/drivers/net/dummy.ko.xz", D2);
        check_no_info(m, "updates/dkms/zfs.ko", D3);
        check_no_info(m, "updates/dkms/no-info.ko", D3);
        check_no_info(m, "updates/dkms/no-info.ko", D1);
        check_no_info(m, "kernel/drivers/net/dummy.ko", D1);
        check_no_info(m, "updates/zzz.ko", D1);
        check_no_info(NULL, "updates/plain.ko", D2);
        check_no_info(m, NULL, D2);

        /* A header and info lines only after entries: no entries, no info. */
        manifest_free(TAKE_PTR(m));
        m = parse_ok("# modgate manifest 2 kernel=6.1.0 origin=admin\n# #: name=x\n");
        check(manifest_version(m) == 2);
        check(manifest_entries(m) == 0);
        check_no_info(m, "a.ko", D1);

        /* "#:" without its space, or with a tab, is a comment as in version 1. */
        manifest_free(TAKE_PTR(m));
        m = parse_ok(HEADER2 D1 "  a.ko\n#:name=x\n#:\tname=y\n#:\n");
        check(manifest_entries(m) == 1);
        check_no_info(m, "a.ko", D1);
}

TEST(version1_info_is_comment) {
        _cleanup_(manifest_freep) Manifest *m = NULL;

        /* Version 1 readers skipped "#:" lines as comments; so does this one, whatever they hold. */
        m = parse_ok(HEADER
                     "#: name=before-any-entry\n"
                     D1 "  a.ko\n"
                     "#: name=a signature=PKCS#7\n"
                     "#: name=a a second one\n"
                     "#: \\x4A bad=escape  double\n"
                     D2 "  b.ko\n");
        check(manifest_version(m) == 1);
        check(manifest_entries(m) == 2);
        check_digest(m, "a.ko", D1);
        check_digest(m, "b.ko", D2);
        check_no_info(m, "a.ko", D1);
        check_no_info(m, "b.ko", D2);
}

TEST(version2_alias_and_name) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_(modinfo_done) ModInfo info = {};

        m = parse_ok(HEADER2
                     D1 "  kernel/snd-hda-intel.ko\n"
                     "#: name=snd-hda-intel alias=pci:v00008086d*sv*sd*bc04sc03i00* alias=pci:v00008086d0000A0C8* "
                        "alias=snd-hda\n");

        /* The first pattern that matches, not the best one; the name as the kernel has it, with '_'. */
        lookup_info(m, "kernel/snd-hda-intel.ko", D1, "pci:v00008086d0000A0C8sv00001028sd00000A0Cbc04sc03i00",
                    &info);
        check_streq(info.name, "snd_hda_intel");
        check_streq(info.alias, "pci:v00008086d*sv*sd*bc04sc03i00*");
        modinfo_done(&info);

        lookup_info(m, "kernel/snd-hda-intel.ko", D1, "pci:v00008086d0000A0C8sv0sd0bc03sc00i00", &info);
        check_streq(info.alias, "pci:v00008086d0000A0C8*");
        modinfo_done(&info);

        lookup_info(m, "kernel/snd-hda-intel.ko", D1, "snd-hda", &info);
        check_streq(info.alias, "snd-hda");
        modinfo_done(&info);

        /* No pattern matches, or no key to match: no alias, the rest as it is. */
        lookup_info(m, "kernel/snd-hda-intel.ko", D1, "snd-hda-", &info);
        check(!info.alias);
        check_streq(info.name, "snd_hda_intel");
        modinfo_done(&info);

        lookup_info(m, "kernel/snd-hda-intel.ko", D1, NULL, &info);
        check(!info.alias);
        check_streq(info.name, "snd_hda_intel");
        modinfo_done(&info);
}

TEST(version2_format) {
        static const char line[] =
                "name=we\\x20ird\\x5c signature=PKCS#7 signer=Build\\x20Key\\x5c\\x09x\\x7f\xc3\xa9 "
                "key=ab:cd hash=sha512 alias=usb:v1234p*d*dc*dsc*dp*ic*isc*ip*in* "
                "alias=a\\x20b\\x09c\\x7f\xc3\xa9\\x5c\\x5c*";
        char *aliases[] = {
                (char *) "usb:v1234p*d*dc*dsc*dp*ic*isc*ip*in*",
                (char *) "",            /* skipped: an empty pattern is not written */
                (char *) "a b\tc\x7f\xc3\xa9\\\\*",
                NULL,
        };
        ModInfo in = {
                .name = (char *) "we ird\\",
                .is_signed = true,
                .signature_type = (char *) "PKCS#7",
                .signer = (char *) "Build Key\\\tx\x7f\xc3\xa9",
                .signature_key = (char *) "ab:cd",
                .signature_hash = (char *) "sha512",
        };
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_(modinfo_done) ModInfo out = {};
        _cleanup_free_ char *formatted = NULL, *text = NULL;

        check(manifest_info_format(&in, aliases, &formatted) == 0);
        check_streq(formatted, line);

        /* Read back, each field as it was. */
        check(asprintf(&text, HEADER2 D1 "  a.ko\n" MANIFEST_INFO_PREFIX "%s\n", formatted) > 0);
        m = parse_ok(text);
        lookup_info(m, "a.ko", D1, "a b\tc\x7f\xc3\xa9\\xyz", &out);
        check_streq(out.name, in.name);
        check(out.is_signed);
        check_streq(out.signature_type, in.signature_type);
        check_streq(out.signer, in.signer);
        check_streq(out.signature_key, in.signature_key);
        check_streq(out.signature_hash, in.signature_hash);
        check_streq(out.alias, aliases[2]);
        modinfo_done(&out);
        lookup_info(m, "a.ko", D1, "usb:v1234p5678d0100dc00dsc00dp00ic03isc01ip01in00", &out);
        check_streq(out.alias, aliases[0]);
        modinfo_done(&out);

        /* Signed with nothing known: an empty signature=; then without aliases. */
        in = (ModInfo) { .name = (char *) "x", .is_signed = true };
        free(formatted);
        check(manifest_info_format(&in, NULL, &formatted) == 0);
        check_streq(formatted, "name=x signature=");

        /* Unsigned: what a signature would say is not written; empty strings are as unknown. */
        in = (ModInfo) { .name = (char *) "x", .signer = (char *) "S", .signature_type = (char *) "PKCS#7" };
        free(formatted);
        check(manifest_info_format(&in, aliases + 1, &formatted) == 0);
        check_streq(formatted, "name=x alias=a\\x20b\\x09c\\x7f\xc3\xa9\\x5c\\x5c*");
        in = (ModInfo) { .name = (char *) "x", .is_signed = true, .signature_type = (char *) "",
                         .signer = (char *) "", .signature_key = (char *) "", .signature_hash = (char *) "h" };
        free(formatted);
        check(manifest_info_format(&in, NULL, &formatted) == 0);
        check_streq(formatted, "name=x signature= hash=h");

        /* Every byte that is escaped, and none other. */
        for (unsigned c = 1; c < 256; c++)
                check(manifest_info_byte_escaped((unsigned char) c) == (c <= ' ' || c == 0x7f || c == '\\'));
        check(manifest_info_byte_escaped(0));

        /* No name, nothing to write. */
        free(formatted);
        formatted = NULL;
        in = (ModInfo) { .is_signed = true, .signer = (char *) "S" };
        check(manifest_info_format(&in, NULL, &formatted) == -EINVAL);
        check(!formatted);
        in.name = (char *) "";
        check(manifest_info_format(&in, NULL, &formatted) == -EINVAL);
        check(!formatted);
}

/* HEADER2, an entry and one info line: each error is on line 3. */
static void check_info_error(const char *fields, const char *message) {
        _cleanup_free_ char *text = NULL, *want = NULL;

        check(asprintf(&text, HEADER2 D1 "  a.ko\n#: %s\n", fields) > 0);
        check(asprintf(&want, "3: %s", message) > 0);
        check_error(text, -EBADMSG, want);
}

TEST(version2_info_errors) {
        static const struct {
                const char *fields;
                const char *message;
        } table[] = {
                { "", "the info line: the line has no fields" },
                { "name=a  signature=", WANT_INFO_FIELDS },                     /* double space */
                { "name=a ", WANT_INFO_FIELDS },                                /* trailing space */
                { " name=a", WANT_INFO_FIELDS },                                /* leading space */
                { "name=a signature", WANT_INFO_FIELDS },                       /* no '=' */
                { "name", WANT_INFO_FIELDS },
                { "name=a =x", WANT_INFO_FIELDS },                              /* no key */
                { "name=a size=3", "the info line: unknown field (name, signature, signer, key, hash, alias)" },
                { "Name=a", "the info line: unknown field (name, signature, signer, key, hash, alias)" },
                { "signature=PKCS#7", "the info line: the first field must be name=" },
                { "alias=a name=a", "the info line: the first field must be name=" },
                { "name=a alias=x signature=", WANT_INFO_ORDER },
                { "name=a signature= hash=h key=k", WANT_INFO_ORDER },
                { "name=a signature= signer=s signer=t", WANT_INFO_ORDER },
                { "name=a signature= signature=", WANT_INFO_ORDER },
                { "name=a name=b", WANT_INFO_ORDER },
                { "name=a signer=s", "the info line: signer=, key= and hash= come only after signature=" },
                { "name=a key=k", "the info line: signer=, key= and hash= come only after signature=" },
                { "name=a hash=h alias=x", "the info line: signer=, key= and hash= come only after signature=" },
                { "name=", "the info line: a value is empty (only signature= may be)" },
                { "name=a signature= signer=", "the info line: a value is empty (only signature= may be)" },
                { "name=a alias=x alias=", "the info line: a value is empty (only signature= may be)" },
                { "name=a\\", WANT_INFO_BACKSLASH },                            /* lone backslash */
                { "name=a\\b", WANT_INFO_BACKSLASH },
                { "name=a\\x4", WANT_INFO_BACKSLASH },
                { "name=a\\x", WANT_INFO_BACKSLASH },
                { "name=a\\X20", WANT_INFO_BACKSLASH },
                { "name=a\\x4A", WANT_INFO_BACKSLASH },
                { "name=a\\x2G", WANT_INFO_BACKSLASH },
                { "name=a\\n", WANT_INFO_BACKSLASH },
                { "name=a alias=\\x5C", WANT_INFO_BACKSLASH },
                { "name=a\\x41", WANT_INFO_NEEDLESS },                          /* 'A' needs no escape */
                { "name=a\\xc3\\xa9", WANT_INFO_NEEDLESS },                     /* nor bytes beyond ASCII */
                { "name=a\\x00", WANT_INFO_NEEDLESS },
                { "name=a\tb", "the info line: a value has a byte that must be written as \\xHH" },
                { "name=a signature= signer=s\t", "the info line: a value has a byte that must be written as \\xHH" },
        };

        for (size_t i = 0; i < ELEMENTSOF(table); i++)
                check_info_error(table[i].fields, table[i].message);

        /* Where an info line may be: right after its entry, once. */
        check_error(HEADER2 "#: name=a\n", -EBADMSG, "2: " WANT_INFO_PLACE);
        check_error(HEADER2 "# a comment\n#: name=a\n" D1 "  a.ko\n", -EBADMSG, "3: " WANT_INFO_PLACE);
        check_error(HEADER2 D1 "  a.ko\n# a comment\n#: name=a\n", -EBADMSG, "4: " WANT_INFO_PLACE);
        check_error(HEADER2 D1 "  a.ko\n#: name=a\n#: name=a\n", -EBADMSG, "4: " WANT_INFO_PLACE);
        check_error(HEADER2 D1 "  a.ko\n#: name=a\n" D2 "  b.ko\n#: name=b\n#: name=b\n", -EBADMSG,
                    "6: " WANT_INFO_PLACE);
        /* Line errors come first, as for any line. */
        check_error(HEADER2 D1 "  a.ko\n#: name=a\x1b\n", -EBADMSG,
                    "3: the line contains the control character 0x1b");
        check_error(HEADER2 D1 "  a.ko\n#: name=a\x7f\n", -EBADMSG,
                    "3: the line contains the control character 0x7f");
        check_error(HEADER2 D1 "  a.ko\n#: name=a", -EBADMSG,
                    "3: the last line does not end with a newline (is the file truncated?)");

        /* The same line is fine right after its entry. */
        manifest_free(parse_ok(HEADER2 D1 "  a.ko\n#: name=a\n"));
}

/* A valid manifest of exactly size bytes: entries of minimal length, then one comment to fill up. */
static char *manifest_of_size(size_t size, size_t *ret_entries) {
        const size_t entry_len = SHA256_HEX_SIZE - 1 + 2 + strlen("m0000000.ko") + 1;
        size_t n = (size - strlen(HEADER) - 3) / entry_len, off;
        char *buf = malloc(size + 1);

        check(buf);
        off = (size_t) sprintf(buf, HEADER);
        for (size_t i = 0; i < n; i++)
                off += (size_t) sprintf(buf + off, D1 "  m%07zu.ko\n", i);
        check(size - off >= 2);
        buf[off] = '#';
        memset(buf + off + 1, 'x', size - off - 2);
        buf[size - 1] = '\n';
        buf[size] = '\0';
        *ret_entries = n;
        return buf;
}

TEST(size_cap) {
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_free_ char *buf = NULL, *message = NULL;
        size_t n;

        buf = manifest_of_size(MANIFEST_FILE_MAX, &n);
        check(n > 800000);
        check(parse_n(buf, MANIFEST_FILE_MAX, &m, &message) == 0);
        check(manifest_entries(m) == n);
        check(manifest_lookup(m, "m0000000.ko"));
        check(manifest_lookup(m, "m0500000.ko"));
        {
                char last[32];
                snprintf(last, sizeof(last), "m%07zu.ko", n - 1);
                check(manifest_lookup(m, last));
                snprintf(last, sizeof(last), "m%07zu.ko", n);
                check(!manifest_lookup(m, last));
        }
        manifest_free(TAKE_PTR(m));
        free(buf);

        buf = manifest_of_size(MANIFEST_FILE_MAX + 1, &n);
        check_error_n(buf, MANIFEST_FILE_MAX + 1, -EFBIG, "the file is larger than 64 MiB");
}

TEST(entries_cap) {
        /* The shortest entry is 64 hex digits, two spaces, "a.ko" and a newline: a file within the size
         * cap holds fewer entries than the entry cap, so the parser's entry check is a second line of
         * defense that no input reaches. If the size cap grows, this fails: then test the entry cap. */
        const size_t shortest = SHA256_HEX_SIZE - 1 + 2 + strlen("a.ko") + 1;

        check(shortest == 71);
        check((size_t) MANIFEST_FILE_MAX / shortest < (size_t) MANIFEST_ENTRIES_MAX);
        check(manifest_path_problem("a.ko") == NULL);
        check(manifest_path_problem(".ko") != NULL);
}

TEST(validators) {
        static const char *const good_kernels[] = {
                "6.12.48+deb13-amd64", "6.11.4-301.fc41.x86_64", "6.8.0-45-generic", "6.11.4-arch1-1",
                "5.14.0-427.13.1.el9_4.x86_64", "6.6.0~rc1", "x", "...",
        };
        static const char *const bad_kernels[] = {
                "", ".", "..", "6.1/evil", "6.1 x", "6.1\n", "$(id)", "6.1*", "a=b",
                "12345678901234567890123456789012345678901234567890123456789012345",
        };

        for (size_t i = 0; i < ELEMENTSOF(good_kernels); i++)
                check(manifest_kernel_is_valid(good_kernels[i]));
        for (size_t i = 0; i < ELEMENTSOF(bad_kernels); i++)
                check(!manifest_kernel_is_valid(bad_kernels[i]));

        check(manifest_name_is_module("a.ko"));
        check(manifest_name_is_module("dummy.ko.xz"));
        check(manifest_name_is_module("zfs.ko.zst"));
        check(manifest_name_is_module("x.ko.gz"));
        check(!manifest_name_is_module(".ko"));
        check(!manifest_name_is_module(".ko.xz"));
        check(!manifest_name_is_module("dummy.ko.xz.sig"));
        check(!manifest_name_is_module("dummy.ko.bz2"));
        check(!manifest_name_is_module("dummy.o"));
        check(!manifest_name_is_module("modules.dep"));
        check(!manifest_name_is_module(""));
        check(!manifest_path_problem("kernel/drivers/net/dummy.ko.xz"));
        check(!manifest_path_problem("a.ko"));
}

/* A manifest file in root with this mode, opened read-only. */
static int open_manifest(const char *root, const char *name, const char *text, mode_t mode) {
        _cleanup_free_ char *p = tmp_path(root, name);
        int fd;

        tmp_write(root, name, text);
        check(chmod(p, mode) == 0);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        check(fd >= 0);
        return fd;
}

static void check_load_error(int fd, int error, const char *message) {
        _cleanup_free_ char *got = NULL;
        Manifest *m = NULL;
        int r;

        r = manifest_load_fd(fd, &m, &got);
        if (r != error)
                fprintf(stderr, "expected %d, got %d (%s)\n", error, r, got);
        check(r == error);
        check(!m);
        check_streq(got, message);
}

TEST(load_fd_metadata) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_free_ char *path = tmp_path(root, "x.sha256"), *fifo = tmp_path(root, "fifo");
        _cleanup_free_ char *want = NULL;
        const char *text = HEADER D1 "  a.ko\n";
        int fd;

        /* The mode is looked at before the owner, so that a test that cannot chown sees both. */
        fd = open_manifest(root, "x.sha256", text, 0664);
        check_load_error(fd, -EPERM, "refusing a manifest writable by group or others (mode 0664)");
        close(fd);
        fd = open_manifest(root, "x.sha256", text, 0646);
        check_load_error(fd, -EPERM, "refusing a manifest writable by group or others (mode 0646)");
        close(fd);
        fd = open_manifest(root, "x.sha256", text, 02622);
        check_load_error(fd, -EPERM, "refusing a manifest writable by group or others (mode 2622)");
        close(fd);

        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        check(fd >= 0);
        check_load_error(fd, -EPERM, "refusing a directory: a manifest must be a regular file");
        close(fd);
        check(mkfifo(fifo, 0644) == 0);
        fd = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        check(fd >= 0);
        check_load_error(fd, -EPERM, "refusing a FIFO: a manifest must be a regular file");
        close(fd);
        fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        check(fd >= 0);
        check_load_error(fd, -EPERM, "refusing a character device: a manifest must be a regular file");
        close(fd);
        check_load_error(-1, -EBADF, "failed to stat: Bad file descriptor");

        if (geteuid() == 0) {
                _cleanup_(manifest_freep) Manifest *m = NULL;

                /* Root: a file of another owner is refused, root's own is read. */
                fd = open_manifest(root, "x.sha256", text, 0644);
                check(fchown(fd, 4711, 4711) == 0);
                check_load_error(fd, -EPERM,
                                 "refusing a manifest owned by uid 4711: it must be owned by root");
                check(fchown(fd, 0, 4711) == 0);
                check(manifest_load_fd(fd, &m, NULL) == 0);
                check(manifest_entries(m) == 1);
                check_digest(m, "a.ko", D1);
                close(fd);
                printf("# as root: the owner check refused uid 4711 and accepted root\n");
        } else {
                /* Not root: every file this test makes is refused for its owner. A file of root's passes
                 * the metadata checks and reaches the parser (which refuses /etc/passwd's text). */
                struct stat st;

                fd = open_manifest(root, "x.sha256", text, 0644);
                check(asprintf(&want, "refusing a manifest owned by uid %u: it must be owned by root",
                               (unsigned) geteuid()) > 0);
                check_load_error(fd, -EPERM, want);
                close(fd);

                fd = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
                check(fd >= 0);
                check(fstat(fd, &st) == 0 && st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)));
                check_load_error(fd, -EBADMSG, "1: " WANT_HEADER);
                close(fd);
                printf("# not root: the owner check refused uid %u; root's /etc/passwd reached the parser\n",
                       (unsigned) geteuid());
        }
}

TEST(load_fd_reads) {
        _cleanup_tmp_root_ char *root = tmp_root_new();
        _cleanup_(manifest_freep) Manifest *m = NULL;
        _cleanup_free_ char *path = tmp_path(root, "big.sha256");
        int fd;

        if (geteuid() != 0) {
                /* The reading behind the metadata checks is manifest_parse()'s, tested above; the
                 * fd-specific parts need a root-owned file. Shown to fail here rather than pass. */
                fd = open_manifest(root, "x.sha256", HEADER D1 "  a.ko\n", 0644);
                check(manifest_load_fd(fd, &m, NULL) == -EPERM);
                close(fd);
                printf("# not root: only the refusal of the test's own file could be checked\n");
                return;
        }

        /* From offset 0 whatever the fd's offset, which stays where it was. */
        fd = open_manifest(root, "x.sha256", HEADER D1 "  a.ko\n" D2 "  b.ko\n", 0644);
        check(lseek(fd, 30, SEEK_SET) == 30);
        check(manifest_load_fd(fd, &m, NULL) == 0);
        check(lseek(fd, 0, SEEK_CUR) == 30);
        check(manifest_entries(m) == 2);
        check_digest(m, "b.ko", D2);
        check_streq(manifest_kernel(m), KVER);
        close(fd);

        /* Errors of the text, with their line. */
        fd = open_manifest(root, "x.sha256", HEADER D1 "  b.ko\n" D2 "  a.ko\n", 0600);
        check_load_error(fd, -EBADMSG, "3: a.ko" WANT_ORDER
                         "b.ko on line 2");
        close(fd);

        /* Larger than the cap, by its size alone (a sparse file: nothing is read), and one that fits. */
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        check(fd >= 0);
        check(ftruncate(fd, MANIFEST_FILE_MAX + 1) == 0);
        check_load_error(fd, -EFBIG, "the file is larger than 64 MiB");
        check(ftruncate(fd, MANIFEST_FILE_MAX) == 0);
        check_load_error(fd, -EBADMSG, "1: the line contains a NUL byte");
        close(fd);

        /* A descriptor that cannot be read. */
        fd = open(path, O_WRONLY | O_CLOEXEC);
        check(fd >= 0);
        check_load_error(fd, -EBADF, "failed to read: Bad file descriptor");
        close(fd);
        printf("# as root: offsets, text errors, the size cap and read errors through the fd\n");
}

int main(void) {
        RUN(parse_valid);
        RUN(origins);
        RUN(lookup);
        RUN(header_errors);
        RUN(entry_errors);
        RUN(path_errors);
        RUN(path_length);
        RUN(line_errors);
        RUN(order_and_duplicates);
        RUN(version2_valid);
        RUN(version1_info_is_comment);
        RUN(version2_alias_and_name);
        RUN(version2_format);
        RUN(version2_info_errors);
        RUN(size_cap);
        RUN(entries_cap);
        RUN(validators);
        RUN(load_fd_metadata);
        RUN(load_fd_reads);
        return tests_done();
}
