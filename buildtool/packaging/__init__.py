"""Packaging: the distributions a plan gives, the generated Python loader, and wheels built
through scikit-build-core, repaired and published all or none."""
