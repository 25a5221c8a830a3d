/* A library one backend may need that the registry's host does not load (libggml-extra). */
int ggml_extra(void) { return 0; }
