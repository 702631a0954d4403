/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compression.h"
#include "probe-client.h"
#include "tests.h"
#include "trust.h"

static FileOrigin good(void) {
        return (FileOrigin) {
                .mode = S_IFREG | 0644,
                .uid = 0,
                .sb_ro = true,
                .mount_ro = true,
                .fstype = "erofs",
        };
}

TEST(check_file) {
        FileOrigin o = good();

        check(trust_check_file(&o) == TRUST_OK);

        o = good();
        o.mode = S_IFDIR | 0755;
        check(trust_check_file(&o) == TRUST_NOT_REGULAR);

        o = good();
        o.mode = S_IFIFO | 0644;
        check(trust_check_file(&o) == TRUST_NOT_REGULAR);

        o = good();
        o.uid = 1000;
        check(trust_check_file(&o) == TRUST_NOT_ROOT_OWNED);

        o = good();
        o.mode = S_IFREG | 0664;
        check(trust_check_file(&o) == TRUST_WRITABLE_BY_OTHERS);

        o = good();
        o.mode = S_IFREG | 0646;
        check(trust_check_file(&o) == TRUST_WRITABLE_BY_OTHERS);

        for (TrustVerdict v = 0; v < _TRUST_VERDICT_MAX; v++)
                check(trust_verdict_to_string(v));
        check(!trust_verdict_to_string(_TRUST_VERDICT_MAX));
}

/* A file on a read-only block device: read-only evidence holds. */
static Origin block(const char *device, bool ro) {
        Origin o = { .file = good(), .backing = BACKING_BLOCK, .device_ro = ro };

        snprintf(o.device, sizeof(o.device), "%s", device);
        snprintf(o.device_writable, sizeof(o.device_writable), "%s", ro ? "" : device);
        return o;
}

static void check_read_only(const Origin *o, int want, const char *reason) {
        _cleanup_free_ char *why = NULL;

        check(trust_read_only(o, &why) == want);
        if (want)
                check(!why);
        else {
                check(why);
                check_streq(why, reason);
        }
}

TEST(read_only) {
        static const char *const never[] = { "tmpfs", "nfs4", "fuse.sshfs", "overlay", "9p", "virtiofs", "ramfs",
                                             "cifs", "" };
        Origin o, file, tmpfs;

        o = block("vda1", true);
        check_read_only(&o, 1, NULL);

        o = block("vda1", false);
        check_read_only(&o, 0, "block device vda1 is writable");

        /* A read-only dm device over a writable disk. */
        o = block("dm-3", false);
        snprintf(o.device_writable, sizeof(o.device_writable), "vdb");
        check_read_only(&o, 0, "vdb is below block device dm-3 and is writable or a loop device");

        /* A read-only bind mount of a writable file system, and file systems that never count. */
        o = block("vda1", true);
        o.file.sb_ro = false;
        snprintf(o.file.fstype, sizeof(o.file.fstype), "ext4");
        check_read_only(&o, 0, "the ext4 file system is writable (superblock not read-only)");
        for (size_t i = 0; i < ELEMENTSOF(never); i++) {
                _cleanup_free_ char *why = NULL;

                o = block("vda1", true);
                snprintf(o.file.fstype, sizeof(o.file.fstype), "%s", never[i]);
                check(trust_read_only(&o, &why) == 0 && why);
        }
        o = (Origin) { .file = good(), .backing = BACKING_NONE };
        check_read_only(&o, 0, "no block device below the erofs file system");

        /* erofs on a read-only loop device whose image is on a writable tmpfs. */
        tmpfs = (Origin) { .file = good(), .backing = BACKING_NONE };
        snprintf(tmpfs.file.fstype, sizeof(tmpfs.file.fstype), "tmpfs");
        tmpfs.file.sb_ro = false;
        o = block("loop0", true);
        o.backing = BACKING_LOOP;
        o.backing_path = (char *) "/srv/tree.erofs";
        o.below = &tmpfs;
        check_read_only(&o, 0, "loop0's backing file /srv/tree.erofs: file system type tmpfs is never read-only "
                        "evidence");

        /* The same image on a read-only disk: holds; but not when others may write the image. */
        file = block("vdb", true);
        snprintf(file.file.fstype, sizeof(file.file.fstype), "ext4");
        o.below = &file;
        check_read_only(&o, 1, NULL);
        file.file.mode = S_IFREG | 0666;
        check_read_only(&o, 0, "loop0's backing file /srv/tree.erofs: file is writable by group or others");
        file.file.mode = S_IFREG | 0644;
        file.file.uid = 1000;
        check_read_only(&o, 0, "loop0's backing file /srv/tree.erofs: file is not owned by root");

        /* A writable loop device, whatever its file: LOOP_CHANGE_FD needs only write access to it... */
        file.file.uid = 0;
        o.device_ro = false;
        snprintf(o.device_writable, sizeof(o.device_writable), "loop0");
        check_read_only(&o, 0, "block device loop0 is writable");

        /* ...and a backing file that could not be opened. */
        o.device_ro = true;
        o.below = NULL;
        o.below_error = -ENOENT;
        check_read_only(&o, 0, "loop0's backing file /srv/tree.erofs cannot be checked: No such file or directory");

        /* erofs mounted from a file, which is on a read-only disk. */
        o = (Origin) { .file = good(), .backing = BACKING_FILE, .backing_path = (char *) "/srv/tree.erofs",
                       .below = &file };
        check_read_only(&o, 1, NULL);
        tmpfs.file.sb_ro = true;
        o.below = &tmpfs;
        check_read_only(&o, 0, "the file system's backing file /srv/tree.erofs: file system type tmpfs is never "
                        "read-only evidence");
}

static int decide(const Origin *o, unsigned accepted, ManifestMatch m, TrustDecision *d) {
        TrustInput in = { .origin = o, .accepted = accepted, .manifest = m, .manifest_detail = "kernel/x.ko.xz" };

        return trust_decide(&in, d);
}

TEST(decide) {
        TrustDecision d = {};
        Origin ro = block("vda1", true), rw = block("vda1", false);

        check(decide(&ro, EVIDENCE_DEFAULT, MANIFEST_NOT_CHECKED, &d) == 0);
        check(d.trusted && d.evidence == EVIDENCE_READ_ONLY && !d.reason && !d.needs_manifest);

        /* Writable: the manifest decides, once the caller has compared the bytes. */
        check(decide(&rw, EVIDENCE_DEFAULT, MANIFEST_NOT_CHECKED, &d) == 0);
        check(!d.trusted && d.needs_manifest && !d.reason);
        check(decide(&rw, EVIDENCE_DEFAULT, MANIFEST_MATCH, &d) == 0);
        check(d.trusted && d.evidence == EVIDENCE_MANIFEST);
        trust_decision_done(&d);
        check(decide(&rw, EVIDENCE_DEFAULT, MANIFEST_MISMATCH, &d) == 0);
        check(!d.trusted && d.verdict == TRUST_OK && !d.needs_manifest);
        check_streq(d.reason, "verity: vda1 is not a device-mapper device, and the file has no fs-verity; "
                        "read-only: block device vda1 is writable; manifest: the file's SHA-256 is not the "
                        "manifest's for kernel/x.ko.xz");
        trust_decision_done(&d);
        check(decide(&rw, EVIDENCE_MASK(EVIDENCE_MANIFEST), MANIFEST_NO_ENTRY, &d) == 0);
        check(!d.trusted);
        check_streq(d.reason, "manifest: the manifest has no entry for kernel/x.ko.xz");
        trust_decision_done(&d);

        /* Read-only evidence not accepted: even a read-only file goes by the manifest. */
        check(decide(&ro, EVIDENCE_MASK(EVIDENCE_MANIFEST), MANIFEST_NOT_CHECKED, &d) == 0);
        check(!d.trusted && d.needs_manifest);
        check(decide(&rw, EVIDENCE_MASK(EVIDENCE_READ_ONLY), MANIFEST_NOT_CHECKED, &d) == 0);
        check(!d.trusted && !d.needs_manifest);
        trust_decision_done(&d);

        /* Ownership: unverified, but trusted when accepted, after the manifest had its say; never
         * past the file checks. */
        check(decide(&rw, EVIDENCE_DEFAULT | EVIDENCE_MASK(EVIDENCE_OWNERSHIP), MANIFEST_NOT_CHECKED, &d) == 0);
        check(!d.trusted && d.needs_manifest);
        check(decide(&rw, EVIDENCE_DEFAULT | EVIDENCE_MASK(EVIDENCE_OWNERSHIP), MANIFEST_MISMATCH, &d) == 0);
        check(d.trusted && d.evidence == EVIDENCE_OWNERSHIP);
        rw.file.uid = 1000;
        check(decide(&rw, EVIDENCE_DEFAULT | EVIDENCE_MASK(EVIDENCE_OWNERSHIP), MANIFEST_NOT_CHECKED, &d) == 0);
        check(!d.trusted && !d.needs_manifest && d.verdict == TRUST_NOT_ROOT_OWNED);
        check_streq(d.reason, "file is not owned by root");
        trust_decision_done(&d);

        check(decide(&ro, 0, MANIFEST_NOT_CHECKED, &d) == 0);
        check(!d.trusted);
        check_streq(d.reason, "no evidence is accepted");
        trust_decision_done(&d);
}

/* Manifest evidence only where the bytes hashed are the bytes the kernel reads: never asked to
 * hash (needs_manifest) on FUSE, an overlay or a network file system, and refused even when the
 * caller says the bytes matched. */
TEST(decide_manifest_fstype) {
        static const char *const local[] = { "ext4", "xfs", "btrfs", "erofs", "squashfs", "f2fs", "tmpfs" };
        static const char *const remote[] = { "fuse", "fuse.squashfuse", "fuseblk", "overlay", "nfs", "nfs4",
                                              "cifs", "smb3", "9p", "virtiofs", "ceph", "vfat", "" };
        TrustDecision d = {};
        Origin o = block("vda1", false);

        for (size_t i = 0; i < ELEMENTSOF(local); i++) {
                check(trust_manifest_fstype(local[i]));
                snprintf(o.file.fstype, sizeof(o.file.fstype), "%s", local[i]);
                check(decide(&o, EVIDENCE_MASK(EVIDENCE_MANIFEST), MANIFEST_NOT_CHECKED, &d) == 0);
                check(!d.trusted && d.needs_manifest);
                check(decide(&o, EVIDENCE_MASK(EVIDENCE_MANIFEST), MANIFEST_MATCH, &d) == 0);
                check(d.trusted && d.evidence == EVIDENCE_MANIFEST);
        }
        for (size_t i = 0; i < ELEMENTSOF(remote); i++) {
                char want[256];

                check(!trust_manifest_fstype(remote[i]));
                o.backing = BACKING_NONE;
                snprintf(o.file.fstype, sizeof(o.file.fstype), "%s", remote[i]);
                snprintf(want, sizeof(want), "manifest: file system type %s is not a local disk file system: "
                         "the bytes hashed need not be the bytes the kernel reads",
                         remote[i][0] ? remote[i] : "(unknown)");
                check(decide(&o, EVIDENCE_MASK(EVIDENCE_MANIFEST), MANIFEST_NOT_CHECKED, &d) == 0);
                check(!d.trusted && !d.needs_manifest && d.verdict == TRUST_OK);
                check_streq(d.reason, want);
                trust_decision_done(&d);
                check(decide(&o, EVIDENCE_MASK(EVIDENCE_MANIFEST), MANIFEST_MATCH, &d) == 0);
                check(!d.trusted);
                check_streq(d.reason, want);
                trust_decision_done(&d);
                /* Ownership, when accepted, still vouches after the manifest could not. */
                check(decide(&o, EVIDENCE_MASK(EVIDENCE_MANIFEST) | EVIDENCE_MASK(EVIDENCE_OWNERSHIP),
                             MANIFEST_NOT_CHECKED, &d) == 0);
                check(d.trusted && d.evidence == EVIDENCE_OWNERSHIP);
        }
}

#define HASH_A "4b3c0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"
#define HASH_B "ffff0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"

static Origin dm(const char *target, const char *root_hash) {
        Origin o = block("dm-3", false);

        o.device_mapper = true;
        o.dm.n_targets = 1;
        snprintf(o.dm.target, sizeof(o.dm.target), "%s", target);
        snprintf(o.dm.root_hash, sizeof(o.dm.root_hash), "%s", root_hash);
        return o;
}

static void check_verity(const Origin *o, char **hashes, char **cmdline, char **digests, bool want_fsverity,
                         const char *want_reason) {
        _cleanup_free_ char *reason = NULL;
        TrustInput in = { .origin = o, .accepted = EVIDENCE_MASK(EVIDENCE_VERITY), .root_hashes = hashes,
                          .cmdline_root_hashes = cmdline, .fsverity_digests = digests };
        TrustDecision d = {};
        bool fsverity;
        int r;

        r = trust_verity(&in, &fsverity, &reason);
        check(r == !want_reason);
        if (want_reason)
                check_streq(reason, want_reason);
        else
                check(fsverity == want_fsverity);

        check(trust_decide(&in, &d) == 0);
        check(d.trusted == !want_reason);
        if (d.trusted)
                check(d.evidence == EVIDENCE_VERITY && d.fsverity == want_fsverity);
        else
                check(strncmp(d.reason, "verity: ", 8) == 0 && strcmp(d.reason + 8, want_reason) == 0);
        trust_decision_done(&d);
}

TEST(verity) {
        char *a[] = { (char *) HASH_A, NULL }, *b[] = { (char *) HASH_B, NULL };
        char *digests[] = { (char *) "sha256:" HASH_A, NULL };
        Origin o = dm("verity", HASH_A), lo = block("loop0", true);

        /* dm-verity: the root hash of the kernel's table, allowed by the root or the command line. */
        check_verity(&o, a, NULL, NULL, false, NULL);
        check_verity(&o, b, a, NULL, false, NULL);
        check_verity(&o, b, NULL, NULL, false,
                     "dm-3's root hash " HASH_A " is not allowed, and the file has no fs-verity");
        /* No root hash allowed anywhere: the table is not read (the prober is not asked), and the
         * reason says why no table could vouch. */
        check_verity(&o, NULL, NULL, NULL, false,
                     "no RootHash= is set, and the kernel command line names none, for dm-3, and the file has "
                     "no fs-verity");
        o.dm.ignore_corruption = true;
        check_verity(&o, a, NULL, NULL, false, "dm-3's verity target ignores corrupted blocks (ignore_corruption), "
                     "and the file has no fs-verity");
        o.dm.ignore_corruption = false;
        o.dm.corrupted = true;
        check_verity(&o, a, NULL, NULL, false,
                     "dm-3's verity target has found corrupted blocks, and the file has no fs-verity");
        o.dm.corrupted = false;
        o.dm.n_targets = 2;
        check_verity(&o, a, NULL, NULL, false, "dm-3 has 2 targets, not one verity target, and the file has no "
                     "fs-verity");

        /* Whatever the name or uuid says: linear is not verity. */
        o = dm("linear", "");
        snprintf(o.dm.name, sizeof(o.dm.name), "usr-verity");
        snprintf(o.dm.uuid, sizeof(o.dm.uuid), "CRYPT-VERITY-%s-usr-verity", HASH_A);
        check_verity(&o, a, NULL, NULL, false, "dm-3 is linear, not verity, and the file has no fs-verity");
        o.dm.n_targets = 0;
        check_verity(&o, a, NULL, NULL, false, "dm-3 has no table, and the file has no fs-verity");
        o.dm = (DmTable) { .error = -ECONNREFUSED, .error_detail = (char *) "the prober at /x cannot be reached" };
        check_verity(&o, a, NULL, NULL, false,
                     "dm-3's table cannot be read: the prober at /x cannot be reached, and the file has no fs-verity");
        o.dm.error_detail = NULL;
        check_verity(&o, a, NULL, NULL, false, "dm-3's table cannot be read: Connection refused, and the file has no "
                     "fs-verity");

        /* fs-verity: the file's own digest. */
        check_verity(&lo, a, NULL, NULL, false, "loop0 is not a device-mapper device, and the file has no fs-verity");
        lo.fsverity = (FsVerity) { .enabled = true, .digest = "sha256:" HASH_A };
        check_verity(&lo, NULL, NULL, digests, true, NULL);
        lo.fsverity.digest[7] = 'f';
        check_verity(&lo, NULL, NULL, digests, false, "loop0 is not a device-mapper device, and the file's fs-verity "
                     "digest sha256:fb3c0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab is not allowed");
        lo.fsverity = (FsVerity) { .error = -EOPNOTSUPP };
        snprintf(lo.file.fstype, sizeof(lo.file.fstype), "squashfs");
        check_verity(&lo, NULL, NULL, digests, false,
                     "loop0 is not a device-mapper device, and the file has no fs-verity (squashfs has none)");
        lo.fsverity = (FsVerity) { .error = -EIO };
        check_verity(&lo, NULL, NULL, digests, false, "loop0 is not a device-mapper device, and the file's "
                     "fs-verity cannot be measured: Input/output error");
        lo.backing = BACKING_FILE;
        lo.fsverity = (FsVerity) {};
        check_verity(&lo, NULL, NULL, digests, false,
                     "the squashfs file system is not on a block device, and the file has no fs-verity");
}

TEST(ima) {
        static const uint8_t sig[] = { 0x03, 2, 4, 0xde, 0xad, 0xbe, 0xef, 0, 2, 0xaa, 0xbb };
        static const uint8_t vsig[] = { 0x06, 3, 6, 0, 0, 0, 1, 0, 1, 0xaa };
        static const uint8_t ng[] = { 0x04, 4, 1, 2, 3 };
        static const uint8_t sha1[21] = { 0x01 };
        uint8_t bad[sizeof(sig)];
        TrustDecision d = {};
        Origin o = block("vda1", true);
        TrustInput in = { .origin = &o, .accepted = EVIDENCE_DEFAULT, .require_ima = true };
        Ima ima;

        ima_parse(sig, sizeof(sig), &ima);
        check(ima.type == IMA_SIGNATURE && ima.key_id == 0xdeadbeef);
        check_streq(ima.hash_algorithm, "sha256");
        ima_parse(vsig, sizeof(vsig), &ima);
        check(ima.type == IMA_VERITY_SIGNATURE && ima.key_id == 1);
        check_streq(ima.hash_algorithm, "sha512");
        ima_parse(ng, sizeof(ng), &ima);
        check(ima.type == IMA_DIGEST);
        check_streq(ima.hash_algorithm, "sha256");
        ima_parse(sha1, sizeof(sha1), &ima);
        check(ima.type == IMA_DIGEST);
        check_streq(ima.hash_algorithm, "sha1");
        ima_parse(sig, 0, &ima);
        check(ima.type == IMA_NONE);
        /* Truncated, a wrong size, a wrong version, an unknown type. */
        ima_parse(sig, sizeof(sig) - 1, &ima);
        check(ima.type == IMA_UNKNOWN);
        memcpy(bad, sig, sizeof(sig));
        bad[1] = 1;
        ima_parse(bad, sizeof(bad), &ima);
        check(ima.type == IMA_UNKNOWN);
        bad[1] = 2;
        bad[0] = 0x09;
        ima_parse(bad, sizeof(bad), &ima);
        check(ima.type == IMA_UNKNOWN);
        ima_parse(sha1, 5, &ima);
        check(ima.type == IMA_UNKNOWN);
        for (ImaType t = 0; t < _IMA_TYPE_MAX; t++)
                check(ima_type_to_string(t));

        /* Required: a signature, on top of the evidence; a digest is not one. */
        o.ima = (Ima) { .type = IMA_DIGEST };
        check(trust_decide(&in, &d) == 0);
        check(!d.trusted);
        check_streq(d.reason, "RequireIMASignature=yes: the file has no IMA signature (security.ima: digest)");
        trust_decision_done(&d);
        o.ima = (Ima) { .type = IMA_SIGNATURE };
        check(trust_decide(&in, &d) == 0);
        check(d.trusted && d.evidence == EVIDENCE_READ_ONLY);
        in.require_ima = false;
        o.ima = (Ima) {};
        check(trust_decide(&in, &d) == 0);
        check(d.trusted);
}

/* Only the prober's unit's process, as root, is believed: a root process elsewhere that put its own
 * socket at the prober's path is not, and neither is one in a cgroup below or beside the unit's. */
TEST(probe_peer) {
        static const char *const unit = "0::/system.slice/modgate-probe.service\n";
        char buf[256];

        check(!probe_peer_failure(0, unit, PROBE_CGROUP, buf, sizeof(buf)));
        check(!probe_peer_failure(0, "12:pids:/x\n1:name=systemd:/y\n0::/system.slice/modgate-probe.service\n",
                                  PROBE_CGROUP, buf, sizeof(buf)));
        check(!probe_peer_failure(0, "0::/system.slice/modgate-probe.service", PROBE_CGROUP, buf, sizeof(buf)));
        check_streq(probe_peer_failure(1000, unit, PROBE_CGROUP, buf, sizeof(buf)), "it is uid 1000, not root");
        check_streq(probe_peer_failure(0, "0::/system.slice/evil.service\n", PROBE_CGROUP, buf, sizeof(buf)),
                    "it runs in cgroup /system.slice/evil.service, not /system.slice/modgate-probe.service");
        check_streq(probe_peer_failure(0, "0::/system.slice/modgate-probe.service/sub\n", PROBE_CGROUP, buf,
                                       sizeof(buf)),
                    "it runs in cgroup /system.slice/modgate-probe.service/sub, not "
                    "/system.slice/modgate-probe.service");
        check_streq(probe_peer_failure(0, "0::/system.slice/modgate-probe.servic\n", PROBE_CGROUP, buf, sizeof(buf)),
                    "it runs in cgroup /system.slice/modgate-probe.servic, not /system.slice/modgate-probe.service");
        check_streq(probe_peer_failure(0, "0::/init.scope\n", PROBE_CGROUP, buf, sizeof(buf)),
                    "it runs in cgroup /init.scope, not /system.slice/modgate-probe.service");
        check_streq(probe_peer_failure(0, "1:name=systemd:/system.slice/modgate-probe.service\n", PROBE_CGROUP,
                                       buf, sizeof(buf)),
                    "its cgroup in the unified hierarchy cannot be read");
        check_streq(probe_peer_failure(0, "", PROBE_CGROUP, buf, sizeof(buf)),
                    "its cgroup in the unified hierarchy cannot be read");
        check(!probe_peer_failure(0, "0::/modgate-test-probe\n", "/modgate-test-probe", buf, sizeof(buf)));
}

TEST(evidence_names) {
        for (Evidence e = 0; e < _EVIDENCE_MAX; e++)
                check(evidence_from_string(evidence_to_string(e)) == e);
        check(evidence_from_string("readonly") == -EINVAL);
        check(evidence_from_string("") == -EINVAL);
        check(!evidence_to_string(_EVIDENCE_MAX));
}

TEST(compression) {
        static const uint8_t elf[] = { 0x7f, 'E', 'L', 'F', 2, 1 };
        static const uint8_t xz[] = { 0xfd, '7', 'z', 'X', 'Z', 0 };
        static const uint8_t zst[] = { 0x28, 0xb5, 0x2f, 0xfd, 0, 0 };
        static const uint8_t gz[] = { 0x1f, 0x8b, 8, 0, 0, 0 };
        static const uint8_t junk[] = { 'h', 'e', 'l', 'l', 'o', 0 };

        check(compression_from_magic(elf, sizeof(elf)) == COMPRESSION_NONE);
        check(compression_from_magic(xz, sizeof(xz)) == COMPRESSION_XZ);
        check(compression_from_magic(xz, 5) == COMPRESSION_UNKNOWN);
        check(compression_from_magic(zst, sizeof(zst)) == COMPRESSION_ZSTD);
        check(compression_from_magic(gz, sizeof(gz)) == COMPRESSION_GZIP);
        check(compression_from_magic(junk, sizeof(junk)) == COMPRESSION_UNKNOWN);
        check(compression_from_magic(junk, 0) == COMPRESSION_UNKNOWN);

        check(compression_from_sysfs("xz\n") == COMPRESSION_XZ);
        check(compression_from_sysfs("zstd") == COMPRESSION_ZSTD);
        check(compression_from_sysfs("gzip\n") == COMPRESSION_GZIP);
        check(compression_from_sysfs("none") == COMPRESSION_UNKNOWN);
        check(compression_from_sysfs("xzz") == COMPRESSION_UNKNOWN);
        check(compression_from_sysfs("") == COMPRESSION_UNKNOWN);
}

int main(void) {
        RUN(check_file);
        RUN(read_only);
        RUN(decide);
        RUN(decide_manifest_fstype);
        RUN(verity);
        RUN(ima);
        RUN(probe_peer);
        RUN(evidence_names);
        RUN(compression);
        return tests_done();
}
