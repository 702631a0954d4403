/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* What a module file says of itself: its .modinfo section and its appended signature, as libkmod
 * reads them (kmod_module_get_info(), what modinfo(8) prints). */
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

/* Reads ModInfo with libkmod from the already-open fd (through /proc/self/fd, so the same inode,
 * decompressed as libkmod does). alias_key, when not NULL, is the key a request was resolved from
 * (a modalias, an alias): the alias pattern it matched is looked up among the file's. A private
 * libkmod context with no configuration: safe on any thread. -errno when the file cannot be read as
 * a module; *ret is written only on success. */
int modinfo_from_fd(int fd, const char *alias_key, ModInfo *ret);
