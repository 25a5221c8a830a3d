/* Links two CPU variants: every call binds to the first one loaded, whichever was meant. */
#include <stdio.h>
int ggml_cpu_compute(int x);
int main(void) { printf("%d\n", ggml_cpu_compute(1)); return 0; }
