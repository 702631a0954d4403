/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What modgated and the guard program (modgate-guard.bpf.c) tell each other through the guard's maps
 * and its ring buffer. Included by both: by the BPF program after vmlinux.h, by modgated after
 * <linux/types.h>. Every struct is laid out without implicit padding, so both compilers agree. */

/* What a modgated that adopts a guard attached by another build checks first: a guard of another
 * version is replaced, not told things in a layout it does not read. */
#define GUARD_ABI 3

#define GUARD_APPROVED_MAX 256          /* files approved at once: one per worker is ever in use */
#define GUARD_EVENTS_BYTES (256 * 1024) /* the ring buffer: about 1,300 refusals waiting to be read */
#define GUARD_LINKS 5                   /* its programs: two for module loads, three that protect it */
#define GUARD_HOOK_FUNCS 6              /* bpf_lsm_kernel_read_file, ..._load_data, _bpf, _bpf_map, _ptrace_access_check, and one spare */

enum {
        GUARD_MODE_OFF,                 /* detached; never in the config map */
        GUARD_MODE_PERMISSIVE,          /* records what it would refuse, refuses nothing */
        GUARD_MODE_ENFORCE,
        _GUARD_MODE_MAX,
};

/* The hook a refusal was made in. */
enum {
        GUARD_HOOK_READ_FILE = 1,       /* kernel_read_file, READING_MODULE: finit_module(2) */
        GUARD_HOOK_LOAD_DATA = 2,       /* kernel_load_data, LOADING_MODULE: init_module(2) */
        GUARD_HOOK_BPF = 3,             /* bpf(2) on the guard's own links and maps (detail: the command) */
        GUARD_HOOK_BPF_MAP = 4,         /* a new fd of one of the guard's maps: BPF_MAP_GET_FD_BY_ID */
        GUARD_HOOK_PTRACE = 5,          /* ptrace access to modgated (detail: the PTRACE_MODE_* bits) */
};

/* Why. */
enum {
        GUARD_WHY_NOT_GATE = 1,         /* the caller is not modgated */
        GUARD_WHY_NOT_APPROVED = 2,     /* modgated, but the file is not the one it approved */
        GUARD_WHY_CHANGED = 3,          /* the approved inode, changed since (its ctime) */
        GUARD_WHY_BLOB = 4,             /* init_module(2): a blob of memory has no origin */
        GUARD_WHY_NO_CONFIG = 5,        /* attached but not told who modgated is yet */
        GUARD_WHY_HASH = 6,             /* the file's bytes, hashed by the kernel, are not those approved */
        GUARD_WHY_PROTECTED = 7,        /* the guard's links and maps, and modgated's memory, are its own */
        GUARD_WHY_FMOD_RET = 8,         /* a BPF program that could change what an LSM hook returns */
        _GUARD_WHY_MAX,
};

/* The one entry of the config map: who modgated is. The program sees it at every hook, so a new
 * instance of modgated that adopts the guard writes itself in. */
struct guard_config {
        __u32 mode;                     /* GUARD_MODE_PERMISSIVE or GUARD_MODE_ENFORCE */
        __u32 tgid;                     /* modgated's process */
        __u64 exe_dev;                  /* and its executable: the kernel's dev_t (MAJOR << 20 | MINOR) */
        __u64 exe_ino;
        __u64 attached_usec;            /* CLOCK_REALTIME of the attach, kept for later instances */
        __u32 abi;                      /* GUARD_ABI of the modgated that attached it */
        __u32 link_ids[GUARD_LINKS];    /* the guard's links (0 for one not attached), which nobody else may
                                         * take an fd of: 0 until all are attached */
        /* The BTF ids (in vmlinux) of the functions the guard's programs attach to: a program of another
         * process may not attach there too, where the last program's answer is the kernel's. */
        __u32 hook_btf_ids[GUARD_HOOK_FUNCS];
};

/* A key of the approved map: the file modgated hands to finit_module(2), as the kernel sees its
 * inode. */
struct guard_file_key {
        __u64 dev;                      /* the kernel's dev_t of the inode's super block */
        __u64 ino;
};

#define GUARD_APPROVAL_SHA256 (1U << 0)

struct guard_approval {
        __s64 ctime_sec;                /* the inode's change time when approved: a write since changes it */
        __u32 ctime_nsec;
        __u32 tgid;                     /* who approved it: only that process may load it */
        __u32 flags;                    /* GUARD_APPROVAL_SHA256: sha256 is set */
        __u32 reserved;
        __u8 sha256[32];                /* of the file's bytes, as modgated read them from the same fd */
};

/* One record of the ring buffer: a refusal, or what would have been one in permissive mode. */
struct guard_event {
        __u64 boot_ns;                  /* CLOCK_BOOTTIME */
        __u64 dev;                      /* the file's, as in guard_file_key; 0 for init_module */
        __u64 ino;
        __u64 exe_dev;                  /* the caller's executable */
        __u64 exe_ino;
        __u64 cgroup_id;
        __u32 pid;                      /* the caller's thread */
        __u32 tgid;                     /* and its process */
        __u32 uid;
        __u32 hook;                     /* GUARD_HOOK_* */
        __u32 why;                      /* GUARD_WHY_* */
        __u32 mode;                     /* GUARD_MODE_* in force: enforce refused it */
        __u32 detail;                   /* GUARD_HOOK_BPF: the command; GUARD_HOOK_PTRACE: the mode bits */
        __u32 reserved;
        char comm[16];                  /* the caller's command name: whatever it set */
        char exe_name[32];              /* its executable's file name (not the path), as it is now */
        char cgroup[64];                /* the name of its cgroup: its unit, for a service or a scope */
};
