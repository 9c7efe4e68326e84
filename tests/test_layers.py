"""The pipeline layer speaks no command line: nothing under rnapipe/pipeline prints, writes to standard output or
standard error, or names a flag of the `rnapipe` command in a string it could show. The front doors (rnapipe.cli,
rnapipe.api) word what reaches the user; the pipeline raises errors that carry the facts and takes callbacks and
streams for its notes and progress.

Docstrings and comments are for readers of the code and may name the flags whose behaviour a module implements;
every other string literal counts, the parts of f-strings included."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PIPELINE = ROOT / "rnapipe" / "pipeline"
STREAMS = {"stdout", "stderr", "__stdout__", "__stderr__"}
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def command_flags() -> set[str]:
    """Every long option the `rnapipe` parser defines, in every subcommand."""
    from rnapipe.cli.main import build_parser

    flags: set[str] = set()

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            flags.update(option for option in action.option_strings if option.startswith("--"))
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)

    walk(build_parser())
    return flags


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def command_line_speech(source: str, flags: set[str]) -> list[str]:
    """What in ``source`` speaks to the command line: calls of print, uses of sys.stdout or sys.stderr (also
    imported by name), and string literals (docstrings aside) that name one of ``flags``; one line per finding,
    with its line number."""
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            found.append((line, "print()"))
        elif isinstance(node, ast.Attribute) and node.attr in STREAMS and isinstance(node.value, ast.Name) \
                and node.value.id == "sys":
            found.append((line, f"sys.{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" \
                and any(alias.name in STREAMS for alias in node.names):
            found.append((line, "from sys import a standard stream"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            named = sorted({flag for flag in FLAG.findall(node.value) if flag in flags})
            if named:
                found.append((line, f"names {', '.join(named)}"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def test_the_flag_list_is_the_parsers():
    flags = command_flags()
    assert {"--restart", "--device", "--quiet", "--on-invalid", "--cpu-jobs"} <= flags


def test_the_check_finds_what_it_looks_for():
    source = '''"""A module docstring may say --restart."""
import sys
from sys import stderr


def f(path, device):
    """So may a function's: --device hybrid."""
    print("hello")
    sys.stderr.write("x")
    sys.stdout.flush()
    message = f"{path}: run with --restart to start over"
    other = "--device " + device
    fine = "an em-dash -- and --not-a-flag are not flags; nor is x--restart"
    return sys.platform
'''
    found = command_line_speech(source, {"--restart", "--device"})
    assert found == ["3: from sys import a standard stream", "8: print()", "9: sys.stderr", "10: sys.stdout",
                     "11: names --restart", "12: names --device"], found


def test_the_pipeline_speaks_no_command_line():
    flags = command_flags()
    findings = []
    for path in sorted(PIPELINE.rglob("*.py")):
        for finding in command_line_speech(path.read_text(encoding="utf-8"), flags):
            findings.append(f"{path.relative_to(ROOT)}:{finding}")
    assert not findings, "\n".join(findings)
