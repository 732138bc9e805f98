"""The package's plan, enforced. Imports run one way: no cycle, each wing imports only the
wings below it, and each engine module only the engine modules below it. Every file fits
the line budget, no import of pullback's own modules hides inside a function, and only
``pullback/_wiring.py`` writes into another module's namespace. The engine as a whole
keeps a line budget, and every engine file is named here with what it holds."""

import ast
import importlib
import types
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pullback"

# The engine (pullback/_engine), from the bottom up: a module imports only modules above it
# in this list (and pullback.tree). What each file holds:
ENGINE = {
    "interception": "NumPy's and SciPy's functions swapped for stand-ins while a "
                    "differentiation runs, and nothing swapped otherwise",
    "registry": "the rule tables, the cotangent markers, the errors, name_of",
    "refusals": "the messages of what cannot be differentiated, naming the caller's line",
    "methods": "the array methods of tracked values, and numbers escaped with .item()",
    "guard": "arrays a graph needs held read-only while it needs them",
    "binding": "a call's arguments bound by name, for rules and out=",
    "lazy": "lazy arrays (Dask): checks deferred until they are computed",
    "core": "tracked values and levels, dispatch (apply): a call to its record; primitive",
    "backend": "other array libraries' values (CuPy, Dask) as NumPy's",
    "records": "the record kinds, each with both halves (record and pull), and record()",
    "register": "registration: rrule, elementwise, linear, composite, ...",
    "modes": "no_grad",
    "construct": "np.array and NumPy's other constructors on tracked values",
    "writes": "x[i] = v, x += v, out= and where= on tracked values; views and their bases",
    "backward": "the backward pass: cotangents from roots to leaves, one place for shapes",
    "arguments": "what a transform is given and returns, checked, with its messages",
    "vjp": "the vjp layer: linearize a function, pull cotangents back through the run",
}
# lines of pullback/_engine/*.py together: 5,330 today, writes and records included (the
# record kinds with both halves took the rows out of registry.py, the pulls out of
# backward.py and the node making out of core.py, and added the protocol they share)
ENGINE_BUDGET = 5350

# The wings (pullback/<wing>) and the wings each may import at module level.
FACES = {"api", "transforms", "tracker", "testing", "debug", "optim", "optimize"}
WINGS = {
    "tree": set(),
    "_engine": {"_engine", "tree"},
    "_jit": {"_engine", "_jit", "tree"},
    "extend": {"_engine", "_jit", "tree"},
    "rules": {"_engine", "extend", "rules", "tree"},
    **{face: {"_engine", "_jit", "tree", "extend", *FACES} for face in FACES},
}
TOP_LEVEL = {"__init__", "_wiring", "py.typed", "rules", *WINGS}

LINE_BUDGET = 600  # lines per file
OVER_BUDGET: dict = {}  # file -> why it may be longer (none today)

# the one module that may write into another module's namespace
WIRING = "pullback._wiring"


def _module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules():
    return {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _imported(node, path):
    """The modules (or ``module.name``s) an import statement names, absolute."""
    if isinstance(node, ast.Import):
        return ["", *(a.name for a in node.names)]
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    if node.level:
        base = package.split(".")
        base = base[:len(base) - node.level + 1]
        mod = ".".join(base + ([node.module] if node.module else []))
    else:
        mod = node.module or ""
    return [mod] + [f"{mod}.{a.name}" for a in node.names]


def _top_level_imports(path, modules):
    """The pullback modules ``path`` imports at module level (not inside functions):
    ``from . import core`` imports pullback._engine.core, ``from .core import plain``
    imports pullback._engine.core (plain is no module)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            mod, *names = _imported(node, path)
            submodules = [n for n in names if n in modules]
            found.update(submodules if submodules else [mod] if mod in modules else [])
    return found


def _graph():
    modules = _modules()
    return {m: {d for d in _top_level_imports(p, modules) if d != m}
            for m, p in modules.items()}


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state, stack = {}, []

    def visit(m):
        state[m] = "open"
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == "open":
                return stack[stack.index(d):] + [d]
            if d not in state:
                found = visit(d)
                if found:
                    return found
        state[m] = "done"
        stack.pop()
        return None

    for m in sorted(graph):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def _wing(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_no_module_level_import_cycle():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_top_level_holds_only_what_users_import_and_the_wings():
    assert {p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
            if p.name != "__pycache__"} <= TOP_LEVEL


def test_each_wing_imports_only_the_wings_below_it():
    wrong = [f"{m} imports {d}" for m, deps in _graph().items()
             if _wing(m) in WINGS for d in deps if _wing(d) not in WINGS[_wing(m)]]
    assert not wrong, wrong


def test_the_engine_modules_import_only_from_below():
    order = list(ENGINE)
    wrong = []
    for m, deps in _graph().items():
        if _wing(m) != "_engine" or m == "pullback._engine":
            continue
        mine = order.index(m.split(".")[2])
        wrong += [f"{m} imports {d}" for d in deps if _wing(d) == "_engine"
                  and order.index(d.split(".")[2]) >= mine]
    assert not wrong, wrong


def test_every_engine_file_is_named_with_what_it_holds():
    files = {p.stem for p in (PACKAGE / "_engine").glob("*.py")} - {"__init__"}
    assert files == set(ENGINE), (files - set(ENGINE), set(ENGINE) - files)


def test_the_engine_stays_readable_in_one_sitting():
    lines = sum(len(p.read_text().splitlines()) for p in (PACKAGE / "_engine").glob("*.py"))
    assert lines <= ENGINE_BUDGET, lines


# the engine's two loops, each readable on one screen: (module, function) -> at most
# (lines, cyclomatic complexity)
LOOPS = {("core", "apply"): (40, 10), ("backward", "backward_pass"): (40, 10)}


def complexity(function):
    """McCabe's count of a function's paths: one, plus one per branch, loop, handler,
    comprehension filter, conditional expression and extra operand of ``and``/``or``."""
    n = 1
    for node in ast.walk(function):
        if isinstance(node, (ast.If, ast.IfExp, ast.For, ast.While, ast.ExceptHandler,
                             ast.Assert)):
            n += 1
        elif isinstance(node, ast.comprehension):
            n += 1 + len(node.ifs)
        elif isinstance(node, ast.BoolOp):
            n += len(node.values) - 1
    return n


def test_the_engines_loops_fit_on_a_screen():
    for (module, name), (most_lines, most_paths) in LOOPS.items():
        tree = ast.parse((PACKAGE / "_engine" / f"{module}.py").read_text())
        function = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
                        and n.name == name)
        lines = function.end_lineno - function.lineno + 1
        assert lines <= most_lines and complexity(function) <= most_paths, (
            module, name, lines, complexity(function))


def test_the_complexity_count_sees_branches_loops_and_conditions():
    source = ("def f(x):\n    for y in x:\n        if y and x or y:\n"
              "            return 1 if y else 2\n")
    assert complexity(ast.parse(source).body[0]) == 6


_LEVEL_NAMES = {"top", "lvl", "la", "lb"}  # (in modules that read levels)


def _is_level(node, reads_levels):
    """Whether ``node`` is a level: ``x.level``, ``top_level(...)[0]``, or, in a module that
    reads levels, a name the engine gives one."""
    if isinstance(node, ast.Attribute):
        return node.attr == "level"
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call):
        return getattr(node.value.func, "id", None) == "top_level"
    return reads_levels and isinstance(node, ast.Name) and node.id in _LEVEL_NAMES


def _sign_tests(source):
    """The lines that compare a level with 0 or -1 by order (``x.level >= 0``, ``top <
    0``): a pb.jit trace told from a gradient computation by the sign of its level."""
    tree = ast.parse(source)
    reads_levels = {"top_level", "live_levels"} & _imported_names(tree) or "def top_level" in source
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare) or not any(
                isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops):
            continue
        sides = [node.left, *node.comparators]
        signs = [s for s in sides if isinstance(s, ast.Constant) and s.value in (0, -1) or (
            isinstance(s, ast.UnaryOp) and isinstance(s.op, ast.USub))]
        if signs and any(_is_level(s, reads_levels) for s in sides):
            found.append(node.lineno)
    return found


def test_no_sign_test_on_a_level():
    # a pb.jit trace's box says it is one (``traced``); no live level is NO_LEVEL
    found = [f"{path.relative_to(PACKAGE.parent)}:{line}" for path in PACKAGE.rglob("*.py")
             for line in _sign_tests(path.read_text())]
    assert not found, found


def test_the_sign_test_check_finds_them():
    source = ("from .core import top_level\n"
              "a = x.level >= 0\nb = top < 0\nc = top_level(v)[0] >= 0\nd = x.level != 0\n")
    assert _sign_tests(source) == [2, 3, 4]


def test_every_file_fits_the_line_budget():
    over = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > LINE_BUDGET}
    assert over.keys() <= OVER_BUDGET.keys(), over


def _nested_imports(tree):
    """Import statements inside functions and classes (at any depth)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    yield inner


def _own(node, path):
    return any(n.startswith("pullback") for n in _imported(node, path)) or (
        isinstance(node, ast.ImportFrom) and node.level)


def test_no_import_of_the_package_hides_inside_a_function():
    hidden = [f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
              for path in PACKAGE.rglob("*.py")
              for node in _nested_imports(ast.parse(path.read_text())) if _own(node, path)]
    assert not hidden, hidden


def _imported_names(tree):
    """The names a module binds by its imports (at any depth)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.asname or a.name for a in node.names)
    return names


def _root(node):
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _writes_into_imports(source, namespace=None):
    """``x.attr = v``, ``del x.attr`` and ``setattr(x, ...)`` where ``x`` is a module or a
    class the module imported: a write into another module's namespace or onto its class.
    (An instance imported, such as the engine's thread state, is written as it is meant to
    be.) ``namespace``: the module's globals, to tell modules and classes from instances;
    without it every imported name counts."""
    tree = ast.parse(source)
    imported = {n for n in _imported_names(tree) if namespace is None
                or isinstance(namespace.get(n), (types.ModuleType, type))}
    found = []
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = node.targets
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("setattr", "delattr") and node.args):
            if _root(node.args[0]) in imported:
                found.append(node.lineno)
            continue
        for t in targets:  # (an item written into an imported dict is that dict's use)
            for leaf in t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]:
                if isinstance(leaf, ast.Attribute) and _root(leaf) in imported:
                    found.append(node.lineno)
                    break
    return found


def test_only_the_wiring_module_writes_into_other_modules():
    found = []
    for name, path in _modules().items():
        if name == WIRING:
            continue
        try:
            namespace = vars(importlib.import_module(name))
        except ImportError:  # (SciPy's rules without SciPy: every imported name counts)
            namespace = None
        found += [f"{path.relative_to(PACKAGE.parent)}:{line}"
                  for line in _writes_into_imports(path.read_text(), namespace)]
    assert not found, found


def test_the_wiring_check_finds_a_write():
    assert _writes_into_imports("from . import core\ncore.hook = print\n") == [2]
    assert _writes_into_imports("from .core import T\nsetattr(T, 'x', 1)\n") == [2]
    assert _writes_into_imports("import numpy as np\nfrom . import core\nx = core.t\n"
                                "x.a = 1\nx[np.s_[:]] = 1\ncore.table[1] = 2\n") == []
    assert _writes_into_imports("def f():\n    g = lambda: 1\n    g.__name__ = 'g'\n") == []


def test_the_wiring_module_is_imported_last():
    body = ast.parse((PACKAGE / "__init__.py").read_text()).body
    imports = [n for n in body if isinstance(n, (ast.Import, ast.ImportFrom))]
    last = imports[-1]
    assert isinstance(last, ast.ImportFrom) and [a.name for a in last.names] == ["_wiring"]
