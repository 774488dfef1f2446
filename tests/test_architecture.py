"""The shape of the code, read from the code: layers import downwards only, modules stay small."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "jitterlab"
MAX_LINES = 500

# module (or package prefix) -> what it must never import: keeps plug-ins independent of the
# campaign file and the runner, and presentation apart from measurement
FORBIDDEN = {
    "jitterlab.records": ("jitterlab.",),  # the bottom layer: everyone may import it
    "jitterlab.context": ("jitterlab.campaign", "jitterlab.runner", "jitterlab.plugins", "jitterlab.report"),
    "jitterlab.benchmarks": ("jitterlab.campaign", "jitterlab.runner", "jitterlab.preflight",
                             "jitterlab.report", "jitterlab.loads"),
    "jitterlab.impls": ("jitterlab.campaign", "jitterlab.runner", "jitterlab.report", "jitterlab.benchmarks"),
    "jitterlab.pins": ("jitterlab.campaign", "jitterlab.runner", "jitterlab.report", "jitterlab.benchmarks",
                       "jitterlab.probes", "jitterlab.impls"),
    "jitterlab.probes": ("jitterlab.campaign", "jitterlab.runner", "jitterlab.report", "jitterlab.benchmarks",
                         "jitterlab.impls"),
    "jitterlab.loads": ("jitterlab.campaign", "jitterlab.runner", "jitterlab.report", "jitterlab.benchmarks"),
    "jitterlab.analysis": ("jitterlab.campaign", "jitterlab.runner", "jitterlab.report"),
    "jitterlab.store": ("jitterlab.campaign", "jitterlab.runner", "jitterlab.report", "jitterlab.plugins",
                        "jitterlab.benchmarks"),
    "jitterlab.report": ("jitterlab.campaign", "jitterlab.runner", "jitterlab.preflight", "jitterlab.targets",
                         "jitterlab.benchmarks", "jitterlab.loads"),
    "jitterlab.targets": ("jitterlab.campaign", "jitterlab.runner", "jitterlab.report",
                          "jitterlab.benchmarks"),
}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "programs" in path.relative_to(PACKAGE).parts:
            continue  # what runs on targets is not part of the package's layering
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out.append((name, path))
    return out


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {m for m in found if m.startswith("jitterlab")}


@pytest.mark.parametrize(("name", "path"), _modules(), ids=[n for n, _ in _modules()])
def test_layers_import_downwards(name, path):
    rules = [bad for prefix, bad in FORBIDDEN.items() if name == prefix or name.startswith(prefix + ".")]
    imported = _imports(path)
    for bad in (b for rule in rules for b in rule):
        offenders = sorted(m for m in imported if m == bad or m.startswith(bad.rstrip(".") + ".")
                           or (bad.endswith(".") and m.startswith(bad)))
        assert not offenders, f"{name} imports {offenders}"


@pytest.mark.parametrize(("name", "path"), _modules(), ids=[n for n, _ in _modules()])
def test_modules_stay_small(name, path):
    assert len(path.read_text().splitlines()) <= MAX_LINES, f"{name} is over {MAX_LINES} lines; split it"


def test_no_plugin_name_is_spelled_in_the_runner():
    """The runner and preflight ask plug-ins (needs_probe_cpu, programs, needer) instead of naming them."""
    for module in ("runner.py", "preflight.py"):
        text = (PACKAGE / module).read_text()
        for name in ('"vpin"', '"squarewave"', '"impl"', '"c-fifo"'):
            assert name not in text, f"{module} names {name}"
