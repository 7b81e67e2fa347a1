"""The generated references are current: docs/commands.md from the command-line parsers and
docs/configuration.md from Config's and MethodParams' field comments (cli/reference.py),
like docs/SCHEMA.md from the schemas (tests/test_lake.py)."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bgp_congruency.cli import reference
from tests.support.cli import BOUND_S, congruency, env
from tests.support.computed import writable


@pytest.mark.parametrize("name", sorted(reference.FILES))
def test_generated_reference_is_current(name):
    path = reference.DOCS / name
    assert path.read_text() == reference.FILES[name](), f"{path} is stale: run python -m bgp_congruency.cli.reference"


def test_every_setting_is_explained():
    """A field without a `#:` comment would show '-' in docs/configuration.md."""
    from bgp_congruency.common.config import Config
    from bgp_congruency.common.params import MethodParams, RelationshipParams, SourceParams

    bare = [n for cls in (Config, MethodParams, RelationshipParams, SourceParams)
            for n, _, doc in reference._fields(cls) if not doc]
    assert bare == [], f"explain these fields with a #: comment: {bare}"


def test_every_command_is_in_the_reference():
    from bgp_congruency.cli.main import COMMANDS

    text = reference.commands_md()
    assert all(f"## congruency {c}\n" in text for c in (*COMMANDS, "status"))


def test_version_is_the_provenance_version():
    from bgp_congruency.pipeline.provenance import method_version, project_version

    r = congruency("--version")
    assert (r.returncode, r.stdout) == (0, f"congruency {project_version()} (method {method_version()})\n")


def test_compare_help_names_every_table_it_publishes():
    from bgp_congruency.common.tables import MONTH_TABLES as TABLE_ORDER

    text = " ".join(congruency("compare", "--help").stdout.split())
    assert f"Publishes {', '.join(TABLE_ORDER)} " in text


def test_the_package_metadata_builds_without_the_licence_warning():
    """setuptools warns (and stops building on 2027-02-18) on `license = { text = ... }`:
    the SPDX string needs setuptools >= 77."""
    import tomllib

    root = Path(__file__).resolve().parents[1]
    meta = tomllib.loads((root / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"
    assert any(r.startswith("setuptools>=77") for r in meta["build-system"]["requires"])


@pytest.mark.slow
def test_the_readme_examples_on_the_demo_run_as_written(sample, tmp_path):
    """Every `congruency ...` line of the README and docs/ that names data/demo, run as written on a
    copy of the demo month (the README's own paths mapped to this machine's): exit 0, no
    traceback (before issue 30, `status --month 2026-07` after `make demo` said "never run")."""
    import re
    import shlex

    from tests.support.data import DATA

    root = Path(__file__).resolve().parents[1]
    demo = writable(sample.data, tmp_path / "demo")
    text = "\n".join(p.read_text() for p in [root / "README.md", *sorted((root / "docs").glob("*.md"))])
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        pending = ""
        for cmd in block.replace("\\\n", " ").splitlines():
            pending += cmd + "\n"
            try:  # a quoted argument may go on over several lines (--sql "...")
                words = shlex.split(pending, comments=True)
            except ValueError:
                continue
            pending = ""
            if words and words[0] in ("congruency", ".venv/bin/congruency") and "data/demo" in words:
                lines.append(words)
    assert len(lines) >= 12
    # the examples a newcomer tries right after `make demo` are among them
    assert {"status", "advise", "query", "report", "export", "sensitivity"} <= {w[1] for w in lines}
    from bgp_congruency.cli.main import build_parser

    todo = [[w.replace("data/demo", str(demo)).replace("../shared/data", str(DATA)) for w in words[1:]]
            for words in lines]
    # The month-long computations are parsed here and run on this month by their own tests
    # (evaluate: tests/test_evaluate.py and the session's `sample_evaluated`; sensitivity:
    # tests/test_sensitivity.py): 85 s and 32 s of this test's 150.
    for args in [a for a in todo if a[0] in ELSEWHERE]:
        build_parser().parse_args(args)
    lines = [w for w, a in zip(lines, todo) if a[0] not in ELSEWHERE]
    todo = [a for a in todo if a[0] not in ELSEWHERE]
    # One process runs them all, each command as `congruency` would (cli.main.main; its stdout
    # and stderr captured): a process per line cost ~2 s of start-up and imports each.
    r = subprocess.run([sys.executable, "-c", _RUN_EACH, json.dumps(todo)], capture_output=True, text=True,
                       cwd=tmp_path, timeout=BOUND_S * 4, env=env(PYTHONPATH=str(root)))
    assert r.returncode == 0, r.stderr[-3000:]
    results = json.loads(r.stdout.splitlines()[-1])
    assert len(results) == len(lines)
    for words, (rc, err) in zip(lines, results):
        assert rc == 0 and "Traceback" not in err, (words, err[-1500:])


#: Commands of the docs' examples that compute over the whole month, run by tests of their own.
ELSEWHERE = ("evaluate", "sensitivity")

#: Runs each command line of argv[1] (a JSON list of argument lists) through cli.main.main in
#: this one process, and prints [[exit code, stderr], ...] as its last line.
_RUN_EACH = r"""
import contextlib, io, json, sys, traceback
from bgp_congruency.cli.main import main
out = []
for args in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            rc = main(args)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 1
        except BaseException:
            traceback.print_exc()
            rc = 1
    out.append([rc or 0, err.getvalue()])
print(json.dumps(out))
"""


# --- the map follows the house (issue 58) ------------------------------------------------------

ROOT = Path(__file__).resolve().parents[1]
#: A repo path as docs and docstrings name one: folders, then a file with a known extension.
_PATH = re.compile(
    r"(?<![\w/.$-])((?:\.\./)*(?:[A-Za-z_][\w.-]*/)+[\w.-]+\.(?:py|md|toml|sql|rs|json|properties|sh|txt|png|lock))\b")
#: Where a named path is not the repo's: a data dir's, an archive's, a placeholder's (capitals).
_NOT_REPO = ("../shared/", "DATA_DIR", "bench/out/", "data/", "build/", "_runs/", "ground_truth/")


def _tracked() -> list[str]:
    """The repository's files as git sees them (not a venv's, a build's or a bench's worktrees)."""
    return subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()


def _named_paths(tracked: list[str]):
    texts = [ROOT / t for t in tracked
             if t.endswith((".md", ".py", ".rs")) or t == "Makefile"]
    for f in texts:
        for m in _PATH.finditer(f.read_text(errors="replace")):
            t = m.group(1)
            if t.startswith(_NOT_REPO) or re.search(r"(^|/)(M|YYYY-MM|OUT|NAME|[A-Z_]+)(/|\.)", t):
                continue
            yield f, t


def test_every_repo_path_named_in_the_docs_and_docstrings_exists():
    """README.md, docs/, every folder's .md and every module's docstrings and comments name only
    files that exist (issue 58: 26 mentions of 7 files gone, the catalog's old module 15 times)."""
    tracked = _tracked()
    names = set(tracked) | {d for t in tracked for d in (str(Path(t).parents[i]) for i in range(len(Path(t).parts) - 1))}
    missing = []
    for f, t in _named_paths(tracked):
        t = t.rstrip("/")
        here = [ROOT / t, f.parent / t, ROOT.parent / t if t.startswith("../") else ROOT / t]
        if not any(p.exists() for p in here) and not any(n == t or n.endswith("/" + t) for n in names):
            missing.append(f"{f.relative_to(ROOT)}: {t}")
    assert missing == []


def test_the_layer_table_is_the_import_contract():
    """docs/architecture.md's layer table lists the rooms of pyproject.toml's import-linter
    contract, level by level (issue 58: relationships/ was missing)."""
    import tomllib

    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]["layers"]
    want = [sorted(r.strip() for r in level.split("|")) for level in contract]
    text = (ROOT / "docs" / "architecture.md").read_text()
    table = text[text.index("| level | rooms |"):].split("\n\n")[0]
    got = [sorted(re.findall(r"`(\w+)/`", row.split("|")[2])) for row in table.splitlines()[2:]]
    assert [int(row.split("|")[1]) for row in table.splitlines()[2:]] == list(range(1, len(want) + 1))
    assert got == want
