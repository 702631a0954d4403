/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* modgate-probe: reads the kernel's device-mapper table of a block device, and which file a loop
 * device reads, for modgated, which never holds CAP_SYS_ADMIN and cannot open block devices. It does
 * those two things only: it answers root only (the socket is 0600 and the server refuses other
 * peers), reads only, keeps CAP_SYS_ADMIN alone; of a table it gives only the target types and a
 * verity target's arguments, never another target's (a crypt target's holds its key), and of a loop
 * device only its file's device and inode. Socket-activated; it exits when idle. */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/dm-ioctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/ioctl.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>
#include <systemd/sd-json.h>
#include <systemd/sd-varlink.h>

#include "capability.h"
#include "dm-verity.h"
#include "fileio.h"
#include "log.h"
#include "loop-util.h"
#include "macro.h"
#include "parse-util.h"
#include "time-util.h"
#include "varlink-errors.h"
#include "varlink-io.modgate.Probe.h"

#define IDLE_EXIT_USEC (10 * USEC_PER_SEC)
#define DM_BUFFER_MAX (1024 * 1024)
#define DM_TARGETS_MAX 1024

static char *arg_listen = NULL;
static const char *arg_control = "/dev/mapper/control";
static uint64_t last_activity;

/* DM_TABLE_STATUS of the device: its live table's lines (table) or status lines (!table). */
static int dm_table_status(unsigned major, unsigned minor, bool table, struct dm_ioctl **ret) {
        _cleanup_close_ int control = -EBADF;
        size_t size = 16 * 1024;

        control = open(arg_control, O_RDWR | O_CLOEXEC);
        if (control < 0)
                return negative_errno();

        for (;;) {
                _cleanup_free_ struct dm_ioctl *io = NULL;

                io = calloc(1, size);
                if (!io)
                        return -ENOMEM;
                io->version[0] = DM_VERSION_MAJOR;
                io->data_size = size;
                io->data_start = sizeof(struct dm_ioctl);
                io->dev = dm_encode_dev(major, minor);
                /* The status of some targets would flush or commit metadata unless told not to. */
                io->flags = table ? DM_STATUS_TABLE_FLAG : DM_NOFLUSH_FLAG;
                if (ioctl(control, DM_TABLE_STATUS, io) < 0)
                        return negative_errno();
                if (!(io->flags & DM_BUFFER_FULL_FLAG)) {
                        *ret = TAKE_PTR(io);
                        return 0;
                }
                if (size >= DM_BUFFER_MAX)
                        return -E2BIG;
                size *= 4;
        }
}

/* The n-th target of a DM_TABLE_STATUS answer and its line, or NULL when the answer is malformed. */
static const struct dm_target_spec *dm_target(const struct dm_ioctl *io, size_t *offset,
                                              const char **ret_line) {
        const char *data = (const char *) io + io->data_start;
        size_t avail = io->data_size - io->data_start;
        const struct dm_target_spec *spec;
        const char *line;

        if (io->data_start > io->data_size || *offset > avail || avail - *offset < sizeof(*spec))
                return NULL;
        spec = (const struct dm_target_spec *) (data + *offset);
        line = (const char *) (spec + 1);
        if (!memchr(line, '\0', avail - *offset - sizeof(*spec)) ||
            !memchr(spec->target_type, '\0', DM_MAX_TYPE_NAME))
                return NULL;
        if (spec->next <= *offset && io->target_count > 1)
                return NULL;
        *offset = spec->next;
        *ret_line = line;
        return spec;
}

/* "what", or "what: the error's description" for an error. */
static int reply_failed(sd_varlink *link, const char *what, int error) {
        char reason[256];

        if (error == 0)
                snprintf(reason, sizeof(reason), "%s", what);
        else
                snprintf(reason, sizeof(reason), "%s: %s", what,
                         strerrordesc_np(abs(error)) ?: "unknown error");
        return sd_varlink_errorbo(link, PROBE_ERROR_FAILED, SD_JSON_BUILD_PAIR_STRING("reason", reason));
}

static int target_json(const struct dm_target_spec *spec, const char *line, const char *status,
                       sd_json_variant **ret) {
        _cleanup_(dm_verity_table_done) DmVerityTable t = {};
        int corrupted, r;

        if (strcmp(spec->target_type, "verity") != 0)
                return sd_json_buildo(ret, SD_JSON_BUILD_PAIR_STRING("type", spec->target_type),
                                      SD_JSON_BUILD_PAIR_UNSIGNED("start", spec->sector_start),
                                      SD_JSON_BUILD_PAIR_UNSIGNED("length", spec->length));

        r = dm_verity_table_parse(line, &t);
        if (r < 0)
                return r;
        if (!status)
                return -EBADMSG;
        corrupted = dm_verity_status_corrupted(status);
        if (corrupted < 0)
                return corrupted;
        return sd_json_buildo(
                ret, SD_JSON_BUILD_PAIR_STRING("type", spec->target_type),
                SD_JSON_BUILD_PAIR_UNSIGNED("start", spec->sector_start),
                SD_JSON_BUILD_PAIR_UNSIGNED("length", spec->length),
                SD_JSON_BUILD_PAIR(
                        "verity",
                        SD_JSON_BUILD_OBJECT(SD_JSON_BUILD_PAIR_STRING("rootHash", t.root_hash),
                                             SD_JSON_BUILD_PAIR_STRING("algorithm", t.algorithm),
                                             SD_JSON_BUILD_PAIR_STRING("dataDevice", t.data_device),
                                             SD_JSON_BUILD_PAIR_STRING("hashDevice", t.hash_device),
                                             SD_JSON_BUILD_PAIR_CONDITION(!!t.options, "options",
                                                                          SD_JSON_BUILD_STRING(t.options)),
                                             SD_JSON_BUILD_PAIR_BOOLEAN("ignoreCorruption",
                                                                        t.ignore_corruption),
                                             SD_JSON_BUILD_PAIR_BOOLEAN("corrupted", corrupted))));
}

/* The device's instance number, or 0 when the kernel has none to give. */
static int read_diskseq(const char *sysdir, uint64_t *ret) {
        char buf[32];
        int r;

        *ret = 0;
        r = read_line_at(AT_FDCWD, sysdir, buf, sizeof(buf));
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        return parse_uint64(buf, ret);
}

typedef struct DescribeParameters {
        unsigned major;
        unsigned minor;
        uint64_t diskseq;
        char seqfile[160];      /* the device's diskseq in sysfs */
        uint64_t before;        /* what it read before the device was looked at */
} DescribeParameters;

/* What both methods do first: the parameters; the device, which must be of the kind whose sysfs
 * directory has marker (else not_kind, an error name); its diskseq now, which must be the one the
 * caller saw, if it gave one. Returns 1 to go on, else the reply's result. */
static int describe_begin(sd_varlink *link, sd_json_variant *parameters, const char *marker,
                          const char *not_kind, DescribeParameters *p) {
        static const sd_json_dispatch_field table[] = {
                { "major", _SD_JSON_VARIANT_TYPE_INVALID, sd_json_dispatch_uint,
                  offsetof(DescribeParameters, major), SD_JSON_MANDATORY },
                { "minor", _SD_JSON_VARIANT_TYPE_INVALID, sd_json_dispatch_uint,
                  offsetof(DescribeParameters, minor), SD_JSON_MANDATORY },
                { "diskseq", _SD_JSON_VARIANT_TYPE_INVALID, sd_json_dispatch_uint64,
                  offsetof(DescribeParameters, diskseq), 0 },
                {}
        };
        char sys[128];
        int r;

        last_activity = now_usec();
        r = sd_varlink_dispatch(link, parameters, table, p);
        if (r != 0)
                return r;

        snprintf(sys, sizeof(sys), "/sys/dev/block/%u:%u", p->major, p->minor);
        if (access(sys, F_OK) < 0)
                return sd_varlink_error(link, PROBE_ERROR_NO_SUCH_DEVICE, NULL);
        snprintf(p->seqfile, sizeof(p->seqfile), "%s/%s", sys, marker);
        if (access(p->seqfile, F_OK) < 0)
                return sd_varlink_error(link, not_kind, NULL);

        /* The instance the answer is about: one that is removed and made again (a loop device
         * detached and bound again) in between has a new diskseq, so the same number before and after
         * means the same device throughout. */
        snprintf(p->seqfile, sizeof(p->seqfile), "%s/diskseq", sys);
        r = read_diskseq(p->seqfile, &p->before);
        if (r < 0)
                return reply_failed(link, "cannot read the device's diskseq", r);
        if (p->diskseq != 0 && p->before != p->diskseq)
                return sd_varlink_errorbo(link, PROBE_ERROR_DEVICE_CHANGED,
                                          SD_JSON_BUILD_PAIR_UNSIGNED("diskseq", p->before));
        return 1;
}

/* After the device was looked at: still the same instance. Returns 1 to go on with its diskseq in
 * *ret_after, else the reply's result. */
static int describe_end(sd_varlink *link, const DescribeParameters *p, uint64_t *ret_after) {
        int r;

        r = read_diskseq(p->seqfile, ret_after);
        if (r < 0)
                return reply_failed(link, "cannot read the device's diskseq", r);
        if (*ret_after != p->before)
                return sd_varlink_errorbo(link, PROBE_ERROR_DEVICE_CHANGED,
                                          SD_JSON_BUILD_PAIR_UNSIGNED("diskseq", *ret_after));
        return 1;
}

static int vl_method_describe_device(sd_varlink *link, sd_json_variant *parameters,
                                     sd_varlink_method_flags_t flags, void *userdata) {
        _cleanup_(sd_json_variant_unrefp) sd_json_variant *targets = NULL;
        _cleanup_free_ struct dm_ioctl *lines = NULL, *status = NULL;
        DescribeParameters p = {};
        bool any_verity = false;
        uint64_t after;
        size_t lo = 0, so = 0;
        int r;

        r = describe_begin(link, parameters, "dm", PROBE_ERROR_NOT_DEVICE_MAPPER, &p);
        if (r <= 0)
                return r;

        r = dm_table_status(p.major, p.minor, true, &lines);
        if (r == -ENXIO)
                return sd_varlink_error(link, PROBE_ERROR_NO_SUCH_DEVICE, NULL);
        if (r < 0)
                return reply_failed(link, "cannot read the device-mapper table", r);
        /* Verity's status says whether it has seen a corrupt block; no other target's is asked for. */
        for (unsigned i = 0; i < lines->target_count && !any_verity; i++) {
                const struct dm_target_spec *spec;
                const char *line;

                spec = dm_target(lines, &lo, &line);
                if (!spec)
                        return reply_failed(link, "the kernel's answer is malformed", 0);
                any_verity = strcmp(spec->target_type, "verity") == 0;
        }
        lo = 0;
        if (any_verity) {
                r = dm_table_status(p.major, p.minor, false, &status);
                if (r == -ENXIO)
                        return sd_varlink_error(link, PROBE_ERROR_NO_SUCH_DEVICE, NULL);
                if (r < 0)
                        return reply_failed(link, "cannot read the device-mapper status", r);
        }

        r = describe_end(link, &p, &after);
        if (r <= 0)
                return r;
        if (lines->target_count > DM_TARGETS_MAX)
                return reply_failed(link, "the table has too many targets", 0);
        if (status && lines->target_count != status->target_count)
                return reply_failed(link, "the table was replaced while it was read", 0);

        r = sd_json_variant_new_array(&targets, NULL, 0);
        if (r < 0)
                return r;
        for (unsigned i = 0; i < lines->target_count; i++) {
                _cleanup_(sd_json_variant_unrefp) sd_json_variant *t = NULL;
                const struct dm_target_spec *spec, *sspec;
                const char *line, *sline;

                spec = dm_target(lines, &lo, &line);
                sspec = status ? dm_target(status, &so, &sline) : NULL;
                if (!spec || (status && !sspec))
                        return reply_failed(link, "the kernel's answer is malformed", 0);
                if (sspec && strcmp(spec->target_type, sspec->target_type) != 0)
                        return reply_failed(link, "the table was replaced while it was read", 0);
                r = target_json(spec, line, sspec ? sline : NULL, &t);
                if (r == -EBADMSG)
                        return reply_failed(link, "a verity target's table or status cannot be parsed", 0);
                if (r < 0)
                        return r;
                r = sd_json_variant_append_array(&targets, t);
                if (r < 0)
                        return r;
        }

        lines->name[DM_NAME_LEN - 1] = '\0';
        lines->uuid[DM_UUID_LEN - 1] = '\0';
        return sd_varlink_replybo(link, SD_JSON_BUILD_PAIR_STRING("name", lines->name),
                                  SD_JSON_BUILD_PAIR_CONDITION(lines->uuid[0] != '\0', "uuid",
                                                               SD_JSON_BUILD_STRING(lines->uuid)),
                                  SD_JSON_BUILD_PAIR_CONDITION(after != 0, "diskseq",
                                                               SD_JSON_BUILD_UNSIGNED(after)),
                                  SD_JSON_BUILD_PAIR_VARIANT("targets", targets));
}

/* Which file a loop device reads: LOOP_GET_STATUS64 on the device, which modgated cannot open. Only
 * the file's device and inode are given, never its path or the device's other settings. */
static int vl_method_describe_loop(sd_varlink *link, sd_json_variant *parameters,
                                   sd_varlink_method_flags_t flags, void *userdata) {
        _cleanup_close_ int fd = -EBADF;
        DescribeParameters p = {};
        uint64_t after;
        dev_t backing;
        ino_t ino;
        int r;

        r = describe_begin(link, parameters, "loop", PROBE_ERROR_NOT_LOOP, &p);
        if (r <= 0)
                return r;

        fd = block_device_open(makedev(p.major, p.minor));
        if (fd == -ENODEV)
                return reply_failed(link, "/dev has another device under the loop device's name", 0);
        if (fd < 0)
                return reply_failed(link, "cannot open the loop device", fd);
        r = loop_backing_identity(fd, &backing, &ino);
        if (r == -ENXIO || r == -ENOTTY)
                return sd_varlink_error(link, PROBE_ERROR_NOT_LOOP, NULL);
        if (r < 0)
                return reply_failed(link, "LOOP_GET_STATUS64 failed", r);

        r = describe_end(link, &p, &after);
        if (r <= 0)
                return r;

        return sd_varlink_replybo(link, SD_JSON_BUILD_PAIR_UNSIGNED("backingMajor", major(backing)),
                                  SD_JSON_BUILD_PAIR_UNSIGNED("backingMinor", minor(backing)),
                                  SD_JSON_BUILD_PAIR_UNSIGNED("backingInode", (uint64_t) ino),
                                  SD_JSON_BUILD_PAIR_CONDITION(after != 0, "diskseq",
                                                               SD_JSON_BUILD_UNSIGNED(after)));
}

static int on_idle(sd_event_source *s, uint64_t usec, void *userdata) {
        sd_varlink_server *server = userdata;
        uint64_t now = now_usec();

        if (sd_varlink_server_current_connections(server) == 0 && now >= last_activity + IDLE_EXIT_USEC)
                return sd_event_exit(sd_event_source_get_event(s), 0);
        (void) sd_event_source_set_time_relative(s, IDLE_EXIT_USEC);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static void help(void) {
        printf("%s [OPTIONS...]\n\n"
               "Answer modgated's questions about device-mapper tables over varlink (io.modgate.Probe).\n\n"
               "  -h --help                Show this help\n"
               "     --version             Show package version\n"
               "     --listen=PATH         Listen on this socket instead of the one passed by the\n"
               "                           service manager (FileDescriptorName=varlink); no idle exit\n",
               program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum { ARG_VERSION = 0x100, ARG_LISTEN };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "listen", required_argument, NULL, ARG_LISTEN },
                {}
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("modgate-probe %s\n", PROJECT_VERSION);
                        return 0;
                case ARG_LISTEN:
                        arg_listen = optarg;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        abort();
                }
        if (optind < argc)
                return log_error_errno(EINVAL, "%s takes no positional arguments.",
                                       program_invocation_short_name);
        return 1;
}

static int run(int argc, char *argv[]) {
        _cleanup_(sd_varlink_server_unrefp) sd_varlink_server *s = NULL;
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        int r;

        log_open();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        r = capability_keep_only(CAP_SYS_ADMIN);
        if (r < 0)
                return log_error_errno(r, "Failed to drop capabilities other than CAP_SYS_ADMIN: %m");

        r = sd_event_default(&e);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the event loop: %m");
        (void) sd_event_set_signal_exit(e, true);

        r = sd_varlink_server_new(&s, SD_VARLINK_SERVER_ROOT_ONLY);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate varlink server: %m");
        (void) sd_varlink_server_set_description(s, "modgate-probe");
        (void) sd_varlink_server_set_info(s, "modgate", "modgate-probe", PROJECT_VERSION, NULL);
        r = sd_varlink_server_add_interface(s, &vl_interface_io_modgate_Probe);
        if (r < 0)
                return log_error_errno(r, "Failed to add varlink interface: %m");
        r = sd_varlink_server_bind_method_many(s,
                                               "io.modgate.Probe.DescribeDevice", vl_method_describe_device,
                                               "io.modgate.Probe.DescribeLoop", vl_method_describe_loop);
        if (r < 0)
                return log_error_errno(r, "Failed to bind varlink method: %m");

        if (arg_listen) {
                r = sd_varlink_server_listen_address(s, arg_listen, 0600);
                if (r < 0)
                        return log_error_errno(r, "Failed to listen on %s: %m", arg_listen);
        } else {
                r = sd_varlink_server_listen_auto(s);
                if (r < 0)
                        return log_error_errno(r, "Failed to take the varlink socket: %m");
                if (r == 0)
                        return log_error_errno(EBADF, "No socket named 'varlink' was passed "
                                               "(FileDescriptorName=varlink), and no --listen= was given.");
                last_activity = now_usec();
                r = sd_event_add_time_relative(e, NULL, CLOCK_MONOTONIC, IDLE_EXIT_USEC, USEC_PER_SEC,
                                               on_idle, s);
                if (r < 0)
                        return log_error_errno(r, "Failed to arm the idle timer: %m");
        }

        r = sd_varlink_server_attach_event(s, e, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach varlink server: %m");

        (void) sd_notify(false, "READY=1");
        r = sd_event_loop(e);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
