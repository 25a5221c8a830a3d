"""Judging the binaries: the catalogue of checks, what they look at (the subject) and one
module per family of checks."""
