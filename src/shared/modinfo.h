/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* What a module file says of itself: its .modinfo section and its appended signature, as libkmod
 * reads them (kmod_module_get_info(), what modinfo(8) prints), from the file or, for the same bytes,
 * from a manifest that lists them (docs/manifest.md). */
typedef struct ModInfo {
        char *name;             /* the "name" key: the name the kernel will load it as; NULL when
                                 * absent (kernels before 5.x did not write it) */
        bool is_signed;         /* a signature is appended; then, each NULL when libkmod cannot tell: */
        char *signature_type;   /* "PKCS#7", "X509" or "PGP" */
        char *signer;
        char *signature_key;    /* the key's id: hex bytes joined by colons, as modinfo(8) prints it */
        char *signature_hash;   /* "sha256", ... */
        char *alias;            /* the file's first "alias" pattern that the request's key matches */
} ModInfo;

void modinfo_done(ModInfo *m);
