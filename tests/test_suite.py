"""The suite's own rules: the fast loop imports no pyspark and starts no browser (and says so
when a test breaks that), the months the session computes stay as they were built, and the
layer contract fails on an upward import."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.computed import Untouched
from tests.support.fastloop import FAST

ROOT = Path(__file__).resolve().parents[1]


def _pytest(tmp_path: Path, body: str, marks: str = FAST) -> subprocess.CompletedProcess:
    """`pytest -m MARKS` on one test file holding `body`, with the project's fast-loop check."""
    (tmp_path / "test_probe.py").write_text(body)
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.support.fastloop",
                           "-m", marks, str(tmp_path / "test_probe.py")], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


def test_the_fast_loop_says_when_a_test_imports_pyspark(tmp_path):
    bad = _pytest(tmp_path, "def test_x():\n    import pyspark  # noqa: F401\n")
    assert bad.returncode == 1 and "error: the fast loop: pyspark was imported" in bad.stderr, bad.stdout + bad.stderr
    good = _pytest(tmp_path, "def test_x():\n    import json  # noqa: F401\n")
    assert good.returncode == 0, good.stdout + good.stderr
    other = _pytest(tmp_path, "def test_x():\n    import pyspark  # noqa: F401\n", marks="not slow")
    assert other.returncode == 0, other.stdout + other.stderr  # only the fast loop's selection is held to it


def test_the_fast_loop_says_when_a_test_starts_a_browser(tmp_path):
    body = "from tests.support import chromium\n\ndef test_x():\n    chromium.STARTED += 1\n"
    bad = _pytest(tmp_path, body)
    assert bad.returncode == 1 and "error: the fast loop: Chromium was started 1 time(s)" in bad.stderr, bad.stderr


def test_a_read_only_month_that_changed_is_named(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.parquet").write_bytes(b"1")
    watch = Untouched(tmp_path)
    assert watch.changed() == []
    (tmp_path / "a" / "x.parquet").write_bytes(b"22")
    (tmp_path / "new").write_text("")
    assert watch.changed() == ["a/x.parquet", "new"]


@pytest.mark.slow
def test_the_layer_contract_fails_on_an_upward_import(tmp_path):
    """`make layers` on a scratch copy of the checkout: kept as it is; broken, naming the
    import, once pipeline/ imports selector/ (a room above it)."""
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.fail("lint-imports is not installed (the dev extra: make setup)")
    copy = tmp_path / "bgp_congruency"  # the package's name: lint-imports finds it on the path
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv*", ".git", "build", "data", "target", "bench",
                                                              "__pycache__", ".pytest_cache", ".ruff_cache"))

    def run():
        return subprocess.run([str(lint), "--no-cache", str(copy / "pyproject.toml")], capture_output=True, text=True,
                              cwd=tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}, timeout=120)

    ok = run()
    assert ok.returncode == 0 and "1 kept, 0 broken" in ok.stdout, ok.stdout + ok.stderr
    with open(copy / "pipeline" / "steps.py", "a") as f:
        f.write("\nfrom bgp_congruency.selector import rules  # noqa: E402,F401\n")
    bad = run()
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "bgp_congruency.pipeline is not allowed to import bgp_congruency.selector" in bad.stdout
    assert "bgp_congruency.pipeline.steps -> bgp_congruency.selector.rules" in bad.stdout


def _private_uses(source: str) -> list[str]:
    """The product's private names a module's code uses: `from bgp_congruency.X import _name`,
    and `M._name` where M is a name bound to a product module."""
    import ast

    tree = ast.parse(source)
    modules, out = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bgp_congruency"):
            for a in node.names:
                if a.name.startswith("_"):
                    out.append(f"{node.module}.{a.name}")
                else:
                    modules.add(a.asname or a.name)
        elif isinstance(node, ast.Import):
            modules |= {a.asname or a.name.split(".")[0] for a in node.names if a.name.startswith("bgp_congruency")}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                and isinstance(node.value, ast.Name) and node.value.id in modules:
            out.append(f"{node.value.id}.{node.attr}")
    return out


def test_bench_uses_only_public_names_of_the_product():
    """Issue 59: bench/ measures the product through its public names (a private one it reads
    is a second owner of that code, and breaks when the product renames it)."""
    assert _private_uses("from bgp_congruency.x import _y\nfrom bgp_congruency import e as E\nE._z()\n") == \
        ["bgp_congruency.x._y", "E._z"]
    found = {p.name: _private_uses(p.read_text()) for p in sorted((ROOT / "bench").glob("*.py"))}
    assert len(found) > 10 and not {k: v for k, v in found.items() if v}, {k: v for k, v in found.items() if v}
