/* What a CPU variant's machine needs (ggml's <variant>-feats object library). */
int ggml_cpu_feats_supported(void) { return 1; }
