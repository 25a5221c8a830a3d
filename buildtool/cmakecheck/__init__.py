"""check-cmake: a project's own CMake code model -> the split's mistakes, before anything builds.

``codemodel`` reads CMake's File API reply into small frozen dataclasses, ``linkline`` reads link
command fragments, ``install`` reads the RPATH each installed file gets from
``cmake_install.cmake``, ``policy`` turns a recipe's plan into what the code model must show,
``rules`` (pure) turns both into findings, ``starter`` writes a starter recipe, and ``query``
(the shell) asks CMake for the reply and probes the toolchain.
"""
