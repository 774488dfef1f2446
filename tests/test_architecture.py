"""The shape of the code, read from the code: layers import downwards only, no circles, modules small."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "jitterlab"
MAX_LINES = 500

# layer (a package prefix) -> the layers it may import besides itself. A whitelist: a new import
# across layers is a decision made here, not an accident. The more specific prefix wins.
ALLOWED: dict[str, tuple[str, ...]] = {
    "jitterlab.model": (),
    "jitterlab.cache": (),  # where built and downloaded files are kept: a leaf every layer may ask
    "jitterlab.programs": ("jitterlab.model",),
    "jitterlab.targets.base": ("jitterlab.model",),
    "jitterlab.targets": ("jitterlab.model", "jitterlab.programs", "jitterlab.cache"),
    "jitterlab.analysis": ("jitterlab.model", "jitterlab.cache"),
    "jitterlab.store": ("jitterlab.model",),
    "jitterlab.system": ("jitterlab.model", "jitterlab.targets.base", "jitterlab.targets.capabilities"),
    "jitterlab.tracing": ("jitterlab.model", "jitterlab.targets.base", "jitterlab.targets.capabilities",
                          "jitterlab.targets.records", "jitterlab.cache"),
    "jitterlab.measure": ("jitterlab.model", "jitterlab.analysis", "jitterlab.programs",
                          "jitterlab.targets.base", "jitterlab.targets.capabilities",
                          "jitterlab.targets.processes", "jitterlab.tracing"),
    "jitterlab.tunings": ("jitterlab.model", "jitterlab.targets.base", "jitterlab.targets.processes",
                          "jitterlab.targets.records"),
    "jitterlab.plugins": ("jitterlab.model", "jitterlab.measure", "jitterlab.targets", "jitterlab.tunings"),
    "jitterlab.campaign": ("jitterlab.model", "jitterlab.plugins", "jitterlab.targets.registry"),
    "jitterlab.importers": ("jitterlab.model", "jitterlab.analysis", "jitterlab.store"),
    "jitterlab.report": ("jitterlab.model", "jitterlab.analysis", "jitterlab.store",
                         "jitterlab.campaign.cells", "jitterlab.plugins"),
    "jitterlab.execution": ("jitterlab.model", "jitterlab.analysis", "jitterlab.store", "jitterlab.campaign",
                            "jitterlab.plugins", "jitterlab.measure", "jitterlab.targets", "jitterlab.system",
                            "jitterlab.programs", "jitterlab.tunings", "jitterlab.tracing",
                            "jitterlab.cache"),
    "jitterlab.cli": ("jitterlab",),
    "jitterlab.__main__": ("jitterlab.cli",),
    "jitterlab": (),
}


# Modules that still break a rule above while the redesign goes on: each must still break it (so a
# fixed one leaves this list), and the list ends empty.
PENDING: set[str] = set()
PENDING_CIRCLES = False
SNIFFING: set[str] = set()
# doctor opens `ssh://user@host` targets no campaign names: it chooses their kind from the text given
KIND_NAMED = {"jitterlab.cli.commands.doctor"}


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "programs" in path.relative_to(PACKAGE).parts[:1] and path.name != "__init__.py":
            continue  # what runs on targets is not part of the package's layering
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out.append((name, path))
    return out


MODULES = dict(_modules())


def _resolve(name: str) -> str:
    """A dotted name imported -> the module it is (`a.b.C` -> `a.b` when C is no module)."""
    while name not in MODULES and "." in name:
        name = name.rsplit(".", 1)[0]
    return name


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return {_resolve(m) for m in found if m.startswith("jitterlab")}


def _layer(name: str) -> str:
    return max((p for p in ALLOWED if name == p or name.startswith(p + ".")), key=len)


def _allowed(importer: str, imported: str) -> bool:
    if imported == "jitterlab":  # the package's version
        return True
    layer = _layer(importer)
    if imported == layer or imported.startswith(layer + "."):
        return True
    return any(imported == p or imported.startswith(p + ".") for p in ALLOWED[layer])


@pytest.mark.parametrize(("name", "path"), _modules(), ids=[n for n, _ in _modules()])
def test_layers_import_downwards(name, path):
    offenders = sorted(m for m in _imports(path) if not _allowed(name, m))
    if name in PENDING:
        assert offenders, f"{name} keeps its layer now: remove it from PENDING"
        return
    assert not offenders, f"{name} (layer {_layer(name)}) imports {offenders}"


def test_every_permission_is_used():
    """A permission no module uses is a door left open: the next import through it would pass
    unnoticed. (`model`, the records everyone shares, may be imported by any layer.)"""
    used = set()
    for name, path in MODULES.items():
        layer = _layer(name)
        for imported in _imports(path):
            used.update((layer, p) for p in ALLOWED[layer] if imported == p or imported.startswith(p + "."))
    unused = sorted(f"{layer} -> {p}" for layer, allowed in ALLOWED.items() for p in allowed
                    if p != "jitterlab.model" and (layer, p) not in used)
    assert not unused, f"unused permissions in ALLOWED: {unused}; remove them"


def test_generic_code_imports_no_target_kind():
    """Only the registry of target kinds and the kinds themselves know ssh, labgrid or qemu (and
    `jitterlab doctor ssh://user@host`, which opens an ssh target that no campaign file names)."""
    kinds = ("jitterlab.targets.ssh", "jitterlab.targets.labgrid", "jitterlab.targets.qemu")
    for name, path in MODULES.items():
        # labgrid-board writes jitterlab's emulated arm64 board (a qemu machine) for a labgrid env
        if name.startswith(kinds) or name in ("jitterlab.targets.registry", "jitterlab.plugins",
                                              "jitterlab.cli.commands.doctor",
                                              "jitterlab.cli.commands.labgrid_board") or name in PENDING:
            continue
        bad = sorted(m for m in _imports(path) if m.startswith(kinds))
        assert not bad, f"{name} imports {bad}: ask the target for a capability instead"


def test_no_import_circles():
    """No module reaches itself through the imports of others, counting plugins.py's."""
    graph = {name: {m for m in _imports(path) if m != name} for name, path in MODULES.items()}
    for name, path in MODULES.items():
        if path.name == "__init__.py":  # a package's __init__ imports nothing here but its own
            graph[name] = {m for m in graph[name] if m.startswith(name + ".")}
    state: dict[str, int] = defaultdict(int)
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state[nxt] == 1:
                cycle = [*stack[stack.index(nxt):], nxt]
                raise AssertionError("import circle: " + " -> ".join(cycle))
            if state[nxt] == 0:
                visit(nxt)
        stack.pop()
        state[node] = 2

    try:
        for name in sorted(graph):
            if state[name] == 0:
                visit(name)
    except AssertionError:
        if PENDING_CIRCLES:
            return
        raise
    assert not PENDING_CIRCLES, "no circle left: set PENDING_CIRCLES = False"


def test_no_target_attribute_is_sniffed():
    """Code asks a target for a capability (targets/capabilities.py), never getattr(target, ...)."""
    for name, path in MODULES.items():
        if name in PENDING or name in SNIFFING:
            continue
        text = path.read_text()
        for needle in ("getattr(target", "getattr(ctx.target", "getattr(s.target", "getattr(self._target",
                       "hasattr(target"):
            assert needle not in text, f"{name} sniffs a target: {needle}"


@pytest.mark.parametrize(("name", "path"), _modules(), ids=[n for n, _ in _modules()])
def test_modules_stay_small(name, path):
    assert len(path.read_text().splitlines()) <= MAX_LINES, f"{name} is over {MAX_LINES} lines; split it"


# a plug-in's attributes are declared by its base class or protocol: read, never guessed
GUESSED = ("getattr(entry.obj", "hasattr(entry.obj", "getattr(e.obj", "getattr(bench", "getattr(plugins.",
           "getattr(impl", "getattr(pin", "getattr(probe", "getattr(load")
# still guessing while its owner reworks it (report: the benchmarks' traits)
GUESSING: set[str] = {"jitterlab.report.summaries"}


def test_no_plugin_attribute_is_guessed():
    for name, path in MODULES.items():
        if name in GUESSING:
            continue
        text = path.read_text()
        for needle in GUESSED:
            assert needle not in text, f"{name} guesses at a plug-in: {needle}; declare it on the base class"


def test_architectures_are_named_in_their_records_only():
    """`uname -m` names, GNU triplets and Debian's kernel packages of an architecture are read from
    model/arch.py (one record each), never spelled in a table of another module."""
    from jitterlab.model.arch import ARCHES

    names = set()
    for entry in ARCHES:
        arch = entry.obj
        names |= {*arch.uname, arch.triplet, *arch.kernels.values()}
    for name, path in MODULES.items():
        if name == "jitterlab.model.arch":
            continue
        spelled = sorted({node.value for node in ast.walk(ast.parse(path.read_text()))
                          if isinstance(node, ast.Constant) and node.value in names})
        assert not spelled, f"{name} spells {spelled}: read the architecture's record (model/arch.py)"


# still in measure/benchmarks/ while kernel tracing gets a folder of its own
NOT_YET_MOVED = {"jitterlab.measure.benchmarks.ftrace", "jitterlab.measure.benchmarks.tracefs"}


def _registers_a_benchmark(tree: ast.AST) -> bool:
    """True when the module calls BENCHMARKS.add(...)."""
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add"
               and isinstance(node.func.value, ast.Name) and node.func.value.id == "BENCHMARKS"
               for node in ast.walk(tree))


def test_measure_benchmarks_holds_benchmarks_only():
    """Folders by role: each module of measure/benchmarks/ registers a benchmark (base.py is what a
    benchmark is); a benchmark's parts live in a folder named for them (measure/squarewave/,
    measure/command/, measure/udp/), helpers of wrapped tools in measure/tools/."""
    folder = "jitterlab.measure.benchmarks."
    for name, path in MODULES.items():
        if not name.startswith(folder) or name == folder + "base":
            continue
        registers = _registers_a_benchmark(ast.parse(path.read_text()))
        if name in NOT_YET_MOVED:
            assert not registers, f"{name} registers a benchmark now: remove it from NOT_YET_MOVED"
            continue
        assert registers, f"{name} registers no benchmark: move it to the folder its role names"


def test_no_plugin_name_is_spelled_in_the_runner():
    """The runner and preflight ask plug-ins (needs_probe_cpu, programs, needer) instead of naming them."""
    for module in ("execution/runner.py", "execution/preflight.py"):
        text = (PACKAGE / module).read_text()
        for name in ('"vpin"', '"squarewave"', '"impl"', '"c-fifo"'):
            assert name not in text, f"{module} names {name}"


READERS = ("jitterlab.report", "jitterlab.analysis", "jitterlab.store")  # what reads stored runs
# what may name a benchmark all the same, and why
NAMING_BENCHMARKS = {
    # schema 1 and 2 stored squarewave's impl, period_ns, probe and pin as columns of every run: the
    # migration rebuilds a squarewave run's cell from them, and the old format itself is by name
    "jitterlab.store.sqlite_migrations",
}
TARGET_KINDS = ("local", "ssh", "qemu", "labgrid", "fake")
# a plug-in object as code names it: an entry of a registry, a benchmark, a probe, an exporter ...
PLUGIN = re.compile(r"(^|\.)(obj|bench\w*|benchmark|plugin\w*|probe|pin|impl|load|exporter|section)$"
                    r"|plugins\.|\.get\(")


def _bound_to(tree: ast.AST, names: set[str]) -> set[str]:
    """The names `tree` binds to a string of `names` (`COLUMNS_OF = "squarewave"`), which a comparison
    may use in its place."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant) \
                and node.value.value in names:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound |= {t.id for t in targets if isinstance(t, ast.Name)}
    return bound


def _compared(tree: ast.AST, names: set[str], side: re.Pattern[str] | None = None) -> list[str]:
    """The comparisons in `tree` of a string of `names`, or of a name bound to one, with anything
    (`==`, `!=`, `in (...)`, either way round), or, given `side`, with an expression whose text
    matches it (e.g. a kind)."""
    found = []
    constants = _bound_to(tree, names)

    def named(i: ast.expr) -> bool:
        return ((isinstance(i, ast.Constant) and i.value in names)
                or (isinstance(i, ast.Name) and i.id in constants))

    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = [node.left, *node.comparators]
        for operand in operands:
            items = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
            if not any(named(i) for i in items):
                continue
            others = [ast.unparse(o) for o in operands if o is not operand]
            if side is None or any(side.search(o) for o in others):
                found.append(ast.unparse(node))
    return found


def _plugin_attributes_guessed(tree: ast.AST) -> list[str]:
    """getattr/hasattr on a plug-in object (its base class declares what it has: read it)."""
    return [ast.unparse(node) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr") and node.args
            and PLUGIN.search(ast.unparse(node.args[0]))]


def test_the_checks_below_catch_what_they_are_for():
    benchmarks = {"squarewave", "cyclictest"}
    for caught in ('b == "squarewave"', 'run.cell.benchmark != "cyclictest"', '"squarewave" == name',
                   'benchmark in ("squarewave", "membw")', 'r.benchmark not in {"cyclictest"}',
                   'COLUMNS_OF = "squarewave"\nif benchmark == COLUMNS_OF: pass',
                   'WAVE: str = "squarewave"\nok = name in (WAVE, "x")'):
        assert _compared(ast.parse(caught), benchmarks), caught
    assert not _compared(ast.parse('load == "cpu"'), benchmarks)
    assert not _compared(ast.parse('IDLE = "idle"\nok = load == IDLE'), benchmarks)
    kind = re.compile(r"kind")
    for caught in ('target_kind == "local"', 'spec.kind in ("qemu", "ssh")', '"labgrid" != self.kind'):
        assert _compared(ast.parse(caught), set(TARGET_KINDS), kind), caught
    assert not _compared(ast.parse('client == "local"'), set(TARGET_KINDS), kind)
    for caught in ('getattr(entry.obj, "x", None)', 'hasattr(bench, "traits")',
                   'getattr(plugins.BENCHMARKS.get(n, "b"), "headline")', 'getattr(probe, "reads")'):
        assert _plugin_attributes_guessed(ast.parse(caught)), caught
    assert not _plugin_attributes_guessed(ast.parse("getattr(run, key)"))
    assert _registers_a_benchmark(ast.parse('BENCHMARKS.add("x", "help", X())'))
    assert not _registers_a_benchmark(ast.parse('LOADS.add("x", "help", X())'))


def test_what_reads_stored_runs_asks_traits_not_benchmark_names():
    """The report, the analysis and the store read what a benchmark declares (model.traits: headline,
    periodic, samples) and what a metric declares (model.reading), never `benchmark == "squarewave"`,
    `!=` or `in (...)` a benchmark's name."""
    from jitterlab import plugins

    names = {e.name for e in plugins.BENCHMARKS}
    for name, path in MODULES.items():
        if name.startswith(READERS) and name not in NAMING_BENCHMARKS:
            found = _compared(ast.parse(path.read_text()), names)
            found += re.findall(r'-\s*\{\s*"squarewave"', path.read_text())
            assert not found, f"{name} tests a benchmark's name: {found}"


def test_what_reads_stored_runs_guesses_at_no_plugin():
    """The report and the analysis read a plug-in's declared attributes, never getattr(plug-in, ...)."""
    for name, path in MODULES.items():
        if name.startswith(READERS):
            found = _plugin_attributes_guessed(ast.parse(path.read_text()))
            assert not found, f"{name} guesses at a plug-in's attributes: {found}"


def test_target_kinds_are_capabilities_not_strings():
    """Outside targets/, code asks a target (or its [[target]]) for a capability (ControllerMachine,
    ...) instead of comparing its kind with "local" (`==`, `!=`, `in (...)`, either way round)."""
    kind = re.compile(r"kind")
    for name, path in MODULES.items():
        if name.startswith("jitterlab.targets") or name in KIND_NAMED:
            continue
        text = path.read_text()
        found = _compared(ast.parse(text), set(TARGET_KINDS), kind)
        found += re.findall(r'kind\s*(?:==|!=)\s*["\'](?:local|ssh|qemu|labgrid|fake)["\']', text)
        assert not found, f"{name} compares a target kind as a string: {found}"
