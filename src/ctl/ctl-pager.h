/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* Long output goes through a pager, as systemd's tools do: $MODGATE_PAGER, else $SYSTEMD_PAGER, else
 * $PAGER, else less (with LESS=FRSXMK unless $LESS is set) or more. Only when stdout is a terminal
 * that is not dumb; never with --no-pager; an empty pager or "cat" means none. */
void pager_open(void);
/* Waits for the pager to end, so that the shell's prompt comes after it. */
void pager_close(void);
