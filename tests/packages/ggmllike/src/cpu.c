/* One CPU backend variant: a module the registry opens by path and asks for its score. */
int ggml_base_version(void);
int ggml_backend_score(void) { return SCORE; }
const char* ggml_backend_name(void) { return VARIANT; }
int ggml_cpu_compute(int x) { return x * ggml_base_version() + SCORE; }
/* What a program linking this variant calls; the score it reads is this variant's only while
 * no other variant's exports interpose. */
int ENTRY(void) { return ggml_backend_score(); }
