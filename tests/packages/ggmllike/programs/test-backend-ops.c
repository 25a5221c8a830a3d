/* Loads the best CPU backend from the program's own folder, as ggml's programs do. */
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
const char* ggml_backend_load_best(const char* folder);
int main(void) {
    char self[4096] = {0};
    if (readlink("/proc/self/exe", self, sizeof self - 1) < 0) return 2;
    const char* name = ggml_backend_load_best(dirname(self));
    if (!name) { fprintf(stderr, "no CPU backend\n"); return 1; }
    printf("%s\n", name);
    return 0;
}
