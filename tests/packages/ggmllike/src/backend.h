/* A backend other than the CPU's (blas.c, rpc.c include it): one module per name, resident
 * beside the others, registering the name it is built with (REGISTERS, a dotted name). With
 * NEEDS_EXTRA it needs libggml-extra, a library its host does not load. */
#define STRING(x) #x
#define VALUE(x) STRING(x)
int ggml_base_version(void);
void ggml_backend_register(const char* name);
#ifdef NEEDS_EXTRA
int ggml_extra(void);
#else
static int ggml_extra(void) { return 0; }
#endif
int ggml_backend_score(void) { return ggml_base_version() + ggml_extra(); }
const char* ggml_backend_name(void) { return VALUE(BACKEND); }
void ggml_backend_init(void) { ggml_backend_register(VALUE(REGISTERS)); }
