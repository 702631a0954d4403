/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fdstore.h"
#include "fileio.h"
#include "guard.h"
#include "log.h"

#if HAVE_GUARD
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "modgate-guard.skel.h"
#endif

/* What the fd store keeps of the guard, in this order. */
enum {
        GUARD_FD_READ,
        GUARD_FD_LOAD,
        GUARD_FD_BPF,           /* the self-protection's three: absent where the kernel's bpf hook */
        GUARD_FD_BPF_MAP,       /* has other arguments than the program's (GUARD_FD_BPF) */
        GUARD_FD_PTRACE,
        GUARD_FD_CONFIG,
        GUARD_FD_APPROVED,
        GUARD_FD_EVENTS,
        _GUARD_FD_MAX,
};

static const char *const store_names[_GUARD_FD_MAX] = {
        [GUARD_FD_READ] = FDSTORE_GUARD_READ,
        [GUARD_FD_LOAD] = FDSTORE_GUARD_LOAD,
        [GUARD_FD_BPF] = FDSTORE_GUARD_BPF,
        [GUARD_FD_BPF_MAP] = FDSTORE_GUARD_BPF_MAP,
        [GUARD_FD_PTRACE] = FDSTORE_GUARD_PTRACE,
        [GUARD_FD_CONFIG] = FDSTORE_GUARD_CONFIG,
        [GUARD_FD_APPROVED] = FDSTORE_GUARD_APPROVED,
        [GUARD_FD_EVENTS] = FDSTORE_GUARD_EVENTS,
};

bool guard_test_wrong_hash = false;

struct Guard {
        GuardState state;
        int fds[_GUARD_FD_MAX];
        __u32 hook_btf_ids[GUARD_HOOK_FUNCS];
        guard_refusal_t cb;
        void (*before_attach)(void);
        void *userdata;
#if HAVE_GUARD
        struct ring_buffer *ring;
#endif
        sd_event_source *source;
};

static void fds_close(int fds[static _GUARD_FD_MAX]) {
        for (size_t i = 0; i < _GUARD_FD_MAX; i++)
                fds[i] = safe_close(fds[i]);
}

/* What the store keeps: how many of the guard's fds it had (not counting the bpf hook's link, which a
 * kernel may not have). */
static unsigned fds_take(int fds[static _GUARD_FD_MAX]) {
        unsigned n = 0;

        for (size_t i = 0; i < _GUARD_FD_MAX; i++) {
                fds[i] = fdstore_take(store_names[i]);
                n += fds[i] >= 0 && i != GUARD_FD_BPF;
        }
        return n;
}

/* Detaches what the store kept: the links go with their last fd. */
static void fds_forget(int fds[static _GUARD_FD_MAX]) {
        fds_close(fds);
        for (size_t i = 0; i < _GUARD_FD_MAX; i++)
                (void) fdstore_remove(store_names[i]);
}

Guard *guard_free(Guard *g) {
        if (!g)
                return NULL;
        sd_event_source_disable_unref(g->source);
#if HAVE_GUARD
        ring_buffer__free(g->ring);
#endif
        /* Closing ours leaves the store's: the program stays attached while PID 1 keeps them. */
        fds_close(g->fds);
        return mfree(g);
}

void guard_state(const Guard *g, GuardState *ret) {
        *ret = g->state;
}

static bool lsm_active(void) {
        char buf[512];

        return read_small_file_at(AT_FDCWD, "/sys/kernel/security/lsm", buf, sizeof(buf)) >= 0 &&
                guard_lsm_listed(buf);
}

#if HAVE_GUARD

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap) {
        _cleanup_free_ char *s = NULL;

        /* The verifier's log comes as warnings: a program that does not load is worth them. */
        if (vasprintf(&s, fmt, ap) < 0)
                return 0;
        s[strcspn(s, "\n")] = 0;
        if (level == LIBBPF_WARN)
                log_warning("libbpf: %s", s);
        else
                log_debug("libbpf: %s", s);
        return 0;
}

static uint64_t realtime_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000U + (uint64_t) ts.tv_nsec / 1000U;
}

static __u32 link_id(int fd) {
        struct bpf_link_info info = {};
        __u32 len = sizeof(info);

        return fd >= 0 && bpf_link_get_info_by_fd(fd, &info, &len) >= 0 ? info.id : 0;
}

/* Who modgated is, for the program: this process and its executable; and what protects the guard,
 * once it is attached: its links' ids and the functions it attaches to. */
static int config_write(Guard *g, uint64_t attached_usec) {
        struct guard_config c = {
                .mode = g->state.wanted,
                .tgid = (__u32) getpid(),
                .attached_usec = attached_usec,
                .abi = GUARD_ABI,
        };
        struct stat st;
        __u32 zero = 0;

        if (stat("/proc/self/exe", &st) < 0)
                return -errno;
        c.exe_dev = guard_kernel_dev(st.st_dev);
        c.exe_ino = st.st_ino;
        _Static_assert(GUARD_FD_PTRACE - GUARD_FD_READ + 1 == GUARD_LINKS, "a link fd for each link id");
        for (size_t i = 0; i < GUARD_LINKS; i++)
                c.link_ids[i] = link_id(g->fds[GUARD_FD_READ + i]);
        memcpy(c.hook_btf_ids, g->hook_btf_ids, sizeof(c.hook_btf_ids));
        return bpf_map_update_elem(g->fds[GUARD_FD_CONFIG], &zero, &c, BPF_ANY);
}

/* The kernel's BTF: the ids of the functions the guard's programs attach to, and whether the bpf hook
 * has the arguments its program reads (Linux 6.12's: cmd, attr, size). Returns 0 or -errno. */
static int hooks_find(Guard *g, bool *ret_bpf_hook) {
        static const char *const funcs[GUARD_HOOK_FUNCS] = {
                "bpf_lsm_kernel_read_file", "bpf_lsm_kernel_load_data", "bpf_lsm_bpf", "bpf_lsm_bpf_map",
                "bpf_lsm_ptrace_access_check",
        };
        struct btf *btf;
        int r = 0;

        *ret_bpf_hook = false;
        btf = btf__load_vmlinux_btf();
        if (!btf)
                return -errno ?: -ENOENT;
        for (size_t i = 0; i < GUARD_HOOK_FUNCS && funcs[i]; i++) {
                const struct btf_type *t, *proto;
                int id = btf__find_by_name_kind(btf, funcs[i], BTF_KIND_FUNC);

                if (id <= 0) {
                        r = -ENOENT;
                        continue;
                }
                g->hook_btf_ids[i] = (__u32) id;
                if (strcmp(funcs[i], "bpf_lsm_bpf") != 0)
                        continue;
                t = btf__type_by_id(btf, id);
                proto = t ? btf__type_by_id(btf, t->type) : NULL;
                *ret_bpf_hook = proto && btf_vlen(proto) == 3;
        }
        btf__free(btf);
        return r;
}

static bool map_is(int fd, __u32 type, const char *name, __u32 key_size, __u32 value_size) {
        struct bpf_map_info info = {};
        __u32 len = sizeof(info);

        return bpf_map_get_info_by_fd(fd, &info, &len) >= 0 && info.type == type &&
                strcmp(info.name, name) == 0 && info.key_size == key_size && info.value_size == value_size;
}

static bool link_is_lsm(int fd) {
        struct bpf_link_info info = {};
        __u32 len = sizeof(info);

        return bpf_link_get_info_by_fd(fd, &info, &len) >= 0 && info.type == BPF_LINK_TYPE_TRACING &&
                info.tracing.attach_type == BPF_LSM_MAC;
}

/* Whether the fds the store kept are a guard of this version, attached: then it is adopted, never
 * attached a second time. Returns NULL and the time it was attached, or what is wrong with them. */
static const char *stored_guard_check(const int fds[static _GUARD_FD_MAX], uint64_t *ret_since) {
        struct guard_config c = {};
        __u32 zero = 0;

        for (size_t i = GUARD_FD_READ; i <= GUARD_FD_PTRACE; i++)
                if ((i != GUARD_FD_BPF || fds[i] >= 0) && !link_is_lsm(fds[i]))
                        return "a link is not a BPF LSM link";
        if (!map_is(fds[GUARD_FD_CONFIG], BPF_MAP_TYPE_ARRAY, "guard_config", sizeof(__u32), sizeof(c)) ||
            !map_is(fds[GUARD_FD_APPROVED], BPF_MAP_TYPE_HASH, "guard_approved", sizeof(struct guard_file_key),
                    sizeof(struct guard_approval)) ||
            !map_is(fds[GUARD_FD_EVENTS], BPF_MAP_TYPE_RINGBUF, "guard_events", 0, 0))
                return "a map is not the guard's";
        if (bpf_map_lookup_elem(fds[GUARD_FD_CONFIG], &zero, &c) < 0)
                return "its configuration cannot be read";
        if (c.abi != GUARD_ABI)
                return "it is of another version";
        *ret_since = c.attached_usec ?: 1;
        return NULL;
}

/* Approvals a killed instance left: each names that instance's process, which is gone. */
static void approved_clear(Guard *g) {
        struct guard_file_key key;

        /* From the first key each time: the map changes under the walk. Capped: at most what it holds. */
        for (unsigned n = 0; n < GUARD_APPROVED_MAX; n++)
                if (bpf_map_get_next_key(g->fds[GUARD_FD_APPROVED], NULL, &key) < 0 ||
                    bpf_map_delete_elem(g->fds[GUARD_FD_APPROVED], &key) < 0)
                        break;
}

static int dup_fd(int fd) {
        int r = fcntl(fd, F_DUPFD_CLOEXEC, 3);

        return r < 0 ? -errno : r;
}

static int attach_new(Guard *g) {
        struct modgate_guard *skel;
        uint64_t now = realtime_usec();
        bool bpf_hook;
        int r;

        skel = modgate_guard__open();
        if (!skel)
                return -errno ?: -ENOMEM;
        r = hooks_find(g, &bpf_hook);
        if (r < 0)
                goto finish;
        /* A kernel whose bpf hook has other arguments: the rest protects the guard still. */
        if (!bpf_hook)
                (void) bpf_program__set_autoload(skel->progs.modgate_bpf, false);
        r = modgate_guard__load(skel);
        if (r < 0)
                goto finish;
        g->fds[GUARD_FD_CONFIG] = dup_fd(bpf_map__fd(skel->maps.guard_config));
        g->fds[GUARD_FD_APPROVED] = dup_fd(bpf_map__fd(skel->maps.guard_approved));
        g->fds[GUARD_FD_EVENTS] = dup_fd(bpf_map__fd(skel->maps.guard_events));
        for (size_t i = GUARD_FD_CONFIG; i <= GUARD_FD_EVENTS; i++)
                if (g->fds[i] < 0) {
                        r = g->fds[i];
                        goto finish;
                }
        /* Told who modgated is before it is attached: it never refuses modgated's loads. */
        r = config_write(g, now);
        if (r < 0)
                goto finish;
        /* Loading took the time (BTF, the verifier): what must precede the attach comes now. */
        if (g->before_attach)
                g->before_attach();
        r = modgate_guard__attach(skel);
        if (r < 0)
                goto finish;
        g->fds[GUARD_FD_READ] = dup_fd(bpf_link__fd(skel->links.modgate_read_file));
        g->fds[GUARD_FD_LOAD] = dup_fd(bpf_link__fd(skel->links.modgate_load_data));
        g->fds[GUARD_FD_BPF_MAP] = dup_fd(bpf_link__fd(skel->links.modgate_bpf_map));
        g->fds[GUARD_FD_PTRACE] = dup_fd(bpf_link__fd(skel->links.modgate_ptrace));
        if (bpf_hook)
                g->fds[GUARD_FD_BPF] = dup_fd(bpf_link__fd(skel->links.modgate_bpf));
        for (size_t i = GUARD_FD_READ; i <= GUARD_FD_PTRACE; i++)
                if (g->fds[i] < 0 && (i != GUARD_FD_BPF || bpf_hook)) {
                        r = g->fds[i];
                        goto finish;
                }
        /* Now protected: its links' ids are known. */
        r = config_write(g, now);
        if (r >= 0) {
                g->state.attached_usec = now;
                g->state.protected_bpf = bpf_hook;
        }
finish:
        /* Detaches nothing that was duplicated: a link lasts while any fd of it is open. */
        modgate_guard__destroy(skel);
        if (r < 0)
                fds_close(g->fds);
        return r;
}

static int on_ring(void *userdata, void *data, size_t size) {
        Guard *g = userdata;

        if (guard_event_check(data, size) < 0) {
                log_warning("Ignoring a record of the guard's ring buffer that does not parse (%zu bytes).", size);
                return 0;
        }
        g->state.refusals++;
        if (g->cb)
                g->cb(data, g->userdata);
        return 0;
}

void guard_drain(Guard *g) {
        if (g && g->ring)
                (void) ring_buffer__consume(g->ring);
}

static int on_ring_readable(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        guard_drain(userdata);
        return 0;
}

static int ring_follow(Guard *g, sd_event *e) {
        g->ring = ring_buffer__new(g->fds[GUARD_FD_EVENTS], on_ring, g, NULL);
        if (!g->ring)
                return -errno ?: -ENOMEM;
        return sd_event_add_io(e, &g->source, ring_buffer__epoll_fd(g->ring), EPOLLIN, on_ring_readable, g);
}

static void store(Guard *g) {
        int r = 0;

        if (!fdstore_available())
                return;
        for (size_t i = 0; i < _GUARD_FD_MAX && r >= 0; i++)
                if (g->fds[i] >= 0)
                        r = fdstore_put_full(g->fds[i], store_names[i], false);
        g->state.stored = r >= 0;
}

static int attach_or_adopt(Guard *g, sd_event *e) {
        const char *wrong = NULL;
        uint64_t since = 0;
        unsigned n;
        int r;

        n = fds_take(g->fds);
        if (n > 0 && n < _GUARD_FD_MAX - 1)
                wrong = "some of its links and maps are missing";
        else if (n > 0)
                wrong = stored_guard_check(g->fds, &since);
        if (wrong) {
                /* Part of one, or another version's: replaced. */
                log_notice("The guard kept in the fd store is not adopted (%s): attaching this version's in its "
                           "place.", wrong);
                fds_forget(g->fds);
        }
        if (since > 0) {
                bool bpf_hook;

                g->state.adopted = g->state.stored = true;
                g->state.attached_usec = since;
                g->state.protected_bpf = g->fds[GUARD_FD_BPF] >= 0;
                (void) hooks_find(g, &bpf_hook);
                r = config_write(g, since);
                if (r < 0)
                        return r;
                approved_clear(g);
        } else {
                /* A guard replaced is detached when PID 1 closes its fds; until then it refuses the
                 * load of programs on its hooks by another executable (after an upgrade): a few tries. */
                for (unsigned i = 0;; i++) {
                        r = attach_new(g);
                        if (r != -EPERM || !wrong || i >= 20)
                                break;
                        (void) usleep(100 * 1000);
                }
                if (r < 0)
                        return r;
                store(g);
        }
        g->state.attached = true;
        g->state.mode = g->state.wanted;
        r = ring_follow(g, e);
        if (r < 0)
                log_warning_errno(r, "Failed to read the guard's refusals, they are not recorded: %m");
        return 0;
}

#endif

int guard_setup(sd_event *e, GuardMode mode, bool from_cmdline, const char *not_service, guard_refusal_t cb,
                void *userdata, void (*before_attach)(void), Guard **ret) {
        _cleanup_(guard_freep) Guard *g = NULL;
        int r = 0;

        g = calloc(1, sizeof(Guard));
        if (!g)
                return -ENOMEM;
        for (size_t i = 0; i < _GUARD_FD_MAX; i++)
                g->fds[i] = -EBADF;
        g->cb = cb;
        g->userdata = userdata;
        g->before_attach = before_attach;
        g->state = (GuardState) {
                .mode = GUARD_OFF,
                .wanted = mode,
                .from_cmdline = from_cmdline,
                .built = HAVE_GUARD,
                .lsm_active = lsm_active(),
        };

        if (not_service && mode != GUARD_OFF) {
                g->state.not_service = true;
                g->state.unavailable = not_service;
                *ret = TAKE_PTR(g);
                return 0;
        }
        if (mode == GUARD_OFF) {
                /* What an earlier instance attached goes: off is off, for every process. */
                if (fds_take(g->fds) > 0)
                        g->state.adopted = true;        /* to say that it was detached */
                fds_forget(g->fds);
                *ret = TAKE_PTR(g);
                return 0;
        }
        if (!HAVE_GUARD) {
                g->state.error = -EOPNOTSUPP;
                g->state.unavailable = "this modgated was built without the guard (-Dguard=disabled)";
        } else if (!g->state.lsm_active) {
                g->state.error = -EOPNOTSUPP;
                g->state.unavailable = "the kernel runs no BPF LSM (\"bpf\" is not in /sys/kernel/security/lsm: "
                        "add it to lsm= on the kernel command line)";
        }
#if HAVE_GUARD
        else {
                libbpf_set_print(libbpf_log);
                r = attach_or_adopt(g, e);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        g->state.error = r;
                        g->state.unavailable = "attaching the BPF program failed";
                        g->state.attached = false;
                }
        }
#endif
        (void) r;
        *ret = TAKE_PTR(g);
        return 0;
}

int guard_approve(Guard *g, int fd, const uint8_t *sha256, GuardTicket *ret) {
#if HAVE_GUARD
        struct guard_file_key key = {};
        struct guard_approval a = {};
        struct statx sx;
        int r;

        *ret = (GuardTicket) {};
        if (!g || !g->state.attached)
                return 0;
        if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_CTIME, &sx) < 0)
                return -errno;
        key = (struct guard_file_key) {
                .dev = ((__u64) sx.stx_dev_major << 20) | sx.stx_dev_minor,
                .ino = sx.stx_ino,
        };
        a = (struct guard_approval) {
                .ctime_sec = sx.stx_ctime.tv_sec,
                .ctime_nsec = sx.stx_ctime.tv_nsec,
                .tgid = (__u32) getpid(),
        };
        if (sha256) {
                a.flags |= GUARD_APPROVAL_SHA256;
                memcpy(a.sha256, sha256, sizeof(a.sha256));
                /* The test program approves other bytes than it checked: the kernel must refuse. */
                if (guard_test_wrong_hash)
                        a.sha256[0] ^= 0xff;
        }
        r = bpf_map_update_elem(g->fds[GUARD_FD_APPROVED], &key, &a, BPF_ANY);
        if (r < 0)
                return r;
        *ret = (GuardTicket) { .dev = key.dev, .ino = key.ino };
#else
        *ret = (GuardTicket) {};
#endif
        return 0;
}

void guard_withdraw(Guard *g, const GuardTicket *t) {
#if HAVE_GUARD
        struct guard_file_key key = { .dev = t->dev, .ino = t->ino };

        if (g && g->state.attached && (t->dev != 0 || t->ino != 0))
                (void) bpf_map_delete_elem(g->fds[GUARD_FD_APPROVED], &key);
#endif
}

#if !HAVE_GUARD
void guard_drain(Guard *g) {
}
#endif
