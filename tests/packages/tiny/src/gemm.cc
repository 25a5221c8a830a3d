int tiny_gemm() { return 4; }
