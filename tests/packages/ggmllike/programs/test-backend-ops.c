/* Loads the best variant of every backend, as ggml's programs do, and says which. */
#include <stdio.h>
const char* ggml_backend_load_all(const char* folder);
int main(void) {
    const char* names = ggml_backend_load_all(NULL);
    if (!names) { fprintf(stderr, "no backend\n"); return 1; }
    printf("%s\n", names);
    return 0;
}
