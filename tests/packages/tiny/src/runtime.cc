int tiny_runtime() { return 2; }
