int tiny_compiler() { return 3; }
