/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>
#include <systemd/sd-varlink.h>

#include "authorize.h"
#include "chatter.h"
#include "compression.h"
#include "config.h"
#include "connections.h"
#include "device-info.h"
#include "guard.h"
#include "macro.h"
#include "manifest.h"
#include "method-seal.h"
#include "monitor.h"
#include "reader-pool.h"
#include "record-history.h"
#include "resolver.h"
#include "scheduler.h"
#include "sha256.h"
#include "stats.h"
#include "trust.h"
#include "uevent-log.h"

typedef struct DescribeWait DescribeWait;
typedef struct LoadRequest LoadRequest;
typedef struct PeerCache PeerCache;

/* Owns the event loop and every piece of daemon state. */
typedef struct Manager {
        sd_event *event;
        sd_varlink_server *varlink_server;
        Connections *connections;       /* each one watched for silence */
        PeerCache *peers;               /* each one's peer, as /proc has it */

        char *listen_address;           /* --listen=; NULL to take the socket from the service manager */
        Config config;                  /* modgate.conf, with command-line options applied; its policy
                                         * with the kernel command line's rules added */
        char policy_digest[SHA256_HEX_SIZE]; /* of policy_serialize(): which policy is in force */
        bool keep_load_alone;           /* set on the command line: a reload leaves it */
        bool keep_idle_exit;

        uint64_t last_activity_usec;
        sd_event_source *idle_timer;

        TrustedRoot **roots;            /* the first one's index resolves names and aliases */
        size_t n_roots;
        Resolver *resolver;
        Compression kernel_compression;
        char *kernel_cmdline;           /* read once at start; NULL when it could not be read */
        char **cmdline_root_hashes;     /* roothash= and usrhash= on the kernel command line */
        char *probe_address;            /* --prober=; NULL: PROBE_ADDRESS */
        UdevRuleName *udev_rule_names;  /* the modules udev's rules name to modgate-udev, as last read */
        size_t n_udev_rule_names;
        char *udev_rules_stamp;         /* the rules files they were read from, as they were then */
        bool udevd_checked;             /* whether udevd's CAP_SYS_MODULE was looked at (it ran) */
        char *runtime_dir;              /* $RUNTIME_DIRECTORY: the running lock and the seal's time */
        char **ignored_config;          /* the files in /run that are not read, as last recorded */
        char **ignored_modprobe_d;
        Chatter *chatter;               /* repeated answers and refusals, counted */
        History *history;               /* this boot's decisions, module by module */
        UeventLog *uevents;             /* the kernel's uevents: what udevd asks about, and loads and
                                         * unloads by others */
        sd_event_source *summary_timer; /* writes the counts as summaries, each CHATTER_WINDOW_USEC */
        uint64_t summary_since_usec;    /* when the window began */
        LoadContext load_context;       /* what the workers check files with; Explain checks the same */
        Scheduler *scheduler;
        ReaderPool *readers;            /* Explain's and Status's file and prober work */

        LoadRequest *requests;          /* Load calls waiting for their jobs */
        unsigned n_requests;
        sd_varlink **replied;           /* links answered since the loop last wrote them (method-load.c) */
        size_t n_replied, n_replied_allocated;
        sd_event_source *reply_writer;  /* writes them, all in one iteration */
        sd_event_source *stop_check;    /* after SIGTERM: exits once every request in flight is answered */
        sd_event_source *stop_timer;    /* or after STOP_DRAIN_USEC, whatever is left */

        DescribeWait *describe_waits;   /* Describe calls waiting for a load's .modinfo
                                         * (method-describe.c) */
        unsigned n_describe_waits;
        Monitors *monitors;             /* Monitor calls, sent every event */
        DeviceInfo *device_info;        /* udev's hardware database, for records of modalias requests */
        Counters counters;              /* what this instance did, for Status */
        Latency latency;                /* of the latest Load calls, arrival to reply */
        uint64_t started_usec;          /* CLOCK_MONOTONIC */
        int running_fd;                 /* RUNTIME_LOCK, share-locked while this instance runs */
        sd_event_source *prober_hold;   /* an idle connection that keeps modgate-probe from exiting */
        SealState seal;
        Guard *guard;                   /* the kernel's check that only modgated loads (guard.c) */
} Manager;

/* Share-locked (flock) by a running modgated, in its RuntimeDirectory=: modgate-modprobe gives up
 * sooner on a daemon that is not running and does not start, which is what happens when the process
 * that is waiting for the module is PID 1 itself, the one that would start it. */
#define RUNTIME_LOCK "running"
/* After SIGTERM: how long what is in flight may take to be answered (looked at after each turn of the
 * event loop that did something). A load inside finit_module() is waited for in any case (it cannot
 * be stopped). */
#define STOP_DRAIN_USEC (10 * USEC_PER_SEC)

int manager_new(Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Pins the trusted root, opens the module index and starts listening. Logs its errors. */
int manager_startup(Manager *m);
int manager_run(Manager *m);

/* Reads the configuration again and puts its policy in force; the other settings as they allow
 * (Workers= and the trust settings wait for the next start). On an invalid configuration nothing
 * changes, and *ret_error (when not NULL) says which file and line. Returns 0 or -errno. */
/* Logs whether systemd-udevd holds CAP_SYS_MODULE, once it runs: at start, or at its first request
 * when it did not run then. */
void manager_check_udevd(Manager *m, bool asked_by_udevd);

/* Reads the module names that udev's rules pass to modgate-udev anew, from every rules file that udev
 * reads now: udev itself reads changed rules before its next event, and modgate-udev-rules writes
 * its overrides while udevd runs. On failure the names read before stay. */
int manager_read_udev_rules(Manager *m);

int manager_reload(Manager *m, char **ret_error);

/* Reloads the module index when depmod rewrote it, and then forgets remembered denials, which were
 * about the old one. Returns 1 when it reloaded, 0, or -errno. */
int manager_refresh_index(Manager *m);

/* Notes that a client or a job did something, which postpones the idle exit. */
void manager_touch(Manager *m);

/* Sets up the guard in the mode configured, logs what it is, and drops CAP_BPF and CAP_PERFMON, which
 * only attaching needs. Returns 0, or -errno when the capabilities could not be dropped. */
int manager_guard_start(Manager *m);
