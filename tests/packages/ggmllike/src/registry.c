/* The backend registry (libggml). For each backend name it opens libggml-<name>.so and every
 * libggml-<name>-*.so variant in the plugin folder, keeps the best-scoring one loaded (the
 * alternatives of one name are never resident together) and lets it register itself; a name
 * registered twice aborts, as a registry does. The plugin folder is the one given, else the
 * one the build compiled in (GGML_PLUGIN_DIR, relative to this library's own folder), else
 * the program's own folder (ggml's way). */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ggml_base_version(void);

static const char* registered[16];
static int registered_count;

void ggml_backend_register(const char* name) {
    for (int i = 0; i < registered_count; ++i) {
        if (!strcmp(registered[i], name)) {
            fprintf(stderr, "backend %s registered twice\n", name);
            abort();
        }
    }
    if (registered_count < 16) registered[registered_count++] = name;
}

static int is_variant_of(const char* file, const char* name) {
    char plain[256], variant[256];
    snprintf(plain, sizeof plain, "libggml-%s.so", name);
    snprintf(variant, sizeof variant, "libggml-%s-", name);
    return !strcmp(file, plain) || (!strncmp(file, variant, strlen(variant)) && strstr(file, ".so"));
}

static void* load_best(const char* folder, const char* name) {
    void* best = NULL;
    int best_score = -1;
    DIR* dir = opendir(folder);
    if (!dir) return NULL;
    for (struct dirent* entry; (entry = readdir(dir));) {
        if (!is_variant_of(entry->d_name, name)) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", folder, entry->d_name);
        void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!handle) { fprintf(stderr, "cannot open %s: %s\n", path, dlerror()); continue; }
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
    closedir(dir);
    return best;
}

static const char* plugin_folder(char* buffer, size_t size) {
#ifdef GGML_PLUGIN_DIR
    Dl_info info;
    if (!dladdr((void*)&plugin_folder, &info) || !info.dli_fname) return NULL;
    char own[4096];
    snprintf(own, sizeof own, "%s", info.dli_fname);
    snprintf(buffer, size, "%s/%s", dirname(own), GGML_PLUGIN_DIR);
#else
    char self[4096] = {0};
    if (readlink("/proc/self/exe", self, sizeof self - 1) < 0) return NULL;
    snprintf(buffer, size, "%s", dirname(self));
#endif
    return buffer;
}

/* Loads the best variant of every backend; returns their names, space-separated. */
const char* ggml_backend_load_all(const char* folder) {
    static const char* names[] = {"blas", "rpc", "cpu"};
    static char loaded[256];
    char found[4096];
    if (!folder && !(folder = plugin_folder(found, sizeof found))) return NULL;
    if (ggml_base_version() != 21) return NULL;
    loaded[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof *names; ++i) {
        void* handle = load_best(folder, names[i]);
        if (!handle) continue;
        void (*init)(void) = (void (*)(void))dlsym(handle, "ggml_backend_init");
        const char* (*name)(void) = (const char* (*)(void))dlsym(handle, "ggml_backend_name");
        if (init) init();
        if (name) {
            if (loaded[0]) strncat(loaded, " ", sizeof loaded - strlen(loaded) - 1);
            strncat(loaded, name(), sizeof loaded - strlen(loaded) - 1);
        }
    }
    return loaded[0] ? loaded : NULL;
}
