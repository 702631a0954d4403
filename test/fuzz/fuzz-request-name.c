/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The names a request carries, checked alike by the clients and the daemon: module names (Load,
 * Unload, Describe, Monitor, modprobe.d, the boot list), modaliases, the kernel's request_module()
 * names as modgate-modprobe takes them, paths, module parameters and request sources. The input is
 * one string, or two separated by a newline (for comparisons). */

#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "load-plain.h"
#include "module-name.h"
#include "request-name.h"
#include "request.h"

static bool all_graph(const char *s, bool space) {
        for (const char *p = s; *p; p++)
                if (!((*p > ' ' && *p < 0x7f) || (space && *p == ' ')))
                        return false;
        return true;
}

/* Whether the clients send a request for key (modgate-udev, modgate-modules-load and modgatectl a
 * name, modgate-modprobe a modalias) rather than refuse it. */
static int client_sends(const char *name, const char *modalias, RequestSource source) {
        const RequestContext context = { .source = source, .seqnum = -1 };
        const PlainRequest req = { .name = name, .modalias = modalias, .context = &context };
        _cleanup_free_ char *text = NULL;
        LoadRefusal refusal = {};
        size_t len;

        return plain_request_message(&req, USEC_INFINITY, &text, &len, &refusal);
}

static void check_module_name(const char *s) {
        _cleanup_free_ char *copy = NULL, *twice = NULL;
        int r;

        if (!module_name_is_valid(s))
                return;
        fuzz_assert(strlen(s) <= MODULE_NAME_MAX && s[0] != '-');
        copy = strdup(s);
        fuzz_assert(copy);
        module_name_normalize(copy);
        /* Its canonical form is the same module, valid, and canonical. */
        fuzz_assert(module_name_is_valid(copy) && !strchr(copy, '-') && module_name_equal(s, copy));
        twice = strdup(copy);
        fuzz_assert(twice);
        module_name_normalize(twice);
        fuzz_assert(strcmp(copy, twice) == 0);
        /* Any module name is a key for a modalias lookup too, and one the kernel could ask for. */
        fuzz_assert(!modalias_check(s) && !request_name_check(s));
        r = client_sends(s, NULL, SOURCE_ADMIN);
        fuzz_assert(r == 0 || r == -ENOMEM);
}

static void check_request_name(const char *s) {
        int r;

        if (request_name_check(s))
                return;
        fuzz_assert(!modalias_check(s) && !strchr(s, '/') && strlen(s) <= REQUEST_NAME_MAX);
        /* What modgate-modprobe sends, the daemon takes. */
        r = client_sends(NULL, s, SOURCE_KERNEL);
        fuzz_assert(r == 0 || r == -ENOMEM);
}

static void check_modalias(const char *s) {
        if (modalias_check(s))
                return;
        fuzz_assert(s[0] && s[0] != '-' && strlen(s) <= MODALIAS_MAX && all_graph(s, false));
}

static bool has_suffix(const char *s, const char *suffix) {
        size_t n = strlen(s), m = strlen(suffix);

        return n >= m && strcmp(s + n - m, suffix) == 0;
}

static void check_path(const char *s) {
        const char *base;

        if (module_path_check(s))
                return;
        fuzz_assert(s[0] == '/' && strlen(s) <= MODULE_PATH_MAX && all_graph(s, false));
        fuzz_assert(!strstr(s, "//") && !strstr(s, "/./") && !strstr(s, "/../"));
        base = strrchr(s, '/') + 1;
        fuzz_assert(strcmp(base, ".") != 0 && strcmp(base, "..") != 0);
        fuzz_assert(has_suffix(base, ".ko") || has_suffix(base, ".ko.xz") || has_suffix(base, ".ko.zst") ||
                    has_suffix(base, ".ko.gz"));
        fuzz_assert(base[0] != '.' || strlen(base) > 3);
}

static void check_parameters(const char *s) {
        if (module_parameters_check(s))
                return;
        fuzz_assert(strlen(s) <= MODULE_PARAMETERS_MAX && all_graph(s, true));
}

static void check_source(const char *s) {
        RequestSource src = request_source_from_string(s);

        if (src < 0) {
                fuzz_assert(src == _SOURCE_INVALID);
                return;
        }
        fuzz_assert(src < _SOURCE_MAX && strcmp(request_source_to_string(src), s) == 0);
}

/* '-' and '_' alike, and nothing else: symmetric, and the same as comparing canonical forms. */
static void check_equal(const char *a, const char *b) {
        _cleanup_free_ char *x = strdup(a), *y = strdup(b);

        fuzz_assert(x && y);
        module_name_normalize(x);
        module_name_normalize(y);
        fuzz_assert(module_name_equal(a, b) == module_name_equal(b, a));
        fuzz_assert(module_name_equal(a, b) == (strcmp(x, y) == 0));
        fuzz_assert(module_name_equal(a, a));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_free_ char *text = strndup((const char *) data, size);
        const char *nl;

        if (!text)
                return 0;
        check_module_name(text);
        check_request_name(text);
        check_modalias(text);
        check_path(text);
        check_parameters(text);
        check_source(text);

        nl = strchr(text, '\n');
        if (nl) {
                _cleanup_free_ char *a = strndup(text, (size_t) (nl - text));

                fuzz_assert(a);
                check_equal(a, nl + 1);
        }
        return 0;
}
