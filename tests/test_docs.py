"""The generated references are current: docs/commands.md from the command-line parsers and
docs/configuration.md from Config's and MethodParams' field comments (cli/reference.py),
like docs/SCHEMA.md from the schemas (tests/test_warehouse.py)."""
from __future__ import annotations

import pytest

from bgp_congruency.cli import reference


@pytest.mark.parametrize("name", sorted(reference.FILES))
def test_generated_reference_is_current(name):
    path = reference.DOCS / name
    assert path.read_text() == reference.FILES[name](), f"{path} is stale: run python -m bgp_congruency.cli.reference"


def test_every_setting_is_explained():
    """A field without a `#:` comment would show '-' in docs/configuration.md."""
    from bgp_congruency.common.config import Config
    from bgp_congruency.common.params import MethodParams

    bare = [n for cls in (Config, MethodParams) for n, _, doc in reference._fields(cls) if not doc]
    assert bare == [], f"explain these fields with a #: comment: {bare}"


def test_every_command_is_in_the_reference():
    from bgp_congruency.cli.main import COMMANDS

    text = reference.commands_md()
    assert all(f"## congruency {c}\n" in text for c in (*COMMANDS, "status"))
