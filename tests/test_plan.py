"""The link plan as a pure function: closures, ownership, options, registrations."""

from __future__ import annotations

from typing import Any

import pytest

from buildtool.errors import PlanError
from buildtool.plan import LinkPlan, make_plan
from buildtool.recipe.load import parse_recipe


def plan_of(tables: dict[str, Any]) -> LinkPlan:
    data = {"project": {"name": "demo"}, **tables}
    return make_plan(parse_recipe(data, "r.toml"), "r.toml")


SPLIT: dict[str, Any] = {
    "libraries": {
        "ffi": {},
        "runtime": {"links": ["ffi"], "objects": ["gemm"], "registers": ["rt.a"]},
        "compiler": {"links": ["runtime"], "objects": ["libinfo"], "optional": True},
        "codegen": {"links": ["compiler"], "optional": True},
    },
    "objects": {"gemm": {"registers": ["gemm.b"]}, "libinfo": {"registers": ["info.c"]}},
    "executables": {"minrpc": {"links": ["runtime"], "no-as-needed": ["runtime"]}},
    "tests": {"cpptest": {"links": ["codegen"]}},
}


def test_links_are_public_closures_nearest_first() -> None:
    plan = plan_of(SPLIT)
    assert plan.library("codegen").link_closure == ("compiler", "runtime", "ffi")
    assert plan.library("ffi").link_closure == ()


def test_each_optional_library_gets_one_option_and_dependents_require_it() -> None:
    plan = plan_of(SPLIT)
    assert plan.build_switches == ("DEMO_BUILD_COMPILER", "DEMO_BUILD_CODEGEN")
    assert plan.library("codegen").requires_on == ("DEMO_BUILD_CODEGEN", "DEMO_BUILD_COMPILER")
    assert plan.library("runtime").requires_on == ()
    cpptest = next(exe for exe in plan.executables if exe.name == "cpptest")
    assert cpptest.is_test
    assert cpptest.requires_on == ("DEMO_BUILD_CODEGEN", "DEMO_BUILD_COMPILER")


def test_registrations_map_to_the_library_that_must_hold_them() -> None:
    plan = plan_of(SPLIT)
    assert plan.registrations == (
        ("gemm.b", "runtime"),
        ("info.c", "compiler"),
        ("rt.a", "runtime"),
    )
    assert plan.library("runtime").registers == ("rt.a", "gemm.b")


def test_object_owner_and_names() -> None:
    plan = plan_of(SPLIT)
    assert {obj.name: obj.owner for obj in plan.objects} == {
        "gemm": "runtime",
        "libinfo": "compiler",
    }
    runtime = plan.library("runtime")
    assert (runtime.file_name, runtime.export_macro) == ("libdemo_runtime.so", "DEMO_RUNTIME_API")
    assert [lib.name for lib in plan.runtime_libraries] == ["ffi", "runtime"]


def test_double_owner_names_both_libraries() -> None:
    tables = {
        "libraries": {"a": {"objects": ["o"]}, "b": {"objects": ["o"]}},
        "objects": {"o": {}},
    }
    with pytest.raises(PlanError) as caught:
        plan_of(tables)
    assert "'o' is linked statically more than once: owned by both 'a' and 'b'" in str(caught.value)


def test_self_link_is_a_cycle() -> None:
    with pytest.raises(PlanError, match=r"libraries.a.links: links form a cycle: a -> a"):
        plan_of({"libraries": {"a": {"links": ["a"]}}})


def test_optional_may_link_optional_but_required_may_not() -> None:
    ok = plan_of({"libraries": {"a": {"optional": True}, "b": {"links": ["a"], "optional": True}}})
    assert ok.library("b").requires_on == ("DEMO_BUILD_B", "DEMO_BUILD_A")
    with pytest.raises(PlanError, match="required library 'b' links optional library 'a'"):
        plan_of({"libraries": {"a": {"optional": True}, "b": {"links": ["a"]}}})


def test_unknown_object_and_external_references() -> None:
    with pytest.raises(PlanError, match=r"libraries.a.objects\[0\]: unknown objects entry 'x'"):
        plan_of({"libraries": {"a": {"objects": ["x"]}}})
    with pytest.raises(PlanError, match=r"libraries.a.externals\[0\]: unknown externals entry"):
        plan_of({"libraries": {"a": {"externals": ["dl"]}}})


def test_plan_is_pure_and_repeatable() -> None:
    assert plan_of(SPLIT) == plan_of(SPLIT)
