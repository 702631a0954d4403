/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "guard-util.h"
#include "macro.h"
#include "tests.h"

TEST(modes) {
        GuardMode m = GUARD_OFF;

        for (GuardMode i = 0; i < _GUARD_MAX; i++) {
                check(guard_mode_from_string(guard_mode_to_string(i), &m) == 0);
                check(m == i);
        }
        check_streq(guard_mode_to_string(GUARD_ENFORCE), "enforce");
        check(guard_mode_from_string("Enforce", &m) == -EINVAL);
        check(guard_mode_from_string("", &m) == -EINVAL);
        check(guard_mode_from_string(NULL, &m) == -EINVAL);
        check(m == GUARD_ENFORCE);      /* untouched by the failures */
        check(!guard_mode_to_string(_GUARD_MAX));
        /* The daemon's names are the program's numbers: the config map carries them. */
        check((int) GUARD_PERMISSIVE == GUARD_MODE_PERMISSIVE && (int) GUARD_ENFORCE == GUARD_MODE_ENFORCE);
        check(GUARD_MODE_DEFAULT == GUARD_PERMISSIVE);
}

TEST(modprobe_replaced) {
        /* The kernel's default, as /proc/sys/kernel/modprobe reads it: the guard would refuse its loads. */
        check(guard_modprobe_replaced("/sbin/modprobe\n"));
        check(guard_modprobe_replaced("/sbin/modprobe"));
        /* Already modgate's, or the administrator's choice: left as it is. */
        check(!guard_modprobe_replaced("/usr/libexec/modgate/modgate-modprobe\n"));
        check(!guard_modprobe_replaced("\n"));
        check(!guard_modprobe_replaced(""));
        check(!guard_modprobe_replaced("/bin/true\n"));
        check(!guard_modprobe_replaced("/sbin/modprobe.real\n"));
        check(!guard_modprobe_replaced("/sbin/modprobe\n\n"));
        check(!guard_modprobe_replaced(NULL));
}

TEST(cmdline) {
        GuardMode m = GUARD_PERMISSIVE;

        check(guard_mode_from_cmdline("BOOT_IMAGE=/vmlinuz root=/dev/vda1 quiet", &m) == 0);
        check(m == GUARD_PERMISSIVE);
        check(guard_mode_from_cmdline("quiet modgate.guard=enforce", &m) == 1);
        check(m == GUARD_ENFORCE);
        check(guard_mode_from_cmdline("modgate.guard=off\n", &m) == 1);
        check(m == GUARD_OFF);
        /* The last one wins, as the kernel takes the last of a repeated parameter. */
        check(guard_mode_from_cmdline("modgate.guard=off x=1 modgate.guard=permissive", &m) == 1);
        check(m == GUARD_PERMISSIVE);
        /* A bad value is an error, and changes nothing; so is a bare key. */
        m = GUARD_ENFORCE;
        check(guard_mode_from_cmdline("modgate.guard=enforcing", &m) == -EINVAL);
        check(guard_mode_from_cmdline("modgate.guard", &m) == -EINVAL);
        check(guard_mode_from_cmdline("modgate.guard=", &m) == -EINVAL);
        check(guard_mode_from_cmdline("modgate.guard=permissiveXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", &m) == -EINVAL);
        check(guard_mode_from_cmdline("modgate.guard=off modgate.guard=bogus", &m) == -EINVAL);
        check(m == GUARD_ENFORCE);
        /* Other keys that begin the same are not it. */
        check(guard_mode_from_cmdline("modgate.guardian=off xmodgate.guard=off modgate.mode=permissive", &m) == 0);
        check(guard_mode_from_cmdline("", &m) == 0);
        check(guard_mode_from_cmdline(NULL, &m) == 0);
        check(m == GUARD_ENFORCE);
}

TEST(lsm_list) {
        check(guard_lsm_listed("lockdown,capability,landlock,yama,apparmor,tomoyo,bpf,ipe,ima,evm\n"));
        check(guard_lsm_listed("bpf"));
        check(guard_lsm_listed("capability,bpf\n"));
        check(!guard_lsm_listed("lockdown,capability,landlock,yama,apparmor\n"));
        check(!guard_lsm_listed("capability,bpfx,xbpf"));
        check(!guard_lsm_listed(""));
        check(!guard_lsm_listed(NULL));
}

TEST(kernel_dev) {
        /* The kernel's dev_t is MAJOR << 20 | MINOR, whatever glibc's encoding is. */
        check(guard_kernel_dev(makedev(254, 0)) == ((__u64) 254 << 20));
        check(guard_kernel_dev(makedev(8, 1)) == ((__u64) 8 << 20 | 1));
        check(guard_kernel_dev(makedev(259, 300)) == ((__u64) 259 << 20 | 300));
        check(guard_kernel_dev(makedev(0, 0x12345)) == 0x12345);
        check(guard_user_dev(guard_kernel_dev(makedev(259, 300))) == makedev(259, 300));
        check(guard_user_dev((__u64) 7 << 20 | 0xfffff) == makedev(7, 0xfffff));
}

/* The layout both compilers must agree on: the program writes these, modgated reads them. */
TEST(record_formats) {
        check(sizeof(struct guard_config) == 80);
        check(offsetof(struct guard_config, exe_dev) == 8);
        check(offsetof(struct guard_config, abi) == 32);
        check(offsetof(struct guard_config, link_ids) == 36);
        check(offsetof(struct guard_config, hook_btf_ids) == 56);
        check(sizeof(struct guard_file_key) == 16);
        check(sizeof(struct guard_approval) == 56);
        check(offsetof(struct guard_approval, tgid) == 12);
        check(offsetof(struct guard_approval, sha256) == 24);
        check(sizeof(struct guard_event) == 192);
        check(offsetof(struct guard_event, pid) == 48);
        check(offsetof(struct guard_event, detail) == 72);
        check(offsetof(struct guard_event, comm) == 80);
        check(offsetof(struct guard_event, exe_name) == 96);
        check(offsetof(struct guard_event, cgroup) == 128);
}

static struct guard_event insmod_event(void) {
        return (struct guard_event) {
                .dev = guard_kernel_dev(makedev(254, 1)),
                .ino = 1234,
                .exe_dev = guard_kernel_dev(makedev(254, 0)),
                .exe_ino = 77,
                .cgroup_id = 9,
                .pid = 345,
                .tgid = 345,
                .uid = 0,
                .hook = GUARD_HOOK_READ_FILE,
                .why = GUARD_WHY_NOT_GATE,
                .mode = GUARD_MODE_ENFORCE,
                .comm = "insmod",
                .exe_name = "kmod",
                .cgroup = "session-1.scope",
        };
}

TEST(event_check) {
        struct guard_event e = insmod_event();

        check(guard_event_check(&e, sizeof(e)) == 0);
        check(guard_event_check(&e, sizeof(e) - 1) == -EBADMSG);
        check(guard_event_check(&e, sizeof(e) + 8) == -EBADMSG);
        e.hook = 6;
        check(guard_event_check(&e, sizeof(e)) == -EBADMSG);
        e.hook = 0;
        check(guard_event_check(&e, sizeof(e)) == -EBADMSG);
        e = insmod_event();
        e.why = _GUARD_WHY_MAX;
        check(guard_event_check(&e, sizeof(e)) == -EBADMSG);
        e = insmod_event();
        e.why = 0;
        check(guard_event_check(&e, sizeof(e)) == -EBADMSG);
        e = insmod_event();
        e.mode = 9;
        check(guard_event_check(&e, sizeof(e)) == -EBADMSG);
}

TEST(event_message) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL;
        struct guard_event e = insmod_event();
        char key[64];

        check(guard_event_message(&e, &a) == 0);
        check_streq(a, "The guard refused finit_module() of a file (device 254:1, inode 1234) by insmod[345] (uid 0, "
                    "executable kmod, cgroup session-1.scope): only modgated loads modules.");
        check(guard_event_key(&e, key, sizeof(key)) == 0);
        check_streq(key, "insmod:finit_module:caller");

        /* init_module names no file; permissive says it refused nothing. A comm set to control
         * characters, and names that fill their fields without a NUL, stay printable and bounded. */
        e.hook = GUARD_HOOK_LOAD_DATA;
        e.why = GUARD_WHY_BLOB;
        e.mode = GUARD_MODE_PERMISSIVE;
        memcpy(e.comm, "ev\x1b[2Jil\nname", 14);
        memset(e.exe_name, 'x', sizeof(e.exe_name));
        memset(e.cgroup, 0, sizeof(e.cgroup));
        check(guard_event_message(&e, &b) == 0);
        check_streq(b, "The guard would have refused (permissive mode) init_module() by ev?[2Jil?name[345] (uid 0, "
                    "executable xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx, cgroup ?): init_module() loads a module from "
                    "memory, which has no origin to check.");
        check(guard_event_key(&e, key, sizeof(key)) == 0);
        check_streq(key, "ev?[2Jil?name:init_module:blob");
        check(guard_event_key(&e, key, 8) == -ENOBUFS);

        e = insmod_event();
        e.why = GUARD_WHY_CHANGED;
        e.tgid = 100;
        e.pid = 101;
        check(guard_event_message(&e, &c) == 0);
        check(strstr(c, "by insmod[100] "));
        check(strstr(c, ": the approved file changed after modgated checked it."));
        e.why = GUARD_WHY_HASH;
        check(guard_event_check(&e, sizeof(e)) == 0);
        check(guard_event_key(&e, key, sizeof(key)) == 0);
        check_streq(key, "insmod:finit_module:hash");
}

/* The self-protection's refusals: the hook, and what the program puts in detail. */
TEST(protection_messages) {
        _cleanup_free_ char *a = NULL, *b = NULL, *c = NULL, *d = NULL;
        struct guard_event e = insmod_event();
        char key[64];

        memcpy(e.comm, "bpftool", 8);
        e.hook = GUARD_HOOK_BPF;
        e.why = GUARD_WHY_PROTECTED;
        e.detail = 30;  /* BPF_LINK_GET_FD_BY_ID */
        check(guard_event_check(&e, sizeof(e)) == 0);
        check(guard_event_message(&e, &a) == 0);
        check_streq(a, "The guard refused bpf() (command 30) by bpftool[345] (uid 0, executable kmod, cgroup "
                    "session-1.scope): the guard's links and maps, and modgated's memory, are modgated's alone.");
        check(guard_event_key(&e, key, sizeof(key)) == 0);
        check_streq(key, "bpftool:bpf:protected");

        e.hook = GUARD_HOOK_BPF_MAP;
        check(guard_event_message(&e, &b) == 0);
        check(strstr(b, "refused bpf() of a new fd of one of its maps by bpftool[345] "));

        e.hook = GUARD_HOOK_PTRACE;
        e.detail = 0x11;
        check(guard_event_message(&e, &c) == 0);
        check(strstr(c, "refused ptrace() access to modgated (mode 0x11) by bpftool[345] "));
        check(guard_event_key(&e, key, sizeof(key)) == 0);
        check_streq(key, "bpftool:ptrace:protected");

        e.hook = GUARD_HOOK_BPF;
        e.why = GUARD_WHY_FMOD_RET;
        e.detail = 5;   /* BPF_PROG_LOAD */
        check(guard_event_message(&e, &d) == 0);
        check(strstr(d, "refused bpf() (command 5) by bpftool[345] "));
        check(strstr(d, ": a BPF program that may change what a security hook returns is not loaded while the guard "
                     "is attached."));
}

int main(void) {
        RUN(modes);
        RUN(modprobe_replaced);
        RUN(cmdline);
        RUN(lsm_list);
        RUN(kernel_dev);
        RUN(record_formats);
        RUN(event_check);
        RUN(event_message);
        RUN(protection_messages);
        return tests_done();
}
