/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "loader.h"

/* The message ids of modgate's journal records; explained in catalog/modgate.catalog. */
#define MODGATE_MESSAGE_MODULE_LOADED "9f556e7045894398898a0967ca80c0b2"
#define MODGATE_MESSAGE_MODULE_PRESENT "9804cc4e5ad548c785ff9f16da0c915f"
#define MODGATE_MESSAGE_MODULE_DENIED "3c67f0aec4794a73a35a7cb128a9d622"
#define MODGATE_MESSAGE_MODULE_FAILED "13e53cc4fa4c4374879d2a1775a89733"

/* Who asked. */
typedef struct Requester {
        const char *request;    /* the name as the client sent it */
        bool have_peer;
        pid_t pid;
        uid_t uid;
} Requester;

/* Writes one journal record for the decision on one module. When the journal cannot be reached the
 * same fields go to stderr on one line, so that no decision goes unrecorded. */
void journal_record_module(const Requester *who, const ModuleResult *r);
