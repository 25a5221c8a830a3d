"""The link plan: who owns what, who links whom. A pure function of the recipe.

Every rule that would otherwise surface as an abort at import time on a user's machine is
refused here, before anything is built. Generation, packaging and verification all read the
plan, so they cannot disagree about the split. ``model`` holds its types, ``planner`` makes it
(``make_plan``), ``options`` derives the plan of a build with some options OFF.
"""

from buildtool.plan.model import (
    LIBRARY_FOLDER,
    ExecutablePlan,
    ExtensionPlan,
    ExternalPlan,
    LibraryPlan,
    LinkPlan,
    ObjectPlan,
    OptionPlan,
    PluginPlan,
    TargetSettings,
    build_switch_name,
    identifier,
    library_distributions,
    output_name_of_file,
    split_distribution_names,
)
from buildtool.plan.options import (
    CMAKE_TRUE,
    option_values,
    option_values_from_defines,
    with_option_values,
)
from buildtool.plan.planner import make_plan

__all__ = [
    "CMAKE_TRUE",
    "LIBRARY_FOLDER",
    "ExecutablePlan",
    "ExtensionPlan",
    "ExternalPlan",
    "LibraryPlan",
    "LinkPlan",
    "ObjectPlan",
    "OptionPlan",
    "PluginPlan",
    "TargetSettings",
    "build_switch_name",
    "identifier",
    "library_distributions",
    "make_plan",
    "option_values",
    "option_values_from_defines",
    "output_name_of_file",
    "split_distribution_names",
    "with_option_values",
]
