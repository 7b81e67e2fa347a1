"""A confidence that means what it says: the share of answers the selector got right in the
month's own evaluation (selector_eval), per cell of answers alike.

The confidence selector/rules.py states for a proxy answer is a product of hand-set
constants; the held-out evaluation (selector/evaluate.py) shows what it is worth. Here it is
replaced by a measured one. Open choices marked *choice*:
- A cell is (rule, whether the predicted class is `congruent`) (*choice*: measured on the
  real sample and a generated month, the rule and whether the answer says congruent
  separate right from wrong most; the stated confidence, the number of proxies and path
  lengths added little once these two are known).
- A cell's confidence is its share of right answers, shrunk towards its rule's share by
  PRIOR_ANSWERS pseudo-answers ((right + PRIOR_ANSWERS x rule share) / (answers +
  PRIOR_ANSWERS)), so a cell of few answers does not claim 0 or 1.
- A rule with fewer than MIN_ANSWERS answers in the evaluation has no calibration: its
  answers keep the stated confidence (and say so).
- Checked honestly: each evaluated answer's `calibrated_confidence` comes from the other
  sources' answers only (leave one source AS out), so the reliability of the calibration is
  measured on answers it was not fitted on.
- The reliability bins group answers by the confidence the calibration of all the rows states
  for their cell (`cell_confidence`: what advise shows for such an answer) and compare each
  bin's accuracy with the mean of its answers' held-out confidence (*choice*: binned by each
  answer's own held-out value instead, one cell is split by its sources' accuracy, since
  leaving out a source with more wrong answers raises the others' share: on a generated
  48-VP month one cell of 279 answers, 69% right and stated 0.69, became a bin at 0.69 with
  85% right and one at 0.72 with 31% right, a gap of 0.41 that no stated confidence has).
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

#: Pseudo-answers pulling a cell towards its rule's accuracy.
PRIOR_ANSWERS = 10
#: Answers a rule needs in the evaluation before its confidence is calibrated.
MIN_ANSWERS = 30
#: Thresholds of the accuracy-coverage curve (answers at or above the calibrated confidence).
CURVE = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9)

Cell = tuple[str, bool]
Fit = dict[Cell, tuple[int, int]]


def cell(rule: str, predicted_class: str) -> Cell:
    return rule, predicted_class == "congruent"


def fit(rows: Iterable[dict]) -> Fit:
    """cell -> (answers, right) over evaluation rows with an answer (correct not null)."""
    out: dict[Cell, list[int]] = {}
    for r in rows:
        if r["correct"] is None:
            continue
        c = out.setdefault(cell(r["rule"], r["predicted_class"]), [0, 0])
        c[0] += 1
        c[1] += bool(r["correct"])
    return {k: (n, k_) for k, (n, k_) in out.items()}


def rule_totals(f: Fit) -> dict[str, tuple[int, int]]:
    """rule -> (answers, right) over its cells."""
    out: dict[str, tuple[int, int]] = {}
    for (r, _), (n, k) in f.items():
        a, b = out.get(r, (0, 0))
        out[r] = (a + n, b + k)
    return out


def rule_accuracy(f: Fit | None) -> dict[str, float]:
    """rule -> the share of its answers that were right (empty without a fit)."""
    return {r: k / n for r, (n, k) in rule_totals(f or {}).items() if n}


def confidence(f: Fit | None, rule: str, predicted_class: str) -> float | None:
    """The calibrated confidence of an answer of `rule` giving `predicted_class`; None when
    the rule has fewer than MIN_ANSWERS answers in `f` (or the answer is `unknown`)."""
    if not f or predicted_class == "unknown":
        return None
    n_rule, k_rule = rule_totals(f).get(rule, (0, 0))
    if n_rule < MIN_ANSWERS:
        return None
    share = k_rule / n_rule
    n, k = f.get(cell(rule, predicted_class), (0, 0))
    return (k + PRIOR_ANSWERS * share) / (n + PRIOR_ANSWERS)


def note(f: Fit | None, rule: str, cls: str) -> list[str]:
    """What the confidence of an answer of `rule` giving `cls` is measured on, when `f` has it:
    the line advise adds to the answer's notes."""
    c = confidence(f, rule, cls)
    if c is None:
        return []
    n, k = f.get(cell(rule, cls), (0, 0))
    what = "congruent" if cls == "congruent" else "a non-congruent class"
    mine = f"{k} of {n} answers of the {rule} rule giving {what}" if n else \
        f"no answer of the {rule} rule gave {what}; the rule's share of answers"
    return [f"confidence {c:.2f}: {mine} were right in the month's evaluation (congruency evaluate; "
            "selector/calibration.py)"]


def held_out(rows: list[dict]) -> list[float | None]:
    """Each row's calibrated confidence from the answers of the other source ASes (rows'
    `vp_asn`): what the calibration says of a source it has not seen."""
    whole = fit(rows)
    by_src: dict[int, list[dict]] = {}
    for r in rows:
        by_src.setdefault(r["vp_asn"], []).append(r)
    own = {s: fit(rs) for s, rs in by_src.items()}
    out = []
    for r in rows:
        mine = own[r["vp_asn"]]
        rest = {c: (n - mine.get(c, (0, 0))[0], k - mine.get(c, (0, 0))[1]) for c, (n, k) in whole.items()}
        out.append(confidence({c: v for c, v in rest.items() if v[0]}, r["rule"], r["predicted_class"]))
    return out


def table(rows: list[dict] | pa.Table) -> pa.Table:
    """Evaluation rows as an Arrow table: the figures below are computed over whole columns,
    so a month of millions of answers never becomes millions of Python dicts."""
    if isinstance(rows, pa.Table):
        return rows
    keys = list(dict.fromkeys(k for r in rows for k in r)) or ["correct"]  # a key of any row
    return pa.table({k: [r.get(k) for r in rows] for k in keys})


def column(t: pa.Table, name: str, fill=None) -> np.ndarray:
    """A column of `t` as numpy, its nulls `fill` (a missing column is all nulls)."""
    import pyarrow.compute as pc  # not at the top: 80 ms of import that advise does not need
    c = t.column(name) if name in t.column_names else pa.nulls(t.num_rows)
    if fill is not None:  # typed first: a column of only nulls (from dicts) has no type of its own
        c = pc.fill_null(c.cast(pa.float64() if isinstance(fill, float) else pa.bool_()), fill)
    return c.to_numpy(zero_copy_only=False)


def codes(t: pa.Table, name: str) -> tuple[np.ndarray, list]:
    """A column of `t` as (each row's index into the values, the values): strings compared as
    small integers, never one Python object per row (null: -1)."""
    import pyarrow.compute as pc  # not at the top: 80 ms of import that advise does not need
    if name not in t.column_names:
        return np.full(t.num_rows, -1, dtype=np.int64), []
    enc = pc.dictionary_encode(t.column(name)).combine_chunks()
    return pc.fill_null(enc.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64), enc.dictionary.to_pylist()


def valid(t: pa.Table, name: str) -> np.ndarray:
    """Where the column `name` of `t` is not null (numpy bools)."""
    if name not in t.column_names:
        return np.zeros(t.num_rows, dtype=bool)
    return t.column(name).is_valid().to_numpy(zero_copy_only=False)


def reliability(rows: list[dict] | pa.Table, key: str = "calibrated_confidence", bins: int = 10,
                by: np.ndarray | None = None) -> list[dict]:
    """Answers per bin of `key` (or of `by`, one value per row, NaN for none: cell_confidence
    for the calibrated confidence): their mean `key` and their observed accuracy."""
    t = table(rows)
    answered = valid(t, "correct") & valid(t, key)
    x, right = column(t, key, 0.0), column(t, "correct", False).astype(bool)
    if by is not None:
        answered &= ~np.isnan(by)
        edge = np.nan_to_num(by)
    else:
        edge = x
    out = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inb = answered & (((lo <= edge) & (edge < hi)) | ((b == bins - 1) & (edge == 1.0)))
        n = int(inb.sum())
        out.append({"low": lo, "high": hi, "answers": n,
                    "mean_confidence": float(x[inb].sum()) / n if n else None,
                    "accuracy": int(right[inb].sum()) / n if n else None})
    return out


def cell_confidence(rows: list[dict] | pa.Table) -> np.ndarray:
    """Each row's confidence as the calibration fitted on all of `rows` (per `reveal`) states it
    for its cell, the value advise shows for such an answer: the bins of `reliability`. NaN
    where it states none (no answer, or too few of its rule)."""
    t = table(rows)
    rule, rules = codes(t, "rule")
    cls, classes = codes(t, "predicted_class")
    rv, _ = codes(t, "reveal")
    cong = np.array([c == "congruent" for c in classes] + [False], dtype=bool)[cls]  # -1 (null): the pad
    known = np.array([c != "unknown" for c in classes] + [False], dtype=bool)[cls]
    answered = valid(t, "correct") & known
    right = column(t, "correct", False).astype(bool)
    out = np.full(t.num_rows, np.nan)
    for r in np.unique(rv):  # one calibration per evaluation mode, as held_out_sql fits them
        mode = rv == r
        f: dict[Cell, tuple[int, int]] = {}
        for i, name in enumerate(rules):
            for c in (False, True):
                m = mode & answered & (rule == i) & (cong == c)
                if m.any():
                    f[(name, c)] = (int(m.sum()), int(right[m].sum()))
        for (name, c) in f:
            value = confidence(f, name, "congruent" if c else "disjoint")
            if value is not None:
                out[mode & known & (rule == rules.index(name)) & (cong == c)] = value
    return out


def worst_gap(bins: list[dict], min_answers: int = MIN_ANSWERS) -> float | None:
    """The largest |observed accuracy - mean confidence| over bins of at least min_answers."""
    gaps = [abs(b["accuracy"] - b["mean_confidence"]) for b in bins if b["answers"] >= min_answers]
    return max(gaps) if gaps else None


def curve(rows: list[dict] | pa.Table, key: str = "calibrated_confidence") -> list[dict]:
    """Coverage and accuracy when only answers at or above each threshold of CURVE count
    (rows without a calibrated confidence count at 0): where the rule set stands."""
    t = table(rows)
    answered, x = valid(t, "correct"), column(t, key, 0.0)
    right = column(t, "correct", False).astype(bool)
    out = []
    for th in CURVE:
        kept = answered & (x >= th)
        n = int(kept.sum())
        out.append({"threshold": th, "answered": n, "coverage": n / t.num_rows if t.num_rows else None,
                    "accuracy": int(right[kept].sum()) / n if n else None})
    return out


def cell_confidence_sql(relation: str) -> str:
    """cell_confidence in SQL: the SELECT of `relation`'s rows (a `reveal` column, nulls for
    `none`) with `cell_confidence` added (null where the calibration states none)."""
    return _fit_sql(relation, "*", "cell_confidence", leave_out=False)


def held_out_sql(con, relation: str) -> str:
    """held_out over a relation of evaluation rows, in SQL (the same figures, for a month of
    millions of rows): the SELECT of its rows with `calibrated_confidence` set, fitted per
    `reveal` (each evaluation mode calibrates its own answers) on the other source ASes' rows."""
    return _fit_sql(relation, "* EXCLUDE (calibrated_confidence)", "calibrated_confidence", leave_out=True)


def _fit_sql(relation: str, keep: str, name: str, leave_out: bool) -> str:
    """`keep` of `relation`'s rows with column `name`: each answer's confidence (`confidence`'s
    shrunk share of its cell) fitted per reveal on the rows, less its own source AS's with
    `leave_out`."""
    own = """,
        own AS (SELECT rv, vp_asn, rule, cong, count(*) AS n, count(*) FILTER (WHERE correct) AS k
                FROM a WHERE correct IS NOT NULL GROUP BY ALL),
        ownrule AS (SELECT rv, vp_asn, rule, sum(n) AS n, sum(k) AS k FROM own GROUP BY ALL)""" if leave_out else ""
    mine = """
            LEFT JOIN own o ON o.rv = a.rv AND o.vp_asn = a.vp_asn AND o.rule = a.rule AND o.cong = a.cong
            LEFT JOIN ownrule orr ON orr.rv = a.rv AND orr.vp_asn = a.vp_asn AND orr.rule = a.rule""" \
        if leave_out else ""
    less = (lambda t, c: f" - coalesce({t}.{c}, 0)") if leave_out else (lambda t, c: "")
    return f"""
        WITH a AS (SELECT {keep}, coalesce(reveal, 'none') AS rv, predicted_class = 'congruent' AS cong FROM {relation}),
        cell AS (SELECT rv, rule, cong, count(*) AS n, count(*) FILTER (WHERE correct) AS k
                 FROM a WHERE correct IS NOT NULL GROUP BY ALL),
        rul AS (SELECT rv, rule, sum(n) AS n, sum(k) AS k FROM cell GROUP BY ALL){own},
        rest AS (
            SELECT a.*, coalesce(c.n, 0){less('o', 'n')} AS cn, coalesce(c.k, 0){less('o', 'k')} AS ck,
                   coalesce(r.n, 0){less('orr', 'n')} AS rn, coalesce(r.k, 0){less('orr', 'k')} AS rk
            FROM a LEFT JOIN cell c ON c.rv = a.rv AND c.rule = a.rule AND c.cong = a.cong
            LEFT JOIN rul r ON r.rv = a.rv AND r.rule = a.rule{mine})
        SELECT * EXCLUDE (rv, cong, cn, ck, rn, rk),
               CASE WHEN predicted_class = 'unknown' OR rn < {MIN_ANSWERS} THEN NULL
                    ELSE (ck + {PRIOR_ANSWERS} * (rk / rn)) / (cn + {PRIOR_ANSWERS}) END AS {name}
        FROM rest"""
