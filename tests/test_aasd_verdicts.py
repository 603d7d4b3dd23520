"""AASD findings A1-A5 on hand-built run frames: a case that holds, one that does not, one that is inconclusive."""

import numpy as np
import pandas as pd
import pytest

from specdec.aasd import findings as af
from specdec.verdict import FAILS, HOLDS, INCONCLUSIVE, NOT_TESTABLE, judge_all


def frame(taus: dict, n=12, noise=0.05, seed=0, targets=("tabed-target",), gammas=(3, 5), alpha_from_tau=True):
    """Runs with τ per draft = ``taus[draft]`` + noise per request (α = τ / 10, ω = τ / 2). ``noise=None``: draft
    ``k`` alternates ±0.5 (k + 1) around its τ (paired differences of mean zero, wide intervals: inconclusive)."""
    rng = np.random.default_rng(seed)
    rows = []
    for target in targets:
        for gamma in gammas:
            for i in range(n):
                for k, (draft, tau) in enumerate(taus.items()):
                    if noise is None:
                        t = tau + 0.5 * (k + 1) * (-1) ** i
                    else:
                        t = tau + noise * rng.standard_normal()
                    rows.append(
                        dict(target=target, gamma=gamma, draft=draft, row=f"r{i}", block_efficiency=t,
                             acceptance_rate=t / 10 if alpha_from_tau else 0.5, speedup=t / 2)
                    )  # fmt: skip
    return pd.DataFrame(rows)


BASE = {"FT-LLaMA": 2.0, "DT-LLaMA": 2.0, "FT-LLaVA": 1.8, "DT-LLaVA": 1.8}


@pytest.mark.parametrize(
    "aasd, expected", [(3.0, HOLDS), (1.5, FAILS), (2.0, INCONCLUSIVE)], ids=["holds", "fails", "inconclusive"]
)
def test_a1(aasd, expected):
    f = frame({"AASD": aasd, **BASE}, noise=0.05 if expected != INCONCLUSIVE else None)
    for metric in ("tau", "alpha", "omega"):
        assert af.verdict_a1(f, metric).status == expected


@pytest.mark.parametrize(
    "matched, expected", [(3.0, HOLDS), (1.5, FAILS), (2.0, INCONCLUSIVE)], ids=["holds", "fails", "inconclusive"]
)
def test_a1_matched_reads_the_budget_matched_module(matched, expected):
    """A1-matched compares the module trained at the baselines' budget with every baseline, whatever the A1 module
    does (here it loses to every baseline); the table's findings carry both where the frame has both."""
    from specdec.aasd.tables import MATCHED_DRAFT

    taus = {"AASD": 1.5, MATCHED_DRAFT: matched, **BASE}
    f = frame(taus, noise=0.05 if expected != INCONCLUSIVE else None)
    for metric in ("tau", "alpha", "omega"):
        v = af.verdict_a1(f, metric, MATCHED_DRAFT)
        assert v.name == f"A1-matched-{metric}" and v.status == expected and "baselines’ budget" in v.claim
        if expected != INCONCLUSIVE:  # (with the alternating values every comparison is wide)
            assert af.verdict_a1(f, metric).status == FAILS
    priced = af.with_priced_speedup(f.assign(new_tokens=48, target_calls=24, drafted=72, device="cpu",
                                             draft_seconds=1.0, verify_seconds=1.0))  # fmt: skip
    same = priced[priced.draft == MATCHED_DRAFT].priced_speedup.values == priced[priced.draft == "AASD"].priced_speedup
    assert same.all()  # priced at the paper's AASD cost
    names = [v.name for v in af.table1_findings(priced.assign(seconds=1.0))]
    assert names == ["A1-tau", "A1-alpha", "A1-omega", "A1-matched-tau", "A1-matched-alpha", "A1-matched-omega", "A5"]


def test_a1_needs_every_part():
    """Beating three baselines is not enough: one lost comparison makes A1 not hold."""
    f = frame({**BASE, "DT-LLaMA": 3.5, "AASD": 3.0})
    v = af.verdict_a1(f, "tau")
    assert v.status == FAILS and "DT-LLaMA" in v.detail and v.estimate < 0


@pytest.mark.parametrize(
    "on, off, noise, expected",
    [(3.0, 2.0, 0.05, HOLDS), (2.0, 3.0, 0.05, FAILS), (2.0, 2.0, None, INCONCLUSIVE)],
    ids=["holds", "fails", "inconclusive"],
)
def test_a2_a3(on, off, noise, expected):
    f = frame({"AASD": on, "AASD w/o projector": off, "AASD own cache only": off}, noise=noise)
    assert af.verdict_a2(f).status == expected
    assert af.verdict_a3(f).status == expected


@pytest.mark.parametrize(
    "no_image, no_prompt_text, noise, expected",
    [(2.5, 1.2, 0.05, HOLDS), (1.2, 2.5, 0.05, FAILS), (2.0, 2.0, None, INCONCLUSIVE)],
    ids=["holds", "fails", "inconclusive"],
)
def test_a4(no_image, no_prompt_text, noise, expected):
    f = frame({"AASD w/o image KV": no_image, "AASD w/o prompt text KV": no_prompt_text}, noise=noise)
    assert af.verdict_a4(f).status == expected


@pytest.mark.parametrize(
    "no_image, no_prompt_text, noise, image_cost, expected",
    [
        (2.5, 1.2, 0.05, 0.3, HOLDS),
        (1.2, 2.5, 0.05, 0.3, FAILS),
        (2.0, 2.0, None, 0.3, INCONCLUSIVE),
        (2.5, 1.2, 0.05, 0.0, NOT_TESTABLE),
    ],
    ids=["holds", "fails", "inconclusive", "module-ignores-image-kv"],
)
def test_a4_needs_a_module_that_reads_the_image_kv(no_image, no_prompt_text, noise, image_cost, expected):
    """Issue 44 point 10: where dropping the image KV costs the module no τ, "text KV matters more" holds by
    construction, and A4 is not testable on that proxy."""
    taus = {"AASD w/o image KV": no_image, "AASD w/o prompt text KV": no_prompt_text}
    f = frame(taus, noise=noise)
    full = frame({"AASD": 2.5 + image_cost, "AASD w/o image KV": 2.5}, noise=0.05, seed=1)
    level, why = af.a4_validity(full)
    assert level == ("partly" if image_cost else "no") and "needs a 95% lower bound above 0 in each" in why
    assert ("holds by construction" in why) == (not image_cost)
    assert judge_all([af.verdict_a4(f)], {"A4": (level, why)})[0].status == expected


@pytest.mark.parametrize(
    "llama, llava, noise, expected",
    [(2.2, 1.8, 0.05, HOLDS), (1.8, 2.2, 0.05, FAILS), (2.0, 2.0, None, INCONCLUSIVE)],
    ids=["holds", "fails", "inconclusive"],
)
def test_a5(llama, llava, noise, expected):
    f = frame({"FT-LLaMA": llama, "DT-LLaMA": llama, "FT-LLaVA": llava, "DT-LLaVA": llava}, noise=noise)
    v = af.verdict_a5(f)
    assert v.status == expected and v.n == 12


def test_no_runs_is_inconclusive():
    assert af.verdict_a3(frame({"AASD": 2.0})).status == INCONCLUSIVE


def test_a_request_drawn_twice_counts_once():
    f = frame({"AASD": 3.0, **BASE}, n=12)
    f["request"] = f.row  # every row its own request: as without the column
    assert af.paired_part(f, "AASD", "FT-LLaMA", "tau")[3] == 12
    twice = f.row == "r1"
    f.loc[twice, "request"] = "r0"  # r1 is r0 again (same prompt, same image)
    assert af.paired_part(f, "AASD", "FT-LLaMA", "tau")[3] == 11


def _counted(aasd_calls, spread=0.0, n=12):
    """48 tokens per request; every baseline needs 24 target calls (3 draft calls each), AASD ``aasd_calls`` (moved
    per request by ``spread``); measured ω says AASD is slower (as on a CPU)."""
    rows = []
    for gamma in (3, 5):
        for i in range(n):
            for draft in ("AR", "AASD", *BASE):
                calls = 48 if draft == "AR" else aasd_calls + spread * (-1) ** i if draft == "AASD" else 24
                rows.append(
                    dict(target="aasd-target-s", gamma=gamma, draft=draft, row=f"r{i}", device="cpu",
                         new_tokens=48, target_calls=calls, drafted=0 if draft == "AR" else gamma * calls,
                         block_efficiency=48 / calls, acceptance_rate=0.5, draft_seconds=0.3 * calls,
                         verify_seconds=1.0 * calls, speedup=1.0 if draft == "AR" else 0.9 if draft == "AASD" else 1.0)
                )  # fmt: skip
    return pd.DataFrame(rows)


@pytest.mark.parametrize("calls,spread,expected", [(16, 0.0, HOLDS), (30, 0.0, FAILS), (24, 6.0, INCONCLUSIVE)])
def test_a1_omega_is_decided_in_the_papers_regime(calls, spread, expected):
    f = _counted(calls, spread)
    priced = af.with_priced_speedup(f)
    c = af.paper_costs()[("LLaVA-7B", "AASD", 3)]
    row = priced[(priced.draft == "AASD") & (priced.gamma == 3)].iloc[0]
    assert row.priced_speedup == pytest.approx(48 / (row.target_calls * (1 + 3 * c)))
    assert (priced[priced.draft == "AR"].priced_speedup == 1.0).all()
    v = af.a1_omega(f)
    assert v.name == "A1-omega" and v.status == expected
    assert v.machine.status == FAILS and "Table 1" in v.regime and "cpu" in v.machine.regime


def test_findings_carry_validity_and_a4_is_judged():
    found = {v.name: v for v in af.findings_from_results("tiny")}
    assert all(v.validity in ("yes", "partly", "no") and v.validity_why for v in found.values())
    # A4's condition is measured on the committed ablation runs: the shipped module reads nothing measurable from
    # the image KV, so A4 is not testable on it (issue 44 point 10)
    assert found["A4"].status == NOT_TESTABLE and "does not read the image KV" in found["A4"].validity_why
    assert "Pooled α" in found["A4"].detail
    assert "w/o prompt text KV" in found["A4"].detail
    assert found["A1-omega"].machine is not None
    for name in ("A1-tau", "A2", "A3", "A4", "A5"):  # over the committed training seeds' runs
        assert "Training seeds (3" in found[name].detail, name


def _a5_conditions(root, gain: float, share: float, real: float, blank: float):
    """A ``<root>/tiny/proxy_conditions.csv`` with A5 rows: every LLaVA baseline cell at the given τ gain, share and
    held-out losses, the control (tabed-draft) moving τ on 40 % of requests."""
    cells = [f"{d} on {t}" for d in ("FT-LLaVA", "DT-LLaVA") for t in ("tabed-target", "aasd-target-s")]
    rows = [("share of requests where the image changes tau", af.A5_CONTROL, 0.4)]
    for cell in cells:
        rows += [
            ("tau real - blank", cell, gain),
            ("share of requests where the image changes tau", cell, share),
            ("heldout answer loss (real image)", cell, real),
            ("heldout answer loss (blank image)", cell, blank),
        ]
    (root / "tiny").mkdir(parents=True)
    frame = pd.DataFrame([dict(condition="A5", quantity=q, subset=s, value=v) for q, s, v in rows])
    frame.to_csv(root / "tiny" / "proxy_conditions.csv", index=False)


@pytest.mark.parametrize(
    "gain,share,real,blank,level",
    [
        (0.2, 0.3, 1.0, 1.2, "partly"),  # reads: τ gain, share ≥ half the control's, lower loss with real images
        (0.0, 0.0, 2.1, 2.1, "no"),  # ignores the image (the baselines before the rebuild)
        (0.2, 0.1, 1.0, 1.2, "no"),  # moves τ on too few requests
        (0.2, 0.3, 1.2, 1.2, "no"),  # held-out loss no lower with the real image
    ],
)
def test_a5_validity_follows_the_measured_conditions(tmp_path, gain, share, real, blank, level):
    _a5_conditions(tmp_path, gain, share, real, blank)
    got, why = af.a5_validity(tmp_path)
    assert got == level and why.startswith(f"{level}: ") and "proxy_conditions.csv" in why


def test_a5_validity_of_the_committed_rows_names_the_measurement():
    level, why = af.a5_validity()
    assert level in ("partly", "no") and "tabed-draft" in why


@pytest.mark.parametrize(
    "positions,ratio,real,blank,level",
    [
        (64, 64 / 7, 0.07, 1.07, "partly"),  # the rebuilt proxy: 64 positions at 9.1:1, the target reads its images
        (16, 4.0, 0.07, 0.84, "no"),  # the shipped 16-position proxy
        (64, 64 / 7, 1.07, 1.07, "no"),  # a target that ignores its images
    ],
)
def test_a2_validity_follows_the_measured_conditions(tmp_path, positions, ratio, real, blank, level):
    rows = [
        ("visual positions per image", positions),
        ("compression ratio", ratio),
        ("target heldout loss (real image)", real),
        ("target heldout loss (blank image)", blank),
    ]
    (tmp_path / "tiny").mkdir(parents=True)
    pd.DataFrame([dict(condition="A2", quantity=q, subset="t", value=v) for q, v in rows]).to_csv(
        tmp_path / "tiny" / "proxy_conditions.csv", index=False
    )
    got, why = af.a2_validity(tmp_path)
    assert got == level and "proxy_conditions.csv" in why


def _seeded(taus_by_seed: dict, noise=0.05):
    """``(stored, seeded)`` runs of the ablations table: seed 0's in ``stored`` (with plain decoding), the other
    seeds' module rows in ``seeded`` (keyed ``train_seed``), each seed's AASD and w/o-projector τ as given."""
    stored = frame({"AR": 1.0, **taus_by_seed[0]}, noise=noise).assign(table="ablations", request=lambda f: f.row)
    seeded = [
        frame(taus, noise=noise, seed=k).assign(table="ablations", request=lambda f: f.row, train_seed=k)
        for k, taus in taus_by_seed.items()
        if k
    ]
    return stored, pd.concat(seeded, ignore_index=True)


@pytest.mark.parametrize(
    "second_seed, expected",
    [(3.0, HOLDS), (1.9, INCONCLUSIVE)],
    ids=["no seed reverses", "a seed reverses"],
)
def test_a_module_finding_holds_over_seeds_only_if_no_seed_reverses_it(second_seed, expected):
    from specdec.aasd import seeds

    taus = {0: {"AASD": 3.0, "AASD w/o projector": 2.0}, 1: {"AASD": 3.1, "AASD w/o projector": 2.0},
            2: {"AASD": second_seed, "AASD w/o projector": 2.0}}  # fmt: skip
    stored, seeded = _seeded(taus)
    frames = seeds.seed_frames(stored, seeded, "ablations")
    assert sorted(frames) == [0, 1, 2] and (frames[2].draft == "AR").sum() == (stored.draft == "AR").sum()
    v = af.over_seeds(lambda f: [af.verdict_a2(f)], frames)[0]
    assert v.status == expected and "Training seeds (3" in v.detail and "pooled over training seeds" in v.claim
    pooled = seeds.pooled_frame(frames)
    assert af.paired_part(pooled, "AASD", "AASD w/o projector", "tau")[3] == 12  # a request's seeds: one unit


def _table1_seeded(dt_llava_by_seed: dict, llama=2.0, noise=0.05):
    """``(stored, seeded)`` Table 1 runs: seed 0's every draft (with plain decoding) in ``stored``; seeds 1 and 2
    move the module and every baseline (``seeds.SEEDED_DRAFTS``), DT-LLaVA's τ as given per seed."""
    taus = {k: {**BASE, "AASD": 3.0, "DT-LLaMA": llama, "DT-LLaVA": t} for k, t in dt_llava_by_seed.items()}

    def counted(f):  # the counts A1-omega prices: 48 tokens in 48 / τ target calls
        calls = 48 / f.block_efficiency
        return f.assign(table="table1", request=f.row, device="cpu", new_tokens=48, target_calls=calls,
                        drafted=f.gamma * calls, draft_seconds=0.3 * calls, verify_seconds=calls)  # fmt: skip

    stored = counted(frame({"AR": 1.0, **taus[0]}, noise=noise))
    seeded = [counted(frame(t, noise=noise, seed=k)).assign(train_seed=k) for k, t in taus.items() if k]
    return stored, pd.concat(seeded, ignore_index=True)


@pytest.mark.parametrize(
    "dt_llava, expected",
    [({0: 1.8, 1: 1.7, 2: 1.8}, HOLDS), ({0: 1.8, 1: 1.7, 2: 2.4}, INCONCLUSIVE), ({0: 2.4, 1: 2.5, 2: 2.6}, FAILS)],
    ids=["every seed holds", "a seed reverses", "every seed fails"],
)
def test_a5_moves_with_the_distilled_baselines_seeds(dt_llava, expected):
    """A seed replaces seed 0's module and baseline rows with its own, and A5 holds over the seeds only where no
    seed's DT-LLaVA reverses it (DT-LLaMA's τ is 2.0 in every seed)."""
    from specdec.aasd import seeds

    stored, seeded = _table1_seeded(dt_llava)
    frames = seeds.seed_frames(stored, seeded, "table1")
    assert sorted(frames) == [0, 1, 2]
    for k, f in frames.items():
        assert (f.draft == "FT-LLaVA").sum() == (stored.draft == "FT-LLaVA").sum()
        assert f[f.draft == "DT-LLaVA"].block_efficiency.mean() == pytest.approx(dt_llava[k], abs=0.05)
        same = f[f.draft == "FT-LLaVA"].block_efficiency.values == stored[stored.draft == "FT-LLaVA"].block_efficiency
        assert same.all() == (k == 0)  # seed k's own FT-LLaVA rows (other noise), not seed 0's
    a5 = {v.name: v for v in af.table1_over_seeds(frames)}["A5"]
    assert a5.status == expected and "pooled over training seeds" in a5.claim
    assert "Training seeds (3" in a5.detail


def test_a_seed_without_its_baseline_rows_is_left_out():
    """Rows of the module alone for a seed (a recompute from nothing without that seed's baselines decodes only the
    module) are not read with seed 0's baselines in their place: that seed is left out of Table 1."""
    from specdec.aasd import seeds

    stored, seeded = _table1_seeded({0: 1.8, 1: 1.7, 2: 1.6})
    partial = seeded[~((seeded.train_seed == 1) & seeded.draft.isin(list(BASE)))]
    frames = seeds.seed_frames(stored, partial, "table1")
    assert sorted(frames) == [0, 2] and len(frames[2]) == len(stored)


def test_a_missing_baseline_seed_names_the_command_that_trains_it(tmp_path, monkeypatch):
    from specdec import zoo
    from specdec.aasd import experiments, seeds

    monkeypatch.setattr(zoo, "SEED_MODELS", tmp_path)
    assert seeds.baselines_here("tabed-target", 1) == ()
    with pytest.raises(FileNotFoundError, match="train baseline-seeds --train-seeds 1"):
        experiments.draft_source("DT-LLaVA", "tabed-target", "tiny", train_seed=1)
    for name in ("aasd-dt-llava-tabed-target", "aasd-ft-llava"):  # a DT baseline is a target's, an FT one is not
        (tmp_path / "seed1" / name).mkdir(parents=True)
        (tmp_path / "seed1" / name / "config.json").write_text("{}")
    for draft, name in (("DT-LLaVA", "aasd-dt-llava-tabed-target"), ("FT-LLaVA", "aasd-ft-llava")):
        assert experiments.draft_source(draft, "tabed-target", "tiny", train_seed=1) == (
            tmp_path / "seed1" / name,
            None,
        )
    assert seeds.baselines_here("tabed-target", 1) == ("FT-LLaVA", "DT-LLaVA")
    assert experiments.draft_source("FT-LLaVA", "tabed-target", "tiny")[0] == "aasd-ft-llava"  # seed 0: shipped


def test_the_baseline_seed_summary_keeps_the_rows_of_seeds_not_here(tmp_path, monkeypatch):
    """On a machine without the baseline seeds' weights (gitignored) the summary keeps the committed rows of seeds
    1 and 2 and reads seed 0's from the shipped training logs: every baseline (a DT one per target) in every seed,
    each seed's model seed moved by 1000 k."""
    import shutil

    from specdec import zoo
    from specdec.aasd import seeds, zoo_specs

    monkeypatch.setattr(zoo, "SEED_MODELS", tmp_path / "none")
    path = tmp_path / "summary.csv"
    shutil.copy(seeds.BASELINE_SUMMARY, path)
    committed = pd.read_csv(path, keep_default_na=False)
    again = seeds.baseline_summary(path)
    assert len(again) == len(committed) == 3 * (2 + 2 * len(zoo_specs.TARGETS))
    key = ["model", "target", "train_seed"]
    pd.testing.assert_frame_equal(again.sort_values(key, ignore_index=True),
                                  committed.sort_values(key, ignore_index=True), check_dtype=False)  # fmt: skip
    for _, rows in committed.groupby(["model", "target"]):
        assert (rows.seed - rows.seed[rows.train_seed == 0].iloc[0]).tolist() == [1000 * k for k in rows.train_seed]
