"""How a platform's loader finds a dependency and binds a symbol: glibc's ld.so today."""
