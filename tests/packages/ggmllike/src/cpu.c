/* One CPU backend variant: a module the registry opens by path, asks for its score and, when
 * it keeps this one, lets register itself in the registry of the library that opened it (a
 * symbol of the host this module leaves undefined: it binds to the host, loaded already). */
#define STRING(x) #x
#define VALUE(x) STRING(x)
int ggml_base_version(void);
void ggml_backend_register(const char* name);
int ggml_backend_score(void) { return SCORE; }
const char* ggml_backend_name(void) { return VALUE(VARIANT); }
void ggml_backend_init(void) { ggml_backend_register("ggmllike.backend.cpu"); }
int ggml_cpu_compute(int x) { return x * ggml_base_version() + SCORE; }
/* What a program linking this variant calls; the score it reads is this variant's only while
 * no other variant's exports interpose. */
int ENTRY(void) { return ggml_backend_score(); }
