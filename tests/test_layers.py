"""The architecture page's layer line, checked against every import in memfs/.

The architecture map of docs/architecture.md lists memfs's modules and packages in layers, lowest
first. Every import between two of them, wherever it stands (module level, inside a
function, under TYPE_CHECKING), must go from a layer to one before it: never sideways,
never up. So the line cannot drift from the code, and a new module must be placed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "memfs"
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def readme_layers() -> list[set[str]]:
    """The layers of the architecture page's fenced block that starts ``errors`` and goes on in
    lines of ``<- a, b, ...``."""
    lines = ARCHITECTURE.read_text(encoding="utf-8").splitlines()
    start = lines.index("errors")
    layers = [{"errors"}]
    for line in lines[start + 1 :]:
        if not line.startswith("  <- "):
            break
        layers.append({name.strip() for name in line[5:].split(",")})
    return layers


def unit_of(module: str) -> str:
    """``memfs.mount.ops`` -> ``mount``; ``memfs`` -> ``memfs`` (the package itself)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "memfs"


def module_of(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str]]:
    """``(line, module)`` of every memfs module ``tree`` imports."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                package = module.split(".")
                base = package[: len(package) - node.level + (1 if is_package else 0)]
                source = ".".join([*base, *([node.module] if node.module else [])])
            else:
                source = node.module or ""
            for alias in node.names:
                # "from memfs import errors" is a module; "from memfs import __version__"
                # is a name of the package.
                candidate = f"{source}.{alias.name}"
                as_path = ROOT.joinpath(*candidate.split("."))
                if as_path.with_suffix(".py").exists() or as_path.is_dir():
                    yield node.lineno, candidate
                else:
                    yield node.lineno, source


def memfs_sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_module_is_in_one_layer_of_the_readme() -> None:
    layers = readme_layers()
    placed = [name for layer in layers for name in layer]
    assert len(placed) == len(set(placed)), f"named twice in the layers: {placed}"
    units = {unit_of(module_of(p)) for p in memfs_sources()} - {"memfs"}
    assert units - set(placed) == set(), "place these in the architecture page's layer line"
    assert set(placed) - units == set(), "the layer line names modules that are gone"


def test_every_import_goes_to_an_earlier_layer() -> None:
    rank = {name: i for i, layer in enumerate(readme_layers()) for name in layer}
    wrong: list[str] = []
    for path in memfs_sources():
        module = module_of(path)
        here = unit_of(module)
        if here == "memfs":
            continue  # the package itself: see the next test
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for line, target in imported(tree, module, path.name == "__init__.py"):
            if not (target == "memfs" or target.startswith("memfs.")):
                continue
            there = unit_of(target)
            if there in (here, "memfs"):
                continue
            if rank[there] >= rank[here]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {target}")
    assert wrong == [], "imports against the architecture page's layers:\n" + "\n".join(wrong)


def test_the_package_itself_imports_nothing_when_loaded() -> None:
    """Every layer may ``from memfs import __version__``: that is safe only because
    memfs/__init__.py imports its public classes lazily (inside __getattr__) or for the
    type checker alone."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.If) and re.search(r"\bTYPE_CHECKING\b", ast.unparse(node.test)):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.FunctionDef):
                break
            if isinstance(inner, ast.ImportFrom | ast.Import):
                names = [inner.module or ""] if isinstance(inner, ast.ImportFrom) else []
                names += [a.name for a in inner.names] if isinstance(inner, ast.Import) else []
                assert not any(n.startswith("memfs") for n in names), ast.unparse(inner)


def test_the_layer_check_sees_a_wrong_import(tmp_path: Path) -> None:
    """The checker itself: an import from a later layer, a relative one and one inside
    a function are all found."""
    source = (
        "from memfs.cli import main\nfrom ..mount import ops\ndef f():\n    import memfs.agent\n"
    )
    found = [t for _, t in imported(ast.parse(source), "memfs.store.base", False)]
    assert found == ["memfs.cli", "memfs.mount.ops", "memfs.agent"]
