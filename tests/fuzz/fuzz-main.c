/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz-main: a main() for the fuzz targets when they are not built with
 * libFuzzer, so that `make check` (gcc and ASan builds alike) replays the
 * committed corpus and every regression input through the same code:
 *
 *     fuzz-split-replay FILE|DIR...     runs each file (each file in DIR)
 *     fuzz-split-replay --seeds DIR     writes the target's seeds into DIR
 *
 * Replay prints one line per file and exits nonzero if any file could not
 * be read; a finding aborts, as it does under libFuzzer.
 */

#include <config.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fuzz-input.h"

static const char *fuzz_main_seed_dir;

static void
fuzz_main_emit__(const void *data, size_t size, const char *name)
{
    char path[4096];
    FILE *f;

    snprintf(path, sizeof path, "%s/seed-%s", fuzz_main_seed_dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f)) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        exit(1);
    }
    printf("%s: %zu bytes\n", path, size);
}

static int
fuzz_main_run_file__(const char *path)
{
    FILE *f = fopen(path, "rb");
    static uint8_t buf[1 << 20];
    size_t n;

    if (!f) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    /* A copy of exactly the input's size, so that ASan sees an overread
     * as libFuzzer's own copy would show it. */
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, buf, n);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
    printf("%s: ok\n", path);
    return 0;
}

static int
fuzz_main_run__(const char *path)
{
    struct stat st;

    if (stat(path, &st)) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
        return fuzz_main_run_file__(path);
    }

    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    int errors = 0;

    if (n < 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        return 1;
    }
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            char file[4096];

            snprintf(file, sizeof file, "%s/%s", path, names[i]->d_name);
            errors += fuzz_main_run_file__(file);
        }
        free(names[i]);
    }
    free(names);
    return errors;
}

int
main(int argc, char *argv[])
{
    int errors = 0;

    if (argc == 3 && !strcmp(argv[1], "--seeds")) {
        fuzz_main_seed_dir = argv[2];
        fuzz_target_seeds(fuzz_main_emit__);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n       %s --seeds DIR\n",
                argv[0], argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        errors += fuzz_main_run__(argv[i]);
    }
    return errors != 0;
}
