"""The Markdown that generated doc blocks are written in (each study's ``docs.py``; ``scripts/update_docs_tables.py``
and the README scripts splice it into the pages): a table of rows, and the findings decided over training seeds as
one table. Text only: nothing here reads results."""

from __future__ import annotations

from collections.abc import Iterable


def md_table(
    rows: list[dict], columns: list[str], header: list[str] | None = None, align: int | str | None = None
) -> str:
    """A Markdown table of ``rows`` (dicts) in ``columns``; pipes and newlines in cells are escaped. ``align``: one
    ``l`` / ``r`` per column, or the number of left-aligned (text) columns before right-aligned (number) ones;
    ``None``: no alignment marks (``|---|``)."""

    def cell(value) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    if align is None:
        rule = "|" + "---|" * len(columns)
    else:
        align = align if isinstance(align, str) else "l" * align + "r" * (len(columns) - align)
        rule = "| " + " | ".join("---:" if a == "r" else "---" for a in align) + " |"
    lines = ["| " + " | ".join(header or columns) + " |", rule]
    lines += ["| " + " | ".join(cell(row.get(c, "")) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def verdict_seeds_block(verdicts: Iterable) -> str:
    """The findings of ``verdicts`` (``verdict.Verdict``) decided over training seeds, one row each: every seed's
    estimate, interval and status (``Verdict.seeds``, ``verdict.pooled_over_seeds``), the pooled ones and the
    verdict; then which pooled verdicts a seed reverses (``Verdict.reversed_by``)."""
    rows, reversed_by = [], {}
    for v in verdicts:
        if not v.seeds:
            continue
        row = {"finding": v.name}
        for k, s in v.seeds:
            row[f"seed {k}"] = f"{s.estimate:+.3f} [{s.low:+.3f}, {s.high:+.3f}] {s.status}".replace("-", "−")
        row["pooled"] = f"{v.estimate:+.3f} [{v.low:+.3f}, {v.high:+.3f}]".replace("-", "−")
        row["verdict"] = v.status
        rows.append(row)
        if v.reversed_by:
            reversed_by[v.name] = ", ".join(map(str, v.reversed_by))
    columns = list(rows[0])
    lines = md_table(rows, columns, align=len(columns)).splitlines()
    lines.append("")
    lines.append(
        "No seed's estimate reverses a pooled verdict."
        if not reversed_by
        else "Pooled verdicts a seed's estimate reverses (so inconclusive): "
        + "; ".join(f"{n} (seed {k})" for n, k in reversed_by.items())
        + "."
    )
    return "\n".join(lines)


def condition_cell(check: tuple[str, str], why: str, function: str) -> str:
    """A proxy condition's cell of the data card: ``check`` (a ``verdict.validity``: level and text) as whether it
    passed, named by the ``function`` that measured it, and its measurement without the proxy setting ``why``."""
    measured = check[1].removeprefix(f"{check[0]}: ").removeprefix(f"{why}; ").split(": ")[0]
    return f"not built; check {'failed' if check[0] == 'no' else 'passed'} (`{function}`): {measured}"


def span(values, fmt: str = ".2f") -> str:
    """``low to high`` of ``values`` (one number when they agree at ``fmt``)."""
    low, high = format(min(values), fmt), format(max(values), fmt)
    return low if low == high else f"{low} to {high}"


def percent(value: float) -> str:
    """``value`` (a share) in whole percent, the pages' way (``"37 %"``)."""
    return f"{value:.0%}".replace("%", " %")
