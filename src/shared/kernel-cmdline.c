/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "kernel-cmdline.h"
#include "macro.h"
#include "module-name.h"
#include "strv.h"

int kernel_cmdline_read(const char *path, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t n;
        int r;

        assert(ret);

        r = read_full_file(path ?: "/proc/cmdline", KERNEL_CMDLINE_MAX, &buf, &n);
        if (r < 0)
                return r;
        if (n > 0 && buf[n - 1] == '\n')
                buf[n - 1] = '\0';
        *ret = TAKE_PTR(buf);
        return 0;
}

size_t kernel_next_arg(const char **p) {
        const char *s = *p + strspn(*p, KERNEL_BLANKS);
        bool quoted = false;
        size_t n = 0;

        for (; s[n] && (quoted || !strchr(KERNEL_BLANKS, s[n])); n++)
                if (s[n] == '"')
                        quoted = !quoted;
        *p = s;
        return n;
}

void kernel_arg_normalize(char *w) {
        size_t n = strlen(w);
        char *v;

        if (w[0] == '"') {
                memmove(w, w + 1, n--);
                if (n > 0 && w[n - 1] == '"')
                        w[--n] = '\0';
        }
        v = strchr(w, '=');
        if (v && v[1] == '"') {
                size_t m = strlen(v + 1);

                memmove(v + 1, v + 2, m);
                if (m > 1 && v[m - 1] == '"')
                        v[m - 1] = '\0';
        }
        for (; *w && *w != '='; w++)
                if (*w == '-')
                        *w = '_';
}

/* Whether a word MODULE.PARAM... gives name options: PARAM is not empty, and the word is not
 * modprobe.blacklist=. */
static bool kmod_option_for(const char *module, const char *param, const char *end, const char *name) {
        char m[MODULE_NAME_MAX + 1];
        size_t n = (size_t) (param - 1 - module);

        if (param == end || n >= sizeof(m))
                return false;
        memcpy(m, module, n);
        m[n] = '\0';
        return module_name_equal(m, name) &&
                !(strcmp(m, "modprobe") == 0 && strncmp(param, "blacklist=", 10) == 0);
}

bool kmod_cmdline_sets_options(const char *cmdline, const char *name) {
        enum { MODULE, PARAM, VALUE, IGNORE } state = MODULE;
        const char *module = cmdline, *param = NULL;
        bool quoted = false;

        for (const char *p = cmdline; p; p++) {
                if (*p == '"') {
                        quoted = !quoted;
                        if (quoted && state == MODULE && p == module)
                                module = p + 1;
                        else if (state != VALUE)
                                state = IGNORE;
                } else if (*p == '\0' || strchr(KERNEL_BLANKS, *p)) {
                        if (quoted && state != VALUE)
                                state = IGNORE;
                        else if (!quoted) {
                                if ((state == PARAM || state == VALUE) &&
                                    kmod_option_for(module, param, p, name))
                                        return true;
                                module = p + 1;
                                state = MODULE;
                        }
                        if (*p == '\0')
                                break;
                } else if (*p == '.' && state == MODULE) {
                        param = p + 1;
                        state = PARAM;
                } else if ((*p == '.' && state == PARAM) || (*p == '=' && state == MODULE))
                        state = IGNORE;
                else if (*p == '=' && state == PARAM)
                        state = VALUE;
        }
        return false;
}

const char *systemd_cmdline_next_word(const char *p, char *buf) {
        char quote = 0;
        size_t n = 0;

        p += strspn(p, SYSTEMD_CMDLINE_BLANKS);
        if (*p == '\0')
                return NULL;

        for (; *p; p++) {
                if (*p == '\\') {
                        /* At the very end, it is eaten (EXTRACT_RELAX). */
                        if (p[1] == '\0') {
                                p++;
                                break;
                        }
                        buf[n++] = *p++;
                        buf[n++] = *p;
                } else if (quote) {
                        if (*p == quote)
                                quote = 0;
                        else
                                buf[n++] = *p;
                } else if (*p == '"' || *p == '\'')
                        quote = *p;
                else if (strchr(SYSTEMD_CMDLINE_BLANKS, *p))
                        break;
                else
                        buf[n++] = *p;
        }
        buf[n] = '\0';
        return p;
}

const char *systemd_cmdline_value(const char *word, const char *key) {
        size_t i;

        for (i = 0; word[i] && word[i] != '=' && key[i]; i++) {
                char x = word[i] == '-' ? '_' : word[i], y = key[i] == '-' ? '_' : key[i];

                if (x != y)
                        return NULL;
        }
        return word[i] == '=' && key[i] == '\0' ? word + i + 1 : NULL;
}

int systemd_cmdline_values(const char *cmdline, const char *const *keys, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_free_ char *word = NULL;

        assert(cmdline);
        assert(keys);
        assert(ret);

        word = malloc(strlen(cmdline) + 1);
        if (!word)
                return -ENOMEM;
        for (const char *p = cmdline; (p = systemd_cmdline_next_word(p, word));)
                for (const char *const *k = keys; *k; k++) {
                        const char *v = systemd_cmdline_value(word, *k);

                        if (!v)
                                continue;
                        if (strv_extend(&l, v) < 0)
                                return -ENOMEM;
                        break;
                }
        *ret = TAKE_PTR(l);
        return 0;
}
