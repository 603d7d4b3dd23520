"""AASD A3's measured condition (issue 44, ``aasd.conditions``) on hand-built frames and module configs: with both
modules trained alike A3 holds, does not hold or is inconclusive; a planted budget confound reads "not testable on
this proxy". And the paper profile's reading: no tiny proxy's sentence on its rows."""

import json

import pytest
from test_aasd_verdicts import frame

from specdec.aasd import conditions
from specdec.aasd import findings as af
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE, NOT_TESTABLE, judge_all

TARGET = "aasd-target-p8"


def _module(root, name: str, steps: int, batch: int = 16, lr: float = 0.002) -> None:
    (root / name).mkdir(parents=True)
    config = dict(module={}, training=dict(steps=steps, batch_size=batch, lr=lr))
    (root / name / "config.json").write_text(json.dumps(config))


def _zoo(root, own_steps: int = 100, seeds=(0, 1, 2), seed_own_steps: int | None = None):
    for k in seeds:
        tail = f"-seed{k}" if k else ""
        _module(root, f"aasd-module-{TARGET}{tail}", 100)
        _module(root, f"aasd-module-{TARGET}-own{tail}", own_steps if not k else (seed_own_steps or own_steps))
    return conditions.budgets(TARGET, seeds, root)


@pytest.mark.parametrize(
    "on, off, noise, own_steps, expected",
    [
        (3.0, 2.0, 0.05, 100, HOLDS),
        (2.0, 3.0, 0.05, 100, FAILS),
        (2.0, 2.0, None, 100, INCONCLUSIVE),
        (3.0, 2.0, 0.05, 25, NOT_TESTABLE),  # the own-cache module trained on a quarter of the rows
    ],
    ids=["holds", "fails", "inconclusive", "budget-confound"],
)
def test_a3_needs_modules_trained_alike(tmp_path, on, off, noise, own_steps, expected):
    condition = conditions.a3_validity(_zoo(tmp_path, own_steps), "tiny")
    assert condition[0] == ("partly" if own_steps == 100 else "no") and f"{own_steps * 16:,} rows" in condition[1]
    v = af.verdict_a3(frame({"AASD": on, "AASD own cache only": off}, noise=noise))
    assert judge_all([v], {"A3": condition})[0].status == expected


def test_a3_reads_every_training_seed(tmp_path):
    """Seed 0's modules alike, seed 2's not: the condition fails, naming the seed."""
    found = _zoo(tmp_path, 100, seed_own_steps=50)
    level, why = conditions.a3_validity(found, "tiny")
    assert level == "no" and "seed 2: 1,600 vs 800 rows" in why and sorted(found) == [0, 1, 2]


def test_a3_without_configs_is_not_measured(tmp_path):
    assert conditions.budgets(TARGET, (0,), tmp_path) == {}
    level, why = conditions.a3_validity({}, "tiny")
    assert level == "partly" and conditions.NOT_MEASURED in why


def test_the_board_measures_a3_on_the_shipped_modules():
    (a3,) = af.board_reading([af.verdict_a3(frame({"AASD": 3.0, "AASD own cache only": 2.0}))], "tiny")
    assert a3.validity == "partly" and "seed 2:" in a3.validity_why and "needs the same rows" in a3.validity_why


def test_the_paper_profile_prints_no_tiny_proxy_text():
    """Issue 44: AASD's ``board_reading`` on the paper profile says its conditions are not measured there."""
    verdicts = [af.verdict_a3(frame({"AASD": 3.0, "AASD own cache only": 2.0}))]
    verdicts.append(af.verdict_a2(frame({"AASD": 3.0, "AASD w/o projector": 2.0})))
    for v in af.board_reading(verdicts, "paper"):
        assert "tiny" not in v.validity_why.lower() and conditions.NOT_MEASURED in v.validity_why, v.name
        assert v.status == HOLDS
