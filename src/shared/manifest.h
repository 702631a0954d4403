/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "macro.h"
#include "modinfo.h"
#include "sha256.h"

/* A manifest lists the SHA-256 of every module file of one kernel's module tree, written when the
 * kernel was installed; docs/manifest.md describes the format. This is pure parsing: nothing here
 * opens a file or logs. */

#define MANIFEST_DIR "/var/lib/modgate/manifests"
#define MANIFEST_SUFFIX ".sha256"
/* Version 1 lists digests; version 2 may follow each entry with the line of what its bytes say of
 * themselves (MANIFEST_INFO_PREFIX). */
#define MANIFEST_HEADER_PREFIX "# modgate manifest "
#define MANIFEST_HEADER_WANT MANIFEST_HEADER_PREFIX "VERSION kernel=KVER origin=ORIGIN"
#define MANIFEST_INFO_PREFIX "#: "

#define MANIFEST_FILE_MAX (64 * 1024 * 1024)
#define MANIFEST_ENTRIES_MAX 1000000
#define MANIFEST_PATH_MAX 4096
/* A kernel release as uname(2) gives it: at most __NEW_UTS_LEN bytes. */
#define MANIFEST_KERNEL_MAX 64

typedef enum ManifestOrigin {
        MANIFEST_ORIGIN_KERNEL_INSTALL,         /* written when the kernel was installed */
        MANIFEST_ORIGIN_FIRST_USE,              /* trust on first use: the tree as it was found */
        MANIFEST_ORIGIN_ADMIN,                  /* written by the administrator with the tool */
        _MANIFEST_ORIGIN_MAX,
} ManifestOrigin;

typedef struct Manifest Manifest;

/* Parses the text of a manifest. Returns 0, -EBADMSG when it is not a valid manifest, -EFBIG when it
 * is larger than MANIFEST_FILE_MAX or lists more than MANIFEST_ENTRIES_MAX entries, -ENOMEM, or the
 * read error. On error *reterr_message (when not NULL) is set to what is wrong, for the
 * administrator: "LINE: what is wrong" for a line, "what is wrong" for the whole file; it may be NULL
 * after -ENOMEM. It only ever echoes printable text. Nothing is written on success. */
int manifest_parse(FILE *f, Manifest **ret, char **reterr_message);

/* Reads the manifest from an fd the caller opened (and still owns; its offset does not move), after
 * checking on that fd that it is a regular file, not writable by group or others, owned by root: else
 * -EPERM, with a message naming the file type, the mode or the owner. Otherwise as manifest_parse(). */
int manifest_load_fd(int fd, Manifest **ret, char **reterr_message);

/* Opens path (not following a symlink there, never blocking on a FIFO) and reads it with
 * manifest_load_fd(). An open that fails returns its -errno, with no message. */
int manifest_load_path(const char *path, Manifest **ret, char **reterr_message);

/* The digest listed for relpath (exactly as listed: relative to the module tree, normalized), or
 * NULL. O(log n). The pointer lives as long as the manifest. */
const uint8_t *manifest_lookup(const Manifest *m, const char *relpath);

/* What modgate-manifest read from the .modinfo of the bytes listed for relpath, when the manifest
 * (version 2) has it and lists exactly digest for relpath: returns 1 and fills *ret (the name
 * normalized; alias the first of the file's alias patterns that alias_key matches, when alias_key is
 * not NULL). 0 when it has not (no entry, another digest, no info line), -ENOMEM. */
int manifest_lookup_modinfo(const Manifest *m, const char *relpath, const uint8_t digest[SHA256_DIGEST_SIZE],
                            const char *alias_key, ModInfo *ret);

unsigned manifest_version(const Manifest *m);
const char *manifest_kernel(const Manifest *m);
ManifestOrigin manifest_origin(const Manifest *m);
size_t manifest_entries(const Manifest *m);

Manifest *manifest_free(Manifest *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manifest *, manifest_free);

/* "kernel-install", "first-use", "admin"; NULL for anything else. */
const char *manifest_origin_to_string(ManifestOrigin o);
/* The origin, or -EINVAL. */
int manifest_origin_from_string(const char *s);

/* Shared with the writer, so that it writes only what the parser reads back. */

/* A kernel release that can name a manifest file: 1..MANIFEST_KERNEL_MAX bytes of letters, digits
 * and ._+~- , and not "." or "..". */
bool manifest_kernel_is_valid(const char *kver);

/* A path as an entry lists it: relative, without '.', '..' or empty components, no whitespace,
 * control characters or backslashes (which sha256sum would escape), at most MANIFEST_PATH_MAX bytes,
 * and naming a module file (manifest_name_is_module()). Returns NULL, or what is wrong with it. */
const char *manifest_path_problem(const char *path);

/* The fields of an info line for info and the file's alias patterns (without MANIFEST_INFO_PREFIX):
 * "name=NAME", then "signature=TYPE signer=S key=K hash=H" when signed (each of the last three only
 * when known), then "alias=PATTERN" for each alias, every value with the bytes
 * manifest_info_byte_escaped() says written as \xHH. -EINVAL when info has no name, -ENOMEM. */
int manifest_info_format(const ModInfo *info, char *const *aliases, char **ret);
/* Space, control characters, DEL and backslash: written as \xHH in an info line's values. */
bool manifest_info_byte_escaped(unsigned char c);

/* Whether a file name ends in .ko, .ko.xz, .ko.zst or .ko.gz, with something before that. */
bool manifest_name_is_module(const char *name);
