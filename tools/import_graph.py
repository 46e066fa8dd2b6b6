"""The import graph of services/: cycles, function-local imports of project modules, sizes.

    python tools/import_graph.py          # prints the numbers; exit status 1 on a cycle (of
                                          # modules or of services' packages), a function-local
                                          # import of a project module, or a gradio import in
                                          # services/
    python tools/import_graph.py --root DIR   # the same for another tree (the tests use one)

Built with ast, without importing anything: an edge A -> B for each `import`/`from ... import`
of B in A, at module level or inside a function (reported separately: such imports hide
cycles). The metric registry's "module:factory" names (importlib) are not edges, by design.

Packages: services.X -> services.Y when a module of X imports one of Y. Two packages that reach
each other are a cycle even when no two modules do. The imports that run up the layer order of
pyproject.toml's layers contract on services' packages (containers = ["services"]) are counted
too; import-linter fails on those it does not list in ignore_imports.
"""

from __future__ import annotations

import argparse
import ast
import collections
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("services", "storage")


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path = ROOT) -> dict[str, Path]:
    return {module_name(p, root): p for top in PROJECT for p in sorted((root / top).rglob("*.py"))}


def package(module: str) -> str | None:
    """services.X for a module of services' package X; None for services itself and storage."""
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "services" and len(parts) > 1 else None


def package_edges(every: dict[str, set[str]]) -> dict[tuple[str, str], list[str]]:
    """(importing package, imported package) -> the module imports behind that edge."""
    out = collections.defaultdict(list)
    for name, targets in every.items():
        for target in sorted(targets):
            a, b = package(name), package(target)
            if a and b and a != b:
                out[a, b].append(f"{name} -> {target}")
    return out


def services_contract(root: Path = ROOT) -> tuple[list[set[str]], set[tuple[str, str]]] | None:
    """The layers (top first, each a set of services.X) and the ignored imports (importer,
    imported) of pyproject.toml's layers contract whose container is services; None without one."""
    config = root / "pyproject.toml"
    if not config.exists():
        return None
    contracts = tomllib.loads(config.read_text(encoding="utf-8")).get("tool", {}).get("importlinter", {})
    for c in contracts.get("contracts", []):
        if c.get("type") == "layers" and c.get("containers") == ["services"]:
            layers = [
                {f"services.{m.strip().strip('()')}" for m in layer.replace(":", "|").split("|")}
                for layer in c["layers"]
            ]
            ignored = {tuple(x.strip() for x in i.split("->")) for i in c.get("ignore_imports", [])}
            return layers, ignored
    return None


def against_layers(edges: dict[tuple[str, str], list[str]], layers: list[set[str]]) -> list[str]:
    """The module imports that run up the layer order, or between two packages of one layer."""
    level = {p: i for i, layer in enumerate(layers) for p in layer}
    out = []
    for (a, b), found in sorted(edges.items()):
        if a in level and b in level and level[b] <= level[a]:
            how = "up" if level[b] < level[a] else "within a layer"
            out += [f"{x} ({how})" for x in found]
    return out


def imports(path: Path, name: str, known: set[str]):
    """(target module, line, inside a function) for each project import in the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def resolve(dotted: str) -> str | None:
        parts = dotted.split(".")
        for i in range(len(parts), 0, -1):
            if ".".join(parts[:i]) in known:
                return ".".join(parts[:i])
        return None

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                targets = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in child.names]
            else:
                targets = []
            for t in {resolve(t) for t in targets} - {None, name}:
                yield t, child.lineno, in_function
            yield from visit(child, inside)

    yield from visit(ast.parse(path.read_text(encoding="utf-8")), False)


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(10_000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The import graph of services/.")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository root (default: this one)")
    root = parser.parse_args(argv).root.resolve()
    mods = modules(root)
    known = set(mods)
    top, every = collections.defaultdict(set), collections.defaultdict(set)
    local = []
    gradio = []
    for name, path in mods.items():
        for target, line, in_function in imports(path, name, known):
            every[name].add(target)
            if in_function:
                local.append(f"{name}:{line} -> {target}")
            else:
                top[name].add(target)
        if name.startswith("services") and any(
            isinstance(n, (ast.Import, ast.ImportFrom))
            and any(
                (a.name if isinstance(n, ast.Import) else (n.module or "")).split(".")[0] == "gradio" for a in n.names
            )
            for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        ):
            gradio.append(name)
    services = {m: p for m, p in mods.items() if m.startswith("services")}
    sizes = sorted(((len(p.read_text(encoding="utf-8").splitlines()), m) for m, p in services.items()), reverse=True)
    folders = collections.Counter(str(p.parent.relative_to(root)) for p in services.values())
    print(f"services modules: {len(services)}; largest: " + ", ".join(f"{m} ({n} lines)" for n, m in sizes[:3]))
    print("modules per folder: " + ", ".join(f"{k} {v}" for k, v in sorted(folders.items())))
    found_top, found_all = cycles(top), cycles(every)
    print(f"import cycles, module level: {len(found_top)}; with function-local imports: {len(found_all)}")
    for c in found_all:
        print("  cycle: " + " <-> ".join(c))
    print(f"function-local imports of project modules: {len(local)}")
    for x in local:
        print("  " + x)
    print(f"services modules importing gradio: {len(gradio)}")
    for g in gradio:
        print("  " + g)
    contract = services_contract(root)
    layers, ignored = contract if contract else (None, set())
    # the contract's ignored imports are deliberate, each with its reason: no edge for a cycle
    edges = package_edges({m: {t for t in ts if (m, t) not in ignored} for m, ts in every.items()})
    package_graph = collections.defaultdict(set)
    for a, b in edges:
        package_graph[a].add(b)
    found_packages = cycles(package_graph)
    pairs = sum(len(c) * (len(c) - 1) // 2 for c in found_packages)
    print(
        f"package edges in services: {len(edges)}; package cycles: {len(found_packages)} "
        f"({pairs} pairs of packages reaching each other), leaving out the {len(ignored)} ignored imports"
    )
    for c in found_packages:
        print("  package cycle: " + " <-> ".join(c))
    for (a, b), found in sorted(edges.items()):
        if a < b and (b, a) in edges:
            print(f"  {a} <-> {b}: " + ", ".join(found + edges[b, a]))
    if layers is None:
        print("no layers contract on services' packages in pyproject.toml")
    else:
        wrong = against_layers(package_edges(every), layers)
        listed = {f"{a} -> {b}" for a, b in ignored}
        print(
            f"imports against the layer order of services' packages: {len(wrong)} "
            f"(ignored in the contract: {sum(w.split(' (')[0] in listed for w in wrong)})"
        )
        for w in wrong:
            print("  " + w)
    return 1 if found_all or local or gradio or found_packages else 0


if __name__ == "__main__":
    sys.exit(main())
