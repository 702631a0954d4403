// SPDX-License-Identifier: GPL-2.0-only
/* The guard: the kernel's own check that a module load comes from modgated, for the file modgated
 * approved. GPL, as the kernel requires of a program that uses the LSM hooks. modgated loads it, tells
 * it who modgated is (the config map), approves each file just before its finit_module(2) (the
 * approved map), and reads the refusals (the events ring buffer). */

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "guard-abi.h"

#ifndef EPERM
#define EPERM 1
#endif
#ifndef PTRACE_MODE_ATTACH
#define PTRACE_MODE_ATTACH 0x02
#endif

struct {
        __uint(type, BPF_MAP_TYPE_ARRAY);
        __uint(max_entries, 1);
        __type(key, __u32);
        __type(value, struct guard_config);
} guard_config SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_HASH);
        __uint(max_entries, GUARD_APPROVED_MAX);
        __type(key, struct guard_file_key);
        __type(value, struct guard_approval);
} guard_approved SEC(".maps");

struct {
        __uint(type, BPF_MAP_TYPE_RINGBUF);
        __uint(max_entries, GUARD_EVENTS_BYTES);
} guard_events SEC(".maps");

/* The kernel's dev_t, as new_encode_dev() does not change it: MAJOR << 20 | MINOR. */
static __always_inline __u64 inode_dev(struct inode *inode) {
        return BPF_CORE_READ(inode, i_sb, s_dev);
}

/* Records a refusal, and says what to return: enforce refuses, permissive only records. A full ring
 * buffer loses the record, never the refusal. */
static __always_inline int refuse(const struct guard_config *c, __u32 hook, __u32 why, struct inode *inode,
                                  __u32 detail) {
        struct task_struct *task = bpf_get_current_task_btf();
        __u64 id = bpf_get_current_pid_tgid();
        struct guard_event *e;
        __u32 mode = c ? c->mode : GUARD_MODE_ENFORCE;

        e = bpf_ringbuf_reserve(&guard_events, sizeof(*e), 0);
        if (e) {
                struct file *exe_file = BPF_CORE_READ(task, mm, exe_file);
                struct inode *exe = BPF_CORE_READ(exe_file, f_inode);
                const void *name;

                e->boot_ns = bpf_ktime_get_boot_ns();
                e->dev = inode ? inode_dev(inode) : 0;
                e->ino = inode ? BPF_CORE_READ(inode, i_ino) : 0;
                e->exe_dev = exe ? inode_dev(exe) : 0;
                e->exe_ino = exe ? BPF_CORE_READ(exe, i_ino) : 0;
                e->cgroup_id = bpf_get_current_cgroup_id();
                e->pid = (__u32) id;
                e->tgid = id >> 32;
                e->uid = (__u32) bpf_get_current_uid_gid();
                e->hook = hook;
                e->why = why;
                e->mode = mode;
                e->detail = detail;
                e->reserved = 0;
                bpf_get_current_comm(e->comm, sizeof(e->comm));
                /* What userspace could read from /proc only while the caller lives, which an insmod
                 * refused does not for long. The reserved record is not zeroed: each field is set. */
                name = exe_file ? BPF_CORE_READ(exe_file, f_path.dentry, d_name.name) : NULL;
                if (!name || bpf_probe_read_kernel_str(e->exe_name, sizeof(e->exe_name), name) < 0)
                        e->exe_name[0] = 0;
                name = BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, name);
                if (!name || bpf_probe_read_kernel_str(e->cgroup, sizeof(e->cgroup), name) < 0)
                        e->cgroup[0] = 0;
                bpf_ringbuf_submit(e, 0);
        }
        return mode == GUARD_MODE_PERMISSIVE ? 0 : -EPERM;
}

/* Whether the current task runs modgated's executable: modgated, or the next instance that replaces
 * the guard of another version. */
static __always_inline bool runs_gate_exe(const struct guard_config *c) {
        struct task_struct *task = bpf_get_current_task_btf();
        struct inode *exe = BPF_CORE_READ(task, mm, exe_file, f_inode);

        return exe && inode_dev(exe) == c->exe_dev && BPF_CORE_READ(exe, i_ino) == c->exe_ino;
}

/* Whether the current task is modgated: its process, running its executable. */
static __always_inline bool is_gate(const struct guard_config *c) {
        return (bpf_get_current_pid_tgid() >> 32) == c->tgid && runs_gate_exe(c);
}

/* The kernel's own SHA-256 of the file (IMA's, which hashes a file it has not measured on demand):
 * whether it differs from the approved one. A kernel that hashes with another algorithm (ima_hash= on
 * its command line) cannot be compared; the identity checks stand alone there. */
static __always_inline bool hash_differs(struct file *file, const struct guard_approval *a) {
        __u8 h[32];
        long alg;

        if (!(a->flags & GUARD_APPROVAL_SHA256))
                return false;
        alg = bpf_ima_file_hash(file, h, sizeof(h));
        if (alg != HASH_ALGO_SHA256)
                return false;
        for (int i = 0; i < 32; i++)
                if (h[i] != a->sha256[i])
                        return true;
        return false;
}

/* finit_module(2) reads the module through kernel_read_file(), after it denied write access to the
 * file: what is checked here is what the kernel reads. */
SEC("lsm.s/kernel_read_file")
int BPF_PROG(modgate_read_file, struct file *file, enum kernel_read_file_id id, bool contents, int ret) {
        struct guard_file_key key = {};
        struct guard_approval *a;
        struct guard_config *c;
        struct inode *inode;
        __u32 zero = 0;

        if (ret != 0)
                return ret;
        if (id != READING_MODULE)
                return 0;

        inode = BPF_CORE_READ(file, f_inode);
        c = bpf_map_lookup_elem(&guard_config, &zero);
        if (!c || c->tgid == 0)
                return refuse(c, GUARD_HOOK_READ_FILE, GUARD_WHY_NO_CONFIG, inode, 0);
        if (!is_gate(c))
                return refuse(c, GUARD_HOOK_READ_FILE, GUARD_WHY_NOT_GATE, inode, 0);

        key.dev = inode_dev(inode);
        key.ino = BPF_CORE_READ(inode, i_ino);
        a = bpf_map_lookup_elem(&guard_approved, &key);
        if (!a || a->tgid != c->tgid)
                return refuse(c, GUARD_HOOK_READ_FILE, GUARD_WHY_NOT_APPROVED, inode, 0);
        /* Kernels with multigrain time stamps (6.13) keep a flag in the top bit of the nanoseconds. */
        if (a->ctime_sec != BPF_CORE_READ(inode, i_ctime_sec) ||
            a->ctime_nsec != (BPF_CORE_READ(inode, i_ctime_nsec) & ~(1U << 31)))
                return refuse(c, GUARD_HOOK_READ_FILE, GUARD_WHY_CHANGED, inode, 0);
        /* After the kernel denied write access to the file: what is hashed here is what it reads. */
        if (hash_differs(file, a))
                return refuse(c, GUARD_HOOK_READ_FILE, GUARD_WHY_HASH, inode, 0);
        return 0;
}

/* init_module(2): modgated never calls it, and a blob of memory has no origin to check. */
SEC("lsm/kernel_load_data")
int BPF_PROG(modgate_load_data, enum kernel_load_data_id id, bool contents, int ret) {
        struct guard_config *c;
        __u32 zero = 0;

        if (ret != 0)
                return ret;
        if (id != LOADING_MODULE)
                return 0;
        c = bpf_map_lookup_elem(&guard_config, &zero);
        return refuse(c, GUARD_HOOK_LOAD_DATA, GUARD_WHY_BLOB, NULL, 0);
}

/* Self-protection. Only modgated and PID 1 (its fd store) hold fds of the guard's links and maps, and
 * whoever holds one can detach a link (by closing the last fd, or BPF_LINK_DETACH) or change a map. So
 * the guard refuses every way for another process to get one: a new fd of a map by its id (this hook)
 * or of a link by its id, and ptrace access to modgated (pidfd_getfd(2) and /proc/PID/mem included).
 * PID 1 is not protected: root who controls it is beyond the guard (docs/guard.md). */
static __always_inline bool is_guard_map(const struct bpf_map *map) {
        return map == (const void *) &guard_config || map == (const void *) &guard_approved ||
                map == (const void *) &guard_events;
}

/* Not in the guard's config until it is attached: it protects nothing before it is. */
static __always_inline const struct guard_config *config_attached(void) {
        const struct guard_config *c;
        __u32 zero = 0;

        c = bpf_map_lookup_elem(&guard_config, &zero);
        return c && c->tgid != 0 && c->link_ids[0] != 0 ? c : NULL;
}

SEC("lsm/bpf_map")
int BPF_PROG(modgate_bpf_map, struct bpf_map *map, fmode_t fmode, int ret) {
        const struct guard_config *c;

        if (ret != 0 || !is_guard_map(map))
                return ret;
        c = config_attached();
        if (!c)
                return 0;
        return refuse(c, GUARD_HOOK_BPF_MAP, GUARD_WHY_PROTECTED, NULL, fmode);
}

static __always_inline bool is_hook_func(const struct guard_config *c, __u32 btf_id) {
        for (int i = 0; i < GUARD_HOOK_FUNCS; i++)
                if (c->hook_btf_ids[i] != 0 && c->hook_btf_ids[i] == btf_id)
                        return true;
        return false;
}

/* The kernel's bpf(2), before each command (the hook's arguments as of Linux 6.12: modgated attaches
 * this program only where the kernel's BTF says so). */
SEC("lsm/bpf")
int BPF_PROG(modgate_bpf, int cmd, union bpf_attr *attr, unsigned int size, int ret) {
        const struct guard_config *c;
        __u32 id;

        if (ret != 0)
                return ret;
        c = config_attached();
        if (!c)
                return 0;
        switch (cmd) {
        case BPF_LINK_GET_FD_BY_ID:
                id = BPF_CORE_READ(attr, link_id);
                for (int i = 0; i < GUARD_LINKS; i++)
                        if (id != 0 && id == c->link_ids[i])
                                return refuse(c, GUARD_HOOK_BPF, GUARD_WHY_PROTECTED, NULL, cmd);
                return 0;
        case BPF_PROG_LOAD:
                /* fmod_ret programs may change what any security_*() function returns, the module
                 * hooks' included: nothing on a machine the guard enforces needs one. */
                if (BPF_CORE_READ(attr, expected_attach_type) == BPF_MODIFY_RETURN)
                        return refuse(c, GUARD_HOOK_BPF, GUARD_WHY_FMOD_RET, NULL, cmd);
                /* Another program on the guard's own hooks: the kernel takes the answer of the last
                 * one attached. modgated's executable may load the guard that replaces this one. */
                if (BPF_CORE_READ(attr, attach_btf_obj_fd) == 0 &&
                    is_hook_func(c, BPF_CORE_READ(attr, attach_btf_id)) && !runs_gate_exe(c))
                        return refuse(c, GUARD_HOOK_BPF, GUARD_WHY_PROTECTED, NULL, cmd);
                return 0;
        default:
                return 0;
        }
}

/* ptrace access to modgated by any other process: attaching, pidfd_getfd(2) (which would hand it the
 * guard's fds), /proc/PID/mem. Reading /proc/PID/ files that need only PTRACE_MODE_READ stays allowed:
 * a map's or a link's fd cannot be opened again through /proc/PID/fd. */
SEC("lsm/ptrace_access_check")
int BPF_PROG(modgate_ptrace, struct task_struct *child, unsigned int mode, int ret) {
        const struct guard_config *c;

        if (ret != 0 || !(mode & PTRACE_MODE_ATTACH))
                return ret;
        c = config_attached();
        if (!c || BPF_CORE_READ(child, tgid) != c->tgid || is_gate(c))
                return 0;
        return refuse(c, GUARD_HOOK_PTRACE, GUARD_WHY_PROTECTED, NULL, mode);
}

char LICENSE[] SEC("license") = "GPL";
