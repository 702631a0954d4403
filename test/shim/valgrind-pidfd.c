/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* LD_PRELOAD for the daemon under valgrind (tools/valgrind), after the module shim: valgrind 3.24
 * does not know pidfd_send_signal(2) and answers it ENOSYS, which would make every caller's identity
 * unreadable. Signal 0 through a pidfd is answered from what the kernel says of the pidfd: its
 * fdinfo's "Pid:" is the process's pid, or -1 once it has exited (Linux 5.10 and later); then
 * kill(pid, 0), as the syscall would. Every other call goes to the next syscall() unchanged. Only for
 * the valgrind run: nothing else loads it. */

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static long pidfd_signal0(int pidfd) {
        char path[64], line[128];
        long pid = 0;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
        f = fopen(path, "re");
        if (!f) {
                errno = EBADF;
                return -1;
        }
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "Pid: %ld", &pid) == 1)
                        break;
        fclose(f);
        if (pid == 0) {
                errno = EBADF;  /* not a pidfd */
                return -1;
        }
        if (pid < 0) {
                errno = ESRCH;
                return -1;
        }
        return kill((pid_t) pid, 0);
}

long syscall(long number, ...) {
        static long (*real)(long, ...) = NULL;
        long a[6];
        va_list ap;

        va_start(ap, number);
        for (int i = 0; i < 6; i++)
                a[i] = va_arg(ap, long);
        va_end(ap);

        if (number == SYS_pidfd_send_signal && a[1] == 0 && a[2] == 0 && a[3] == 0)
                return pidfd_signal0((int) a[0]);
        if (!real)
                real = (long (*)(long, ...)) dlsym(RTLD_NEXT, "syscall");
        return real(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
