/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Runs a fuzz target over files, without libFuzzer: each argument is an input file or a directory
 * of them (a seed corpus). Speaks TAP; an input that crashes or breaks an invariant aborts. */

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "fuzz.h"

#define INPUT_MAX (16 * 1024 * 1024)

static unsigned n_run = 0;

static int run_file(const char *path) {
        _cleanup_(fclosep) FILE *f = NULL;
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r;

        f = fopen(path, "re");
        if (!f)
                return negative_errno();
        r = read_full_stream(f, INPUT_MAX, &data, &size);
        if (r < 0)
                return r;

        (void) LLVMFuzzerTestOneInput((const uint8_t *) data, size);
        printf("ok %u - %s\n", ++n_run, path);
        fflush(stdout);
        return 0;
}

static int run_dir(const char *path) {
        struct dirent **names = NULL;
        int n, r = 0;

        n = scandir(path, &names, NULL, alphasort);
        if (n < 0)
                return negative_errno();
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;

                if (r >= 0 && names[i]->d_name[0] != '.') {
                        if (asprintf(&p, "%s/%s", path, names[i]->d_name) < 0)
                                r = -ENOMEM;
                        else
                                r = run_file(p);
                }
                free(names[i]);
        }
        free(names);
        return r;
}

int main(int argc, char *argv[]) {
        for (int i = 1; i < argc; i++) {
                struct stat st;
                int r;

                if (stat(argv[i], &st) < 0)
                        r = negative_errno();
                else
                        r = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]);
                if (r < 0) {
                        printf("not ok %u - %s: %s\n", ++n_run, argv[i], strerror(-r));
                        return EXIT_FAILURE;
                }
        }
        if (n_run == 0) {
                printf("not ok 1 - no inputs given\n");
                return EXIT_FAILURE;
        }
        printf("1..%u\n", n_run);
        return EXIT_SUCCESS;
}
