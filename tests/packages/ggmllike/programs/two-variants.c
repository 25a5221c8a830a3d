/* Links two CPU variants and calls each one's entry: zen4's call to its own exported score
 * binds to haswell's copy, loaded first, so zen4's code runs with haswell's answers. */
#include <stdio.h>
int ggml_cpu_haswell_entry(void);
int ggml_cpu_zen4_entry(void);
int main(void) {
    int haswell = ggml_cpu_haswell_entry(), zen4 = ggml_cpu_zen4_entry();
    printf("haswell %d, zen4 %d\n", haswell, zen4);
    return haswell == 10 && zen4 == 20 ? 0 : 1;
}
