/* The core every backend builds on (ggml-base). */
int ggml_base_version(void) { return 21; }
