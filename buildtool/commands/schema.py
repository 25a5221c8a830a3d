"""``buildtool schema``: print the recipe's JSON Schema."""

from __future__ import annotations

import argparse
import sys

from buildtool.recipe.schema import render_schema


def populate_parser(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def run(args: argparse.Namespace) -> int:
    del args
    sys.stdout.write(render_schema())
    return 0
