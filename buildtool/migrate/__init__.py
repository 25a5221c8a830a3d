"""``buildtool migrate``: the names a split removed or renamed, found in a project's own files.

``rules`` compiles the recipe's ``[migrate]`` table, ``scan`` finds matches in text, ``fix``
rewrites them, ``shims`` renders forwarding headers (all pure); ``files`` chooses, reads and
writes the files (the shell).
"""
