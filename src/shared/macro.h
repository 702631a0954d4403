/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))

#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* Hand over ownership: return the value and leave the cleanup variable empty. */
#define TAKE_GENERIC(var, type, nullvalue)                      \
        ({                                                      \
                type *_pvar_ = &(var);                          \
                type _var_ = *_pvar_;                           \
                type _nullvalue_ = nullvalue;                   \
                *_pvar_ = _nullvalue_;                          \
                _var_;                                          \
        })
#define TAKE_PTR(ptr) TAKE_GENERIC(ptr, typeof(ptr), NULL)
#define TAKE_FD(fd) TAKE_GENERIC(fd, int, -EBADF)

/* free(p), for p = mfree(p). */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd) {
        safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* Declare a cleanup function for a type freed by func(), which is not called on NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                 \
        static inline void func##p(type *p) {                   \
                if (*p)                                         \
                        func(*p);                               \
        }

/* A copy of s, or NULL for NULL. Returns 0 or -ENOMEM. */
static inline int strdup_or_null(const char *s, char **ret) {
        *ret = s ? strdup(s) : NULL;
        return !s || *ret ? 0 : -ENOMEM;
}

/* Turn a libc-style -1/errno result into -errno. */
/* Two strings, either of which may be NULL, are equal. */
static inline bool streq_ptr(const char *a, const char *b) {
        return a && b ? strcmp(a, b) == 0 : a == b;
}

static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

#define RET_NERRNO(expr)                                        \
        ({                                                      \
                long _r_ = (long) (expr);                       \
                _r_ < 0 ? negative_errno() : (int) _r_;         \
        })
