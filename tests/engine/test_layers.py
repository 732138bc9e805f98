"""The engine's modules import one way: no module-level import cycle in ``pullback/``."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pullback"


def _module_name(path):
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(path):
    """The pullback modules ``path`` imports at module level (not inside functions)."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("pullback"):
                # ``from . import core`` imports the module pullback._engine.core; ``from .core
                # import plain`` imports pullback._engine.core (plain is no module)
                submodules = [f"{mod}.{a.name}" for a in node.names]
                found.update(submodules)
                if not any((PACKAGE.parent / (m.replace(".", "/") + ".py")).exists()
                           or (PACKAGE.parent / m.replace(".", "/")).is_dir()
                           for m in submodules):
                    found.add(mod)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("pullback"))
    return found


def _graph():
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: {d for d in _top_level_imports(p) if d in modules and d != m}
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


def test_no_module_level_import_cycle():
    cycle = _cycle(_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_check_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_engine_layers_import_only_from_below():
    graph = _graph()
    e = "pullback._engine."
    below = {
        "interception": set(),
        "registry": {"interception"},
        "refusals": {"registry"},
        "methods": {"refusals"},
        "guard": {"registry", "refusals"},
        "binding": {"registry"},
        "lazy": {"registry"},
        "core": {"registry", "refusals", "methods", "guard", "binding", "interception"},
        "backend": {"core"},
        "backward": {"core", "registry", "guard", "lazy", "backend", "methods", "refusals"},
    }
    below = {e + m: {e + d for d in ds} for m, ds in below.items()}
    below[e + "backward"].add("pullback.tree")
    for module, allowed in below.items():
        assert graph[module] <= allowed, f"{module} imports {graph[module] - allowed}"


def test_the_engine_stays_readable_in_one_sitting():
    # tracked values, dispatch and recording (core.py) and the backward pass: a line budget
    core = (PACKAGE / "_engine/core.py").read_text().splitlines()
    backward = (PACKAGE / "_engine/backward.py").read_text().splitlines()
    vjp_layer = next(i for i, line in enumerate(backward) if "the vjp layer" in line and i)
    # (900 lines until the scoped interception, the deferral to scipy.sparse's operators and
    # the record of positional out= and escaped numbers came in: 920)
    assert len(core) + vjp_layer <= 920, len(core) + vjp_layer
