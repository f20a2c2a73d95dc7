/* tests/fuzz/replay.c: feeds every file of the given directories (or the given files) to the fuzz
   target, without libFuzzer: built with gcc -fsanitize=address,undefined by `make test-fuzz-replay`
   (tests/fuzz/corpus, the committed seed corpus). A file fails when it breaks an invariant of the
   target (tests/fuzz/fuzz_graph.c); a crash or a sanitizer report stops the run. Prints
   "fuzz replay: N passed, N failed". */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
extern int fz_violations;

static int passed, failed;

static void replay_file(const char *path) {
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long n;
    int before;
    if (!f) { fprintf(stderr, "fuzz replay: cannot open %s\n", path); failed++; return; }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0 ||
        !(buf = (uint8_t *)malloc((size_t)n + 1)) || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "fuzz replay: cannot read %s\n", path);
        failed++;
        free(buf);
        fclose(f);
        return;
    }
    fclose(f);
    before = fz_violations;
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    if (fz_violations != before) { fprintf(stderr, "fuzz replay: %s breaks an invariant\n", path); failed++; }
    else passed++;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void replay_path(const char *path) {
    struct stat st;
    DIR *d;
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    if (stat(path, &st) != 0) { fprintf(stderr, "fuzz replay: no %s\n", path); failed++; return; }
    if (!S_ISDIR(st.st_mode)) { replay_file(path); return; }
    if (!(d = opendir(path))) { fprintf(stderr, "fuzz replay: cannot list %s\n", path); failed++; return; }
    while ((e = readdir(d)) != NULL) {          /* in name order, so that runs are repeatable */
        size_t len = strlen(path) + strlen(e->d_name) + 2;
        char *full;
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            char **grown = (char **)realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
            if (!grown) break;
            names = grown;
        }
        if (!(full = (char *)malloc(len))) break;
        snprintf(full, len, "%s/%s", path, e->d_name);
        names[n++] = full;
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, by_name);
    for (i = 0; i < n; i++) {
        replay_file(names[i]);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv) {
    int i;
    if (argc < 2) { fprintf(stderr, "usage: %s corpus-dir-or-file...\n", argv[0]); return 2; }
    for (i = 1; i < argc; i++) replay_path(argv[i]);
    printf("fuzz replay: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
