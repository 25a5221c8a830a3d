"""Compiler launchers (ccache, sccache, distcc): which one, where it is, and the CMake defines.

CMake runs ``<launcher> <compiler> <arguments>`` for every compile when
``CMAKE_<LANG>_COMPILER_LAUNCHER`` is set; the launcher's own variables (``CCACHE_*``,
``SCCACHE_*``, ``DISTCC_*``) reach it through ``process.tool_environment``.
"""

from __future__ import annotations

import shutil
import typing
from pathlib import Path

from buildtool import process
from buildtool.errors import UsageError
from buildtool.recipe.model import LauncherName

if typing.TYPE_CHECKING:
    from buildtool.recipe.load import LoadedRecipe

LAUNCHERS: tuple[LauncherName, ...] = typing.get_args(LauncherName)
"""Every accepted value, ``none`` first."""

LAUNCHER_VARIABLES = ("CMAKE_C_COMPILER_LAUNCHER", "CMAKE_CXX_COMPILER_LAUNCHER")

INSTALL_HINTS: dict[str, str] = {
    "ccache": "apt-get install ccache, dnf install ccache, brew install ccache or choco install "
    "ccache",
    "sccache": "cargo install sccache, brew install sccache, or a release binary from "
    "https://github.com/mozilla/sccache/releases",
    "distcc": "apt-get install distcc, dnf install distcc or brew install distcc; compiles go to "
    "the hosts in DISTCC_HOSTS, each running distccd",
}


def chosen_launcher(option: LauncherName | None, loaded: LoadedRecipe) -> tuple[LauncherName, str]:
    """The launcher ``--launcher`` names, else the recipe's; and where the choice came from."""
    if option is not None:
        return option, f"--launcher {option}"
    launcher = loaded.recipe.build.launcher
    return launcher, f"{loaded.source}: build.launcher = {launcher!r}"


def find_launcher(name: LauncherName, origin: str) -> Path | None:
    """The launcher's executable on the tools' PATH (``None`` for ``none``).

    Raises ``UsageError`` naming the launcher and how to install it when it is missing.
    """
    if name == "none":
        return None
    found = shutil.which(name, path=process.tool_environment().get("PATH"))
    if found is None:
        raise UsageError(
            f"{origin}: the compiler launcher {name!r} was not found on PATH; install it "
            f"({INSTALL_HINTS[name]}) or choose --launcher none"
        )
    return Path(found)


def launcher_defines(executable: Path | None) -> dict[str, str]:
    """CMake cache entries that make every C and C++ compile go through ``executable``."""
    if executable is None:
        return {}
    return dict.fromkeys(LAUNCHER_VARIABLES, str(executable))


def resolve_launcher_defines(option: LauncherName | None, loaded: LoadedRecipe) -> dict[str, str]:
    """``chosen_launcher``, found on disk, as CMake cache entries."""
    name, origin = chosen_launcher(option, loaded)
    return launcher_defines(find_launcher(name, origin))
