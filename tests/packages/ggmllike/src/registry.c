/* The backend registry (libggml): opens every ggml-cpu-*.so beside the program, keeps the one
 * with the best score loaded (one resident at a time), and dispatches to it. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int ggml_base_version(void);

static void* best;
static int best_score = -1;

static void consider(const char* path) {
    void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) { fprintf(stderr, "cannot open %s: %s\n", path, dlerror()); return; }
    int (*score)(void) = (int (*)(void))dlsym(handle, "ggml_backend_score");
    int value = score ? score() : -1;
    if (value > best_score) {
        if (best) dlclose(best);
        best = handle;
        best_score = value;
    } else {
        dlclose(handle);
    }
}

const char* ggml_backend_load_best(const char* folder) {
    DIR* dir = opendir(folder);
    if (!dir) return NULL;
    for (struct dirent* entry; (entry = readdir(dir));) {
        if (strncmp(entry->d_name, "libggml-cpu-", 12) || !strstr(entry->d_name, ".so")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
        consider(path);
    }
    closedir(dir);
    if (!best || ggml_base_version() != 21) return NULL;
    const char* (*name)(void) = (const char* (*)(void))dlsym(best, "ggml_backend_name");
    return name ? name() : NULL;
}
