"""The ELF fuzz harness: seed binaries built here, their mutations, and the long run."""
