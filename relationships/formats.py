"""Relationship files an operator downloads, read into one form: (as1, as2) -> rel, with the
month's convention (`p2c`: as1 is the provider of as2; `p2p` and `s2s` with as1 < as2).

- CAIDA serial-1 (`YYYYMMDD.as-rel.txt.bz2`, and the IPv6 `as-rel.v6-stable.txt`):
  `as1|as2|-1` (as1 provides as2) or `as1|as2|0` (peers); `#` lines are comments, among them
  `# input clique: ...`.
- CAIDA serial-2 (`YYYYMMDD.as-rel2.txt.bz2`): the same and a fourth column, the source of the
  inference (`bgp`, `mlp`); a relationship of 1 is siblings there.
- BGPKIT `as2rel` (`as2rel-v4-latest.json.bz2`, `as2rel-v6-latest.json.bz2`): a JSON array of
  {asn1, asn2, paths_count, peers_count, rel} with rel 1 (asn1 is upstream of asn2) or 0
  (peers). One pair may have several entries (each relationship the paths showed); the one
  on the most paths is kept, ties to p2p.

Compressed files (.bz2, .gz) are read as they are. Errors name the file and line.
"""
from __future__ import annotations

import bz2
import gzip
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from bgp_congruency.common.errors import BadInput

FORMATS = ("caida-serial-1", "caida-serial-2", "bgpkit-as2rel")


class RelFileError(BadInput):
    """A relationship file that cannot be read: the message names the file, the line and what is wrong."""


@dataclass
class RelFile:
    """A relationship file read: its format, family (4 or 6), links, and the clique it states."""

    path: str
    format: str
    afi: int
    links: dict[tuple[int, int], str] = field(default_factory=dict)
    clique: list[int] = field(default_factory=list)


def _open_text(p: Path) -> str:
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise RelFileError(f"{p}: cannot read ({exc.strerror or exc})") from None
    try:
        if raw[:3] == b"BZh":
            raw = bz2.decompress(raw)
        elif raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        return raw.decode("utf-8")
    except (OSError, EOFError, ValueError) as exc:
        raise RelFileError(f"{p}: not a readable compressed or text file ({exc})") from None


def _family(p: Path, afi: int | None) -> int:
    """The family given, else the file's name says v6 (`as-rel.v6-stable`, `as2rel-v6-`), else 4."""
    if afi is not None:
        return afi
    return 6 if re.search(r"v6", p.name, re.IGNORECASE) else 4


def _put(links: dict, a: int, b: int, rel: str) -> None:
    if rel == "p2c":
        links[(a, b)] = "p2c"
    else:
        links[(min(a, b), max(a, b))] = rel


def _asn(text: str, p: Path, n: int) -> int:
    if not text.isdigit() or int(text) > 2**32 - 1:
        raise RelFileError(f"{p}: line {n}: expected an ASN, got {text!r}")
    return int(text)


def read(path: str | Path, afi: int | None = None) -> RelFile:
    """The relationships of a CAIDA serial-1 or serial-2 file or a BGPKIT as2rel JSON file
    (told apart by their content), for family `afi` (default: from the file's name)."""
    p = Path(path)
    text = _open_text(p)
    head = text.lstrip()[:1]
    if head == "[":
        return _bgpkit(p, text, _family(p, afi))
    if not head:
        raise RelFileError(f"{p}: empty (expected CAIDA serial-1/serial-2 lines or a BGPKIT as2rel JSON array)")
    return _caida(p, text, _family(p, afi))


def _caida(p: Path, text: str, afi: int) -> RelFile:
    out = RelFile(str(p), "caida-serial-1", afi)
    links: dict = {}
    columns = None
    for n, line in enumerate(io.StringIO(text), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            m = re.match(r"#\s*input clique:\s*(.*)$", line)
            if m:
                out.clique = sorted(int(x) for x in m.group(1).split())
            continue
        parts = line.split("|")
        if columns is None:
            columns = len(parts)
            if columns not in (3, 4):
                raise RelFileError(f"{p}: line {n}: expected as1|as2|rel (serial-1) or as1|as2|rel|source "
                                   f"(serial-2), got {line[:60]!r}")
            out.format = "caida-serial-1" if columns == 3 else "caida-serial-2"
        if len(parts) != columns:
            raise RelFileError(f"{p}: line {n}: expected {columns} '|'-separated fields like the lines before, "
                               f"got {line[:60]!r}")
        a, b = _asn(parts[0], p, n), _asn(parts[1], p, n)
        rel = {"-1": "p2c", "0": "p2p", "1": "s2s" if columns == 4 else None}.get(parts[2].strip())
        if rel is None:
            raise RelFileError(f"{p}: line {n}: relationship {parts[2]!r}: expected -1 (p2c) or 0 (p2p)"
                               + (" or 1 (s2s)" if columns == 4 else ""))
        _put(links, a, b, rel)
    if not links:  # comments only: as empty as an empty file, said the same way
        raise RelFileError(f"{p}: no relationship lines, only comments (expected CAIDA serial-1/serial-2 "
                           "lines as1|as2|rel)")
    out.links = links
    return out


def _bgpkit(p: Path, text: str, afi: int) -> RelFile:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RelFileError(f"{p}: line {exc.lineno}: not JSON ({exc.msg})") from None
    best: dict[tuple[int, int], tuple[int, str, int, int]] = {}
    for i, e in enumerate(doc):
        try:
            a, b, rel = int(e["asn1"]), int(e["asn2"]), int(e.get("rel", e.get("relationship")))
            n = int(e.get("paths_count", 0))
        except (KeyError, TypeError, ValueError):
            raise RelFileError(f"{p}: entry {i + 1}: expected {{asn1, asn2, paths_count, peers_count, rel}}, "
                               f"got {str(e)[:80]}") from None
        if rel not in (0, 1):
            raise RelFileError(f"{p}: entry {i + 1}: rel {rel}: expected 1 (asn1 upstream of asn2) or 0 (peers)")
        key = (min(a, b), max(a, b))
        cand = (n, "p2p" if rel == 0 else "p2c", a, b)
        cur = best.get(key)
        if cur is None or (n, cand[1] == "p2p") > (cur[0], cur[1] == "p2p"):
            best[key] = cand
    if not best:
        raise RelFileError(f"{p}: an empty JSON array (expected BGPKIT as2rel entries)")
    out = RelFile(str(p), "bgpkit-as2rel", afi)
    for _n, rel, a, b in best.values():
        _put(out.links, a, b, rel)
    return out
