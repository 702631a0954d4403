/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <string.h>

#include "macro.h"
#include "module-name.h"
#include "request.h"
#include "varlink-errors.h"

static const char *const source_table[_SOURCE_MAX] = {
        [SOURCE_ADMIN] = "admin",
        [SOURCE_UDEV] = "udev",
        [SOURCE_KERNEL] = "kernel",
        [SOURCE_BOOT] = "boot",
};

const char *request_source_to_string(RequestSource s) {
        return s >= 0 && s < _SOURCE_MAX ? source_table[s] : NULL;
}

RequestSource request_source_from_string(const char *s) {
        for (RequestSource i = 0; i < _SOURCE_MAX; i++)
                if (s && strcmp(s, source_table[i]) == 0)
                        return i;
        return _SOURCE_INVALID;
}

static bool is_graph(char c) {
        return c > ' ' && c < 0x7f;
}

const char *modalias_check(const char *s) {
        size_t n;

        if (!s || s[0] == '\0')
                return "modalias is empty";
        n = strnlen(s, MODALIAS_MAX + 1);
        if (n > MODALIAS_MAX)
                return "modalias is longer than 64 KiB";
        if (s[0] == '-')
                return "modalias starts with '-'";
        /* One literal key: kernel modaliases are printable ASCII without spaces. A space would make
         * it several keys to anything that splits words, so it is refused, not split. */
        for (size_t i = 0; i < n; i++)
                if (!is_graph(s[i]))
                        return "modalias contains a space, a control character or a non-ASCII byte";
        return NULL;
}

const char *module_parameters_check(const char *s) {
        size_t n = strnlen(s, MODULE_PARAMETERS_MAX + 1);

        if (n > MODULE_PARAMETERS_MAX)
                return "module parameters are longer than 4096 bytes";
        for (size_t i = 0; i < n; i++)
                if (!is_graph(s[i]) && s[i] != ' ')
                        return "module parameters contain a control character or a non-ASCII byte";
        return NULL;
}

static bool has_suffix(const char *s, const char *suffix) {
        size_t n = strlen(s), m = strlen(suffix);

        return n > m && strcmp(s + n - m, suffix) == 0;
}

const char *module_path_check(const char *path) {
        static const char *const suffixes[] = { ".ko", ".ko.xz", ".ko.zst", ".ko.gz" };
        const char *base;
        size_t n = strnlen(path, MODULE_PATH_MAX + 1);
        bool ok = false;

        if (n > MODULE_PATH_MAX)
                return "path is too long";
        if (path[0] != '/')
                return "path is not absolute";
        for (size_t i = 0; i < n; i++)
                if (!is_graph(path[i]))
                        return "path contains a space, a control character or a non-ASCII byte";
        if (strstr(path, "//") || strstr(path, "/./") || strstr(path, "/../") || has_suffix(path, "/..") ||
            has_suffix(path, "/."))
                return "path is not normalized (contains '//', '.' or '..')";

        base = strrchr(path, '/') + 1;
        for (size_t i = 0; i < ELEMENTSOF(suffixes); i++)
                if (has_suffix(base, suffixes[i]))
                        ok = true;
        if (!ok)
                return "file name does not end in .ko, .ko.xz, .ko.zst or .ko.gz";
        return NULL;
}

bool request_context_string_is_valid(const char *s) {
        if (strnlen(s, CONTEXT_STRING_MAX + 1) > CONTEXT_STRING_MAX)
                return false;
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p < ' ' || *p == 0x7f)
                        return false;
        return true;
}

static const char *context_string_check(const char *s, const char *what) {
        return !s || request_context_string_is_valid(s) ? NULL : what;
}

const char *request_context_check(const RequestContext *c) {
        const char *r;

        if (c->source < 0 || c->source >= _SOURCE_MAX)
                return "unknown source";
        if ((r = context_string_check(c->devpath, "devpath is too long or has control characters")) ||
            (r = context_string_check(c->subsystem, "subsystem is too long or has control characters")) ||
            (r = context_string_check(c->action, "action is too long or has control characters")) ||
            (r = context_string_check(c->file, "file is too long or has control characters")))
                return r;
        if (c->seqnum < -1)
                return "seqnum is negative";
        return NULL;
}

static int refuse(LoadRefusal *ret, const char *error, const char *reason) {
        *ret = (LoadRefusal) { .error = error, .reason = reason };
        return 1;
}

int request_check(const char *name, const char *modalias, const char *path, const char *parameters,
                  const RequestContext *context, LoadRefusal *ret_refusal) {
        const char *why;

        if (!!name + !!modalias + !!path != 1)
                return refuse(ret_refusal, MANAGER_ERROR_INVALID_REQUEST,
                              "give exactly one of name, modalias and path");
        if (name && !module_name_is_valid(name))
                return refuse(ret_refusal, MANAGER_ERROR_INVALID_NAME, NULL);
        if (modalias && (why = modalias_check(modalias)))
                return refuse(ret_refusal, MANAGER_ERROR_INVALID_MODALIAS, why);
        if (path && (why = module_path_check(path)))
                return refuse(ret_refusal, MANAGER_ERROR_INVALID_PATH, why);
        if (parameters && (why = module_parameters_check(parameters)))
                return refuse(ret_refusal, MANAGER_ERROR_INVALID_MODULE_PARAMETERS, why);
        if ((why = request_context_check(context)))
                return refuse(ret_refusal, MANAGER_ERROR_INVALID_REQUEST, why);
        return 0;
}
