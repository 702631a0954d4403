/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <linux/fsverity.h>
#include <linux/mount.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "fileio.h"
#include "loop-util.h"
#include "mountinfo.h"
#include "origin.h"
#include "parse-util.h"

/* The superblock flag statmount() reports, the same bit as MS_RDONLY. */
#ifndef SB_RDONLY
#define SB_RDONLY 1
#endif

static const char *const backing_table[_BACKING_MAX] = {
        [BACKING_NONE] = "none",
        [BACKING_BLOCK] = "block",
        [BACKING_LOOP] = "loop",
        [BACKING_FILE] = "file",
};

const char *backing_to_string(Backing b) {
        return b >= 0 && b < _BACKING_MAX ? backing_table[b] : NULL;
}

void dm_table_done(DmTable *t) {
        free(t->error_detail);
        free(t->options);
        *t = (DmTable) {};
}

static const char *const ima_type_table[_IMA_TYPE_MAX] = {
        [IMA_NONE] = "none",
        [IMA_DIGEST] = "digest",
        [IMA_SIGNATURE] = "signature",
        [IMA_VERITY_SIGNATURE] = "verity-signature",
        [IMA_UNKNOWN] = "unknown",
};

const char *ima_type_to_string(ImaType t) {
        return t >= 0 && t < _IMA_TYPE_MAX ? ima_type_table[t] : NULL;
}

/* The kernel's hash algorithm numbers (include/uapi/linux/hash_info.h), with its names. */
static const char *const hash_algorithms[] = {
        "md4", "md5", "sha1", "rmd160", "sha256", "sha384", "sha512", "sha224", "rmd128", "rmd256",
        "rmd320", "wp256", "wp384", "wp512", "tgr128", "tgr160", "tgr192", "sm3", "streebog256",
        "streebog512", "sha3-256", "sha3-384", "sha3-512",
};

static void ima_hash_algorithm(uint8_t n, Ima *ret) {
        if (n < ELEMENTSOF(hash_algorithms))
                snprintf(ret->hash_algorithm, sizeof(ret->hash_algorithm), "%s", hash_algorithms[n]);
        else
                snprintf(ret->hash_algorithm, sizeof(ret->hash_algorithm), "%u", n);
}

/* security.ima starts with a type byte: 1, a SHA-1 digest; 4, an algorithm byte and a digest; 3 and
 * 6, a signature header (version 2 and 3 respectively; algorithm byte, big-endian four-byte key id,
 * big-endian two-byte signature size) and the signature. */
void ima_parse(const uint8_t *v, size_t n, Ima *ret) {
        assert(ret);

        *ret = (Ima) { .type = n == 0 ? IMA_NONE : IMA_UNKNOWN };
        if (n == 0)
                return;
        switch (v[0]) {
        case 0x01:
                if (n == 1 + 20) {
                        ret->type = IMA_DIGEST;
                        ima_hash_algorithm(2, ret);
                }
                return;
        case 0x04:
                if (n > 2) {
                        ret->type = IMA_DIGEST;
                        ima_hash_algorithm(v[1], ret);
                }
                return;
        case 0x03:
        case 0x06: {
                size_t sig;

                if (n < 9 || v[1] != (v[0] == 0x03 ? 2 : 3))
                        return;
                sig = (size_t) v[7] << 8 | v[8];
                if (sig == 0 || n != 9 + sig)
                        return;
                ret->type = v[0] == 0x03 ? IMA_SIGNATURE : IMA_VERITY_SIGNATURE;
                ima_hash_algorithm(v[2], ret);
                ret->key_id = (uint32_t) v[3] << 24 | (uint32_t) v[4] << 16 | (uint32_t) v[5] << 8 | v[6];
                return;
        }
        default:
                return;
        }
}

/* The attribute is read from the fd: the file that is handed to the kernel. */
static void collect_ima(int fd, Ima *ret) {
        uint8_t v[1024];
        ssize_t n;

        n = fgetxattr(fd, "security.ima", v, sizeof(v));
        if (n < 0) {
                /* ENODATA: none; ENOTSUP: the file system has no such attributes; ERANGE: longer than
                 * any signature. */
                *ret = (Ima) { .type = errno == ERANGE ? IMA_UNKNOWN : IMA_NONE };
                return;
        }
        ima_parse(v, (size_t) n, ret);
}

static void collect_fsverity(int fd, FsVerity *ret) {
        union {
                struct fsverity_digest d;
                uint8_t buf[sizeof(struct fsverity_digest) + 64];
        } u = { .d.digest_size = 64 };
        const char *algorithm;
        char *p;

        *ret = (FsVerity) {};
        if (ioctl(fd, FS_IOC_MEASURE_VERITY, &u) < 0) {
                /* ENODATA: a file without verity; ENOTTY, EOPNOTSUPP: a file system without it. */
                ret->error = errno == ENOTTY ? -EOPNOTSUPP : negative_errno();
                return;
        }
        algorithm = u.d.digest_algorithm == FS_VERITY_HASH_ALG_SHA256 ? "sha256" :
                    u.d.digest_algorithm == FS_VERITY_HASH_ALG_SHA512 ? "sha512" : NULL;
        if (!algorithm || u.d.digest_size > 64) {
                ret->error = -EPROTONOSUPPORT;
                return;
        }
        p = ret->digest + snprintf(ret->digest, sizeof(ret->digest), "%s:", algorithm);
        for (unsigned i = 0; i < u.d.digest_size; i++)
                p += snprintf(p, 3, "%02x", u.d.digest[i]);
        ret->enabled = true;
}

Origin *origin_free(Origin *o) {
        while (o) {
                Origin *below = o->below;

                free(o->backing_path);
                free(o->backing_unknown);
                free(o->below_detail);
                dm_table_done(&o->dm);
                free(o);
                o = below;
        }
        return NULL;
}

static int statmount_origin(uint64_t mount_id, FileOrigin *o) {
        struct mnt_id_req req = {
                .size = sizeof(req),
                .mnt_id = mount_id,
                .param = STATMOUNT_SB_BASIC | STATMOUNT_MNT_BASIC | STATMOUNT_FS_TYPE,
        };
        _Alignas(struct statmount) char buf[4096];
        struct statmount *sm = (struct statmount *) buf;

        if (syscall(SYS_statmount, &req, sm, sizeof(buf), 0) < 0)
                return negative_errno();

        if (!(sm->mask & STATMOUNT_SB_BASIC) || !(sm->mask & STATMOUNT_MNT_BASIC))
                return -EOPNOTSUPP;

        o->sb_ro = sm->sb_flags & SB_RDONLY;
        o->mount_ro = sm->mnt_attr & MOUNT_ATTR_RDONLY;
        if (sm->mask & STATMOUNT_FS_TYPE && sm->fs_type < sizeof(buf) - sizeof(*sm))
                snprintf(o->fstype, sizeof(o->fstype), "%s", sm->str + sm->fs_type);
        return 0;
}

/* The mount's line of mountinfo, by the reusable mount id. The fd pins the mount, so the id cannot
 * pass to another mount while it is looked up. */
static int mountinfo_origin(int mount_id, FileOrigin *o) {
        _cleanup_(mount_info_done) MountInfo m = {};
        _cleanup_(fclosep) FILE *f = NULL;
        int r;

        f = fopen("/proc/self/mountinfo", "re");
        if (!f)
                return negative_errno();
        r = mount_info_find(f, mount_id, &m);
        if (r < 0)
                return r;

        o->sb_ro = m.sb_ro;
        o->mount_ro = m.mount_ro;
        snprintf(o->fstype, sizeof(o->fstype), "%s", m.fstype);
        snprintf(o->source, sizeof(o->source), "%s", m.source ?: "");
        return 0;
}

int file_origin_from_fd(int fd, FileOrigin *ret) {
        struct statx sx;
        FileOrigin o = {};
        int r;

        assert(ret);

        if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT,
                  STATX_TYPE | STATX_MODE | STATX_UID | STATX_INO | STATX_MNT_ID_UNIQUE, &sx) < 0)
                return negative_errno();

        o.dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
        o.ino = sx.stx_ino;
        o.uid = sx.stx_uid;
        o.mode = sx.stx_mode;

        if (sx.stx_mask & STATX_MNT_ID_UNIQUE) {
                o.mount_id = sx.stx_mnt_id;
                o.mount_id_unique = true;
                r = statmount_origin(o.mount_id, &o);
                if (r >= 0) {
                        *ret = o;
                        return 0;
                }
                if (r != -ENOSYS && r != -EOPNOTSUPP)
                        return r;
        }

        /* Older kernels: the reusable mount id, looked up in mountinfo. */
        if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_MNT_ID, &sx) < 0)
                return negative_errno();
        if (!(sx.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP;
        o.mount_id = sx.stx_mnt_id;
        o.mount_id_unique = false;
        r = mountinfo_origin((int) sx.stx_mnt_id, &o);
        if (r < 0)
                return r;

        *ret = o;
        return 0;
}

/* The mount's source, which statmount() on these kernels does not give: from mountinfo. */
static int file_origin_source(int fd, FileOrigin *o) {
        struct statx sx;
        FileOrigin m = {};
        int r;

        if (o->source[0])
                return 0;
        if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_MNT_ID, &sx) < 0)
                return negative_errno();
        if (!(sx.stx_mask & STATX_MNT_ID))
                return -EOPNOTSUPP;
        r = mountinfo_origin((int) sx.stx_mnt_id, &m);
        if (r < 0)
                return r;
        memcpy(o->source, m.source, sizeof(o->source));
        return 0;
}

static int device_dir(dev_t dev, int *ret) {
        char path[64];
        int fd;

        snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(dev), minor(dev));
        fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        *ret = fd;
        return 0;
}

/* Whether the device of dfd and every device below it (the slaves of a device-mapper or md
 * device) is read-only. A loop device below another device is not followed: its backing file could
 * be anything, so it counts as writable. Names the first writable one in ret_writable. */
static bool stack_read_only(int dfd, const char *name, unsigned depth, char *ret_writable, size_t size) {
        _cleanup_close_ int slaves = -EBADF;
        char ro[8];
        struct dirent *de;
        bool all = true;
        DIR *d;

        if (depth > ORIGIN_DEPTH_MAX || read_line_at(dfd, "ro", ro, sizeof(ro)) < 0 ||
            strcmp(ro, "1") != 0 || (depth > 0 && faccessat(dfd, "loop", F_OK, 0) >= 0)) {
                snprintf(ret_writable, size, "%.31s", name);
                return false;
        }

        slaves = openat(dfd, "slaves", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (slaves < 0)
                return true;
        d = fdopendir(slaves);
        if (!d) {
                snprintf(ret_writable, size, "%.31s", name);
                return false;
        }
        slaves = -EBADF;        /* owned by d now */
        while (all && (de = readdir(d))) {
                _cleanup_close_ int sub = -EBADF;

                if (de->d_name[0] == '.')
                        continue;
                sub = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (sub < 0) {
                        snprintf(ret_writable, size, "%.31s", de->d_name);
                        all = false;
                        break;
                }
                all = stack_read_only(sub, de->d_name, depth + 1, ret_writable, size);
        }
        closedir(d);
        return all;
}

static int set_string(char **s, const char *fmt, ...) _printf_(2, 3);
static int set_string(char **s, const char *fmt, ...) {
        va_list ap;
        int r;

        free(*s);
        va_start(ap, fmt);
        r = vasprintf(s, fmt, ap);
        va_end(ap);
        if (r < 0) {
                *s = NULL;
                return -ENOMEM;
        }
        return 0;
}

/* The file the loop device of loopdir reads, by its identity, where this process may open the
 * device (a daemon run by hand, the integration tier); modgated.service cannot (PrivateDevices=yes),
 * and asks the prober. */
static void loop_identify(Origin *o, int loopdir) {
        _cleanup_close_ int fd = -EBADF;
        unsigned ma, mi;
        char buf[64];
        int r;

        if (read_line_at(loopdir, "dev", buf, sizeof(buf)) < 0 || sscanf(buf, "%u:%u", &ma, &mi) != 2) {
                (void) set_string(&o->backing_unknown, "its device number cannot be read");
                return;
        }
        o->loop_dev = makedev(ma, mi);
        if (read_line_at(loopdir, "diskseq", buf, sizeof(buf)) >= 0)
                (void) parse_uint64(buf, &o->loop_diskseq);
        fd = block_device_open(o->loop_dev);
        r = fd < 0 ? fd : loop_backing_identity(fd, &o->backing_dev, &o->backing_ino);
        if (r >= 0)
                o->backing_known = true;
        else
                (void) set_string(&o->backing_unknown, "LOOP_GET_STATUS64 on /dev/%s: %s", o->device,
                                  strerrordesc_np(-r) ?: "unknown error");
}

static void collect_block(Origin *o) {
        _cleanup_close_ int dir = -EBADF, parent = -EBADF;
        char link[PATH_MAX], path[PATH_MAX];
        const char *name;
        ssize_t n;
        int loopdir;

        o->device_dev = o->file.dev;
        if (device_dir(o->file.dev, &dir) < 0) {
                o->backing = BACKING_NONE;
                return;
        }
        o->backing = BACKING_BLOCK;

        snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", major(o->file.dev), minor(o->file.dev));
        n = readlink(path, link, sizeof(link) - 1);
        link[n > 0 ? n : 0] = '\0';
        name = strrchr(link, '/');
        snprintf(o->device, sizeof(o->device), "%.31s", name ? name + 1 : link);

        o->device_ro = stack_read_only(dir, o->device, 0, o->device_writable, sizeof(o->device_writable));
        o->device_mapper = faccessat(dir, "dm", F_OK, 0) >= 0;
        if (read_line_at(dir, "diskseq", path, sizeof(path)) >= 0)
                (void) parse_uint64(path, &o->diskseq);

        /* A partition of a loop device has the loop's attributes on its disk. */
        loopdir = dir;
        if (faccessat(dir, "partition", F_OK, 0) >= 0) {
                parent = openat(dir, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (parent >= 0)
                        loopdir = parent;
        }
        if (read_line_at(loopdir, "loop/backing_file", path, sizeof(path)) >= 0) {
                o->backing = BACKING_LOOP;
                o->backing_path = strdup(path);
                loop_identify(o, loopdir);
        }
}

static int origin_collect_at(int fd, unsigned depth, Origin **ret) {
        _cleanup_(origin_freep) Origin *o = NULL;
        _cleanup_close_ int below = -EBADF;
        int r;

        o = calloc(1, sizeof(*o));
        if (!o)
                return -ENOMEM;

        r = file_origin_from_fd(fd, &o->file);
        if (r < 0)
                return r;

        if (major(o->file.dev) != 0)
                collect_block(o);
        else if (strcmp(o->file.fstype, "erofs") == 0 && file_origin_source(fd, &o->file) >= 0 &&
                 o->file.source[0] == '/') {
                /* erofs mounted from a file: no device, and the source is the string given to mount(2)
                 * then, which nothing ties to the file the kernel holds (renamed since, another file
                 * at that path, another mount namespace's path). The kernel says nothing else of that
                 * file, so it is not followed: no evidence is taken from a file that may not be it. */
                o->backing = BACKING_FILE;
                o->backing_path = strdup(o->file.source);
                if (!o->backing_path)
                        return -ENOMEM;
                o->below_error = -EOPNOTSUPP;
                if (set_string(&o->below_detail,
                               "the kernel does not say which file an erofs mounted from a "
                               "file reads (the mount's source is only the path given at mount time); put "
                               "the image on a loop device") < 0)
                        return -ENOMEM;
        }
        if (o->backing == BACKING_LOOP) {
                if (!o->backing_path)
                        return -ENOMEM;
                if (depth >= ORIGIN_DEPTH_MAX)
                        o->below_error = -ELOOP;
                else {
                        below = open(o->backing_path,
                                     O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | O_NOFOLLOW);
                        if (below < 0)
                                o->below_error = negative_errno();
                        else {
                                r = origin_collect_at(below, depth + 1, &o->below);
                                if (r == -ENOMEM)
                                        return r;
                                if (r < 0)
                                        o->below_error = r;
                        }
                }
        }

        *ret = TAKE_PTR(o);
        return 0;
}

bool origin_loop_needs_probe(const Origin *o) {
        return o->backing == BACKING_LOOP && !o->backing_known && o->below && major(o->loop_dev) != 0;
}

int origin_verify_backing(Origin *o) {
        for (; o; o = o->below) {
                Origin *b = o->below;

                if (o->backing != BACKING_LOOP || !b)
                        continue;
                if (!o->backing_known) {
                        o->below = NULL;
                        o->below_error = -ENODATA;
                        if (set_string(&o->below_detail,
                                       "the file the loop device reads cannot be identified "
                                       "(%s)",
                                       o->backing_unknown ?: "unknown") < 0) {
                                origin_free(b);
                                return -ENOMEM;
                        }
                } else if (b->file.dev != o->backing_dev || b->file.ino != o->backing_ino) {
                        o->below = NULL;
                        o->below_error = -ESTALE;
                        if (set_string(&o->below_detail, "that path now names another file (device %u:%u, "
                                       "inode %llu) than the one the loop device reads (device %u:%u, inode "
                                       "%llu): renamed, replaced or mounted over", major(b->file.dev),
                                       minor(b->file.dev), (unsigned long long) b->file.ino,
                                       major(o->backing_dev), minor(o->backing_dev),
                                       (unsigned long long) o->backing_ino) < 0) {
                                origin_free(b);
                                return -ENOMEM;
                        }
                }
                if (!o->below) {
                        origin_free(b);
                        return 0;
                }
        }
        return 0;
}

int origin_collect(int fd, Origin **ret) {
        Origin *o;
        int r;

        r = origin_collect_at(fd, 0, &o);
        if (r < 0)
                return r;
        collect_fsverity(fd, &o->fsverity);
        collect_ima(fd, &o->ima);
        *ret = o;
        return 0;
}
