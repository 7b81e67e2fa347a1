"""The project's one error base: every error a command reports is a CongruencyError whose
message is the one line the user sees and whose `exit_code` the command exits with;
cli/main.py catches it once for every command.

Exit codes: 1 the work failed (a file, the engine, a lock held elsewhere); 2 bad input (an
argument, a config key, a month with no results: named in the message); 3 the data cannot
back what was asked (export: no config written). Ctrl-C is 130 and a closed pipe 141
(cli/main.py)."""
from __future__ import annotations


class CongruencyError(Exception):
    """The work failed; the message names the file, step or setting and what is wrong."""

    exit_code = 1


class BadInput(CongruencyError, ValueError):
    """An argument, config key, file or month that is wrong; a ValueError too, so library
    callers that validate with `except ValueError` keep working."""

    exit_code = 2
