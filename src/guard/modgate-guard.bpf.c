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
static __always_inline int refuse(const struct guard_config *c, __u32 hook, __u32 why, struct inode *inode) {
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

/* Whether the current task is modgated: its process, running its executable. */
static __always_inline bool is_gate(const struct guard_config *c) {
        struct task_struct *task = bpf_get_current_task_btf();
        struct inode *exe;

        if ((bpf_get_current_pid_tgid() >> 32) != c->tgid)
                return false;
        exe = BPF_CORE_READ(task, mm, exe_file, f_inode);
        return exe && inode_dev(exe) == c->exe_dev && BPF_CORE_READ(exe, i_ino) == c->exe_ino;
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
                return refuse(c, GUARD_HOOK_READ_FILE, GUARD_WHY_NO_CONFIG, inode);
        if (!is_gate(c))
                return refuse(c, GUARD_HOOK_READ_FILE, GUARD_WHY_NOT_GATE, inode);

        key.dev = inode_dev(inode);
        key.ino = BPF_CORE_READ(inode, i_ino);
        a = bpf_map_lookup_elem(&guard_approved, &key);
        if (!a || a->tgid != c->tgid)
                return refuse(c, GUARD_HOOK_READ_FILE, GUARD_WHY_NOT_APPROVED, inode);
        /* Kernels with multigrain time stamps (6.13) keep a flag in the top bit of the nanoseconds. */
        if (a->ctime_sec != BPF_CORE_READ(inode, i_ctime_sec) ||
            a->ctime_nsec != (BPF_CORE_READ(inode, i_ctime_nsec) & ~(1U << 31)))
                return refuse(c, GUARD_HOOK_READ_FILE, GUARD_WHY_CHANGED, inode);
        /* After the kernel denied write access to the file: what is hashed here is what it reads. */
        if (hash_differs(file, a))
                return refuse(c, GUARD_HOOK_READ_FILE, GUARD_WHY_HASH, inode);
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
        return refuse(c, GUARD_HOOK_LOAD_DATA, GUARD_WHY_BLOB, NULL);
}

char LICENSE[] SEC("license") = "GPL";
