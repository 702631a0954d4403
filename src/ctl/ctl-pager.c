/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl-output.h"
#include "ctl-pager.h"
#include "ctl.h"
#include "log.h"

static pid_t pager_pid = 0;

static const char *pager_command(void) {
        static const char *const vars[] = { "MODGATE_PAGER", "SYSTEMD_PAGER", "PAGER" };

        for (size_t i = 0; i < ELEMENTSOF(vars); i++) {
                const char *e = getenv(vars[i]);

                if (e)
                        return e;
        }
        return NULL;
}

/* In the child: stdin is the pipe. Tries the command asked for, then less, then more; copies
 * through as a last resort, so that output is never lost. */
static _noreturn_ void pager_exec(const char *command) {
        char buf[4096];
        ssize_t n;

        (void) setenv("LESS", "FRSXMK", 0);
        (void) setenv("LESSCHARSET", "utf-8", 0);
        if (command)
                execl("/bin/sh", "sh", "-c", command, (char *) NULL);
        execlp("less", "less", (char *) NULL);
        execlp("more", "more", (char *) NULL);
        while ((n = read(STDIN_FILENO, buf, sizeof(buf))) > 0)
                if (write(STDOUT_FILENO, buf, (size_t) n) != n)
                        break;
        _exit(EXIT_SUCCESS);
}

void pager_open(void) {
        const char *command = pager_command();
        int fd[2];
        pid_t pid;

        if (arg_no_pager || pager_pid > 0 || !isatty(STDOUT_FILENO) || terminal_is_dumb())
                return;
        if (command && (command[0] == 0 || strcmp(command, "cat") == 0))
                return;

        /* Decided on the terminal, before stdout becomes the pipe: less -R shows the colours. */
        (void) colors_enabled();
        if (pipe2(fd, O_CLOEXEC) < 0) {
                (void) log_debug_errno(errno, "Failed to make a pipe for the pager, going on without: %m");
                return;
        }
        fflush(stdout);
        pid = fork();
        if (pid < 0) {
                (void) log_debug_errno(errno, "Failed to fork the pager, going on without: %m");
                (void) close(fd[0]);
                (void) close(fd[1]);
                return;
        }
        if (pid == 0) {
                if (dup2(fd[0], STDIN_FILENO) < 0)
                        _exit(EXIT_FAILURE);
                (void) close(fd[0]);
                (void) close(fd[1]);
                pager_exec(command);
        }

        if (dup2(fd[1], STDOUT_FILENO) < 0) {
                (void) log_debug_errno(errno, "Failed to hand stdout to the pager: %m");
                (void) kill(pid, SIGTERM);
        }
        (void) close(fd[0]);
        (void) close(fd[1]);
        pager_pid = pid;
        /* Quitting the pager early is no error of ours. */
        (void) signal(SIGPIPE, SIG_IGN);
}

void pager_close(void) {
        if (pager_pid <= 0)
                return;
        fflush(stdout);
        (void) fclose(stdout);
        (void) close(STDOUT_FILENO);
        (void) kill(pager_pid, SIGCONT);
        while (waitpid(pager_pid, NULL, 0) < 0 && errno == EINTR)
                ;
        pager_pid = 0;
}
