int tiny_ffi() { return 1; }
