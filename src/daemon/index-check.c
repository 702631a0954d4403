/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "index-check.h"
#include "log.h"
#include "macro.h"

/* kmod's index format (libkmod-index.c): a big-endian header, then trie nodes; a node's offset has
 * its kinds in the top bits. */
#define INDEX_MAGIC 0xB007F457U
#define INDEX_VERSION_MAJOR 0x0002U
#define INDEX_NODE_PREFIX 0x80000000U
#define INDEX_NODE_VALUES 0x40000000U
#define INDEX_NODE_CHILDS 0x20000000U
#define INDEX_NODE_MASK 0x0FFFFFFFU
#define INDEX_DEPTH_MAX 4096U

static const char *const index_files[] = {
        "modules.dep.bin", "modules.alias.bin", "modules.symbols.bin", "modules.builtin.alias.bin",
        "modules.builtin.bin",
};

typedef struct Reader {
        const uint8_t *p;
        size_t size;
        char *detail;
        size_t detail_size;
} Reader;

static int bad(Reader *r, const char *what, size_t offset) {
        snprintf(r->detail, r->detail_size, "%s at offset %zu (the file has %zu bytes)", what, offset,
                 r->size);
        return -EBADMSG;
}

static int read_u32(Reader *r, size_t *pos, uint32_t *ret) {
        if (*pos > r->size || r->size - *pos < 4)
                return bad(r, "a number past the end", *pos);
        *ret = (uint32_t) r->p[*pos] << 24 | (uint32_t) r->p[*pos + 1] << 16 |
                (uint32_t) r->p[*pos + 2] << 8 | r->p[*pos + 3];
        *pos += 4;
        return 0;
}

static int skip_string(Reader *r, size_t *pos) {
        const uint8_t *end = *pos < r->size ? memchr(r->p + *pos, '\0', r->size - *pos) : NULL;

        if (!end)
                return bad(r, "a string without its end", *pos);
        *pos = (size_t) (end - r->p) + 1;
        return 0;
}

static int check_node(Reader *r, uint32_t offset, unsigned depth) {
        size_t pos = offset & INDEX_NODE_MASK, node = pos;
        int q;

        if (depth > INDEX_DEPTH_MAX)
                return bad(r, "a trie deeper than any key", node);
        /* A node with nothing in it (the root of an empty trie) takes no bytes: it may end the file. */
        if (pos < 12 || pos > r->size)
                return bad(r, "a node outside the file", node);
        if (offset & INDEX_NODE_PREFIX && (q = skip_string(r, &pos)) < 0)
                return q;
        if (offset & INDEX_NODE_CHILDS) {
                unsigned first, last;

                if (pos + 2 > r->size)
                        return bad(r, "a child range past the end", pos);
                first = r->p[pos];
                last = r->p[pos + 1];
                pos += 2;
                if (first > last)
                        return bad(r, "a child range that ends before it starts", pos - 2);
                for (unsigned c = first; c <= last; c++) {
                        uint32_t child;

                        q = read_u32(r, &pos, &child);
                        if (q < 0)
                                return q;
                        if ((child & INDEX_NODE_MASK) == 0)
                                continue;
                        /* depmod writes a node before its children: anything else is corrupt, or a
                         * loop. */
                        if ((child & INDEX_NODE_MASK) <= node)
                                return bad(r, "a child written before its parent", node);
                        q = check_node(r, child, depth + 1);
                        if (q < 0)
                                return q;
                }
        }
        if (offset & INDEX_NODE_VALUES) {
                uint32_t n, priority;

                q = read_u32(r, &pos, &n);
                for (uint32_t i = 0; q >= 0 && i < n; i++) {
                        q = read_u32(r, &pos, &priority);
                        if (q >= 0)
                                q = skip_string(r, &pos);
                }
                if (q < 0)
                        return q;
        }
        return 0;
}

int index_check_buffer(const uint8_t *p, size_t size, char *detail, size_t detail_size) {
        Reader r = { .p = p, .size = size, .detail = detail, .detail_size = detail_size };
        uint32_t magic, version, root;
        size_t pos = 0;

        if (read_u32(&r, &pos, &magic) < 0 || magic != INDEX_MAGIC)
                return bad(&r, "no index magic", 0);
        if (read_u32(&r, &pos, &version) < 0 || version >> 16 != INDEX_VERSION_MAJOR)
                return bad(&r, "an index version other than 2", 4);
        if (read_u32(&r, &pos, &root) < 0)
                return bad(&r, "no root", 8);
        /* depmod writes an empty trie (no builtin module, say) as a root offset of 0. */
        if ((root & INDEX_NODE_MASK) == 0)
                return 0;
        return check_node(&r, root, 0);
}

static int check_file(int dirfd, const char *name) {
        _cleanup_close_ int fd = -EBADF;
        char detail[128];
        struct stat st;
        void *p;
        int r;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return errno == ENOENT ? 0 :
                                         log_error_errno(errno, "Failed to open module index %s: %m", name);
        if (fstat(fd, &st) < 0)
                return log_error_errno(errno, "Failed to stat module index %s: %m", name);
        if (st.st_size == 0)
                p = NULL;
        else {
                p = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
                if (p == MAP_FAILED)
                        return log_error_errno(errno, "Failed to map module index %s: %m", name);
        }
        r = index_check_buffer(p, (size_t) st.st_size, detail, sizeof(detail));
        if (p)
                (void) munmap(p, (size_t) st.st_size);
        if (r < 0)
                return log_error_errno(r, "Module index %s is corrupt or truncated: %s.", name, detail);
        return 0;
}

int index_check_dir(const char *dir) {
        _cleanup_close_ int dirfd = -EBADF;

        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return negative_errno();
        for (size_t i = 0; i < ELEMENTSOF(index_files); i++) {
                int r = check_file(dirfd, index_files[i]);

                if (r < 0)
                        return r;
        }
        return 0;
}
