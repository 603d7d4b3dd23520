"""The CoS zoo's training seeds (``specdec.cos.seeds``): the seeds' cells are the notebooks' defaults, a seed's
models come from its own folder or fail with the command that trains them, and the findings are read per seed."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from specdec import zoo
from specdec.cos import experiments, findings, seeds, train
from specdec.harness.profile import Profile
from specdec.hub import ModelNotAvailableError
from specdec.zoo import models

ROOT = Path(__file__).resolve().parent.parent


def notebook_defaults(name: str) -> dict:
    """The values of the parameters cell of ``notebooks/<name>``."""
    nb = json.loads((ROOT / "notebooks" / name).read_text())
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    namespace: dict = {}
    exec("".join(cell["source"]), namespace)
    return namespace


@pytest.mark.parametrize(
    "notebook, cells, left_out",
    [
        ("20_cos_main.ipynb", seeds.MAIN, set()),
        ("21_cos_sweeps.ipynb", seeds.SWEEPS, {"tradeoff_lams", "tradeoff_tasks"}),
        ("22_cos_theory.ipynb", seeds.THEORY, {"lams"}),
    ],
)
def test_the_seeds_cells_are_the_notebooks_defaults(notebook, cells, left_out):
    """A seed decodes what the notebook decodes at its defaults, but the runs no seeded finding reads (left out)."""
    defaults = notebook_defaults(notebook)
    for name, value in cells.items():
        if name in left_out:
            assert not value, name  # left out: no cells
        else:
            assert value == defaults[name], name


def test_a_training_seed_moves_every_model_seed_by_1000():
    for name in train.COS_ZOO:
        assert train.model_seed(name, 2) == train.model_seed(name) + 2000
    with pytest.raises(SystemExit):
        train.main(["train", "--train-seed", "-1"])


def test_a_missing_seed_names_the_command_that_trains_it(tmp_path, monkeypatch):
    monkeypatch.setattr(zoo, "SEED_MODELS", tmp_path)
    with pytest.raises(ModelNotAvailableError, match="--train-seed 7"):
        models.load_collab("tiny", "we", train_seed=7)
    assert models.seed_weights("cos-general", 0, models.COS_SEED_COMMAND) == "cos-general"  # seed 0: the shipped model
    with pytest.raises(ValueError, match="seed k > 0"):
        seeds.seed_suites("tiny", 0)


def test_seed_models_are_loaded_from_their_own_folder(tmp_path, monkeypatch):
    """Seed k's set is read from ``SEED_MODELS/seed<k>``, and its rows are keyed apart from seed 0's (``weights``
    names the folders the models came from)."""
    monkeypatch.setattr(zoo, "SEED_MODELS", tmp_path)
    shipped = experiments.ModelSet.load(Profile.load("tiny"), "we")
    for name, model in zip(Profile.load("tiny").spec["collab"]["we"]["models"], shipped.models):
        model.save_pretrained(tmp_path / "seed3" / name)
        shipped.tokenizer.save_pretrained(tmp_path / "seed3" / name)
    seeded = experiments.ModelSet.load(Profile.load("tiny"), "we", 3)
    assert seeded.train_seed == 3 and seeded.kind == shipped.kind
    assert seeded.weights != shipped.weights
    assert all(str(m.name_or_path).startswith(str(tmp_path / "seed3")) for m in seeded.models)


def _table(seeds_present) -> pd.DataFrame:
    return pd.DataFrame({"set": "we", "train_seed": list(seeds_present), "x": range(len(seeds_present))})


def test_seed_frames_reads_only_the_seeds_with_every_table(tmp_path):
    assert seeds.seed_frames("tiny", tmp_path) == {}  # no tables: no seeds
    (tmp_path / "tiny").mkdir()
    for table, present in zip(seeds.TABLES.values(), ([1, 2], [1, 2], [1])):
        _table(present).to_csv(tmp_path / "tiny" / f"{table}.csv", index=False)
    frames = seeds.seed_frames("tiny", tmp_path)
    assert list(frames) == [1] and set(frames[1]) == set(seeds.TABLES)
    assert "train_seed" not in frames[1]["cos_main"]


def test_every_seeded_finding_has_its_own_rule():
    """Each finding read over seeds (C1, C4) is decided per seed by its own threshold (``SEED_RULES``), so a seed
    that reverses it is told by the finding's rule, not by a default 0."""
    names = {v.name for v in findings.findings_from_results("tiny", root=ROOT / "results")}
    seeded = {n for n in names if n.startswith(("C1", "C4")) and n != "C1-GPU"}
    assert seeded == set(findings.SEED_RULES)


def test_at_defaults_reads_the_settings_the_seeds_ran():
    """A notebook shows its seeds only at the defaults they ran; a setting the seeds leave out (an empty list) may
    differ."""
    defaults = notebook_defaults("21_cos_sweeps.ipynb")
    assert seeds.at_defaults(defaults, seeds.SWEEPS)
    assert seeds.at_defaults({**defaults, "tradeoff_lams": [0.5]}, seeds.SWEEPS)  # the seeds ran no trade-off
    assert not seeds.at_defaults({**defaults, "n_prompts": 4}, seeds.SWEEPS)


@pytest.mark.parametrize("family, table", [("C1", "cos_main"), ("C4-APF", "cos_theory")])
def test_a_notebooks_seed_table_is_what_the_scoreboard_decides(family, table):
    """Notebooks 20-22's seed tables (``findings.seed_table`` on the notebook's seed-0 rows and the committed seeds)
    give the scoreboard's pooled estimates and verdicts: one reading of each finding (``findings.SEEDED``)."""
    board = {v.name: v for v in findings.findings_from_results("tiny", root=ROOT / "results")}
    rows = pd.read_csv(ROOT / "results" / "tiny" / f"{table}.csv")
    by_seed = findings.seed_table([family], rows, "tiny")
    assert list(by_seed.columns) == ["finding", "seed 0", "seed 1", "seed 2", "pooled", "verdict"]
    for r in by_seed.itertuples():
        v = board[r.finding]
        assert (r.verdict, r.pooled) == (v.status, f"{v.estimate:.3f} [{v.low:.3f}, {v.high:.3f}]"), r.finding
    assert findings.seed_table([family], rows, "paper").empty  # a profile without seeds: no table
