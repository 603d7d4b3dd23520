"""The real profile's generated blocks (``update_docs_tables.BLOCKS``):

- ``data/DATA_CARD.md``, block ``card-real-draft``: the real draft's data and held-out loss curve, from its committed
  ``data/models-real/<name>/training.json``;
- ``docs/reference/profiles.md``, block ``real-speed``: the last measured run of ``results/real/real_speed.csv``
  (``python -m specdec.harness.real_speed``), as ``real_speed.summary`` reads it;
- ``docs/reference/agreement.md``, block ``agreement``: notebook 01's engine findings on the tiny and the real
  profile side by side (``engine_findings.findings_from_results`` on each profile's committed rows, the board's
  function), and whether they agree.
"""

from __future__ import annotations

import json

from generated_blocks import md_table

from specdec import realmodel, results, tabledb
from specdec.zoo import real_draft


def real_draft_block() -> str:
    s = json.loads((realmodel.REAL_MODELS / real_draft.DRAFT / "training.json").read_text())
    size = sum(f.stat().st_size for f in (realmodel.REAL_MODELS / real_draft.DRAFT).iterdir())
    recipe = s["recipe"]
    rows = [dict(step=r["step"], seconds=r.get("seconds", 0), train_loss=r.get("train_loss", ""),
                 heldout_loss=r["heldout_loss"], heldout_top1=r["heldout_top1"])
            for r in s["curve"] if "heldout_loss" in r]  # fmt: skip
    head = (
        f"Generated: a budget of {recipe['n_train']} train prompts x {recipe['max_new_tokens']} answer tokens "
        f"({recipe['n_train'] * recipe['max_new_tokens']:,}; {s['train_answer_tokens']:,} before the end-of-turn "
        f"tokens cut them), {s['heldout_prompts']} held-out prompts ({s['heldout_answer_tokens']:,} answer tokens). "
        f"Trained {recipe['steps']} steps in {s['seconds'] / 60:.1f} min on {s['threads']} thread(s) of the shared "
        f"CPU; stored {size / 2**20:.1f} MiB. Held-out answer loss (nats per token, over the draft's K token ids) "
        "and top-1 agreement with the target's greedy token (over all tokens):"
    )
    curve = s["coverage_curve"]
    marks = [k for k in map(int, curve) if k in (1024, 2048, 4096, 8192, 16384) or k == s["draft_vocab"]]
    cover = [dict(K=k, coverage=f"{curve[str(k)]:.2%}") for k in sorted(set(marks))]
    vocab = (
        f"Draft vocabulary: share of the train answer tokens covered by the K most frequent (the rule: the smallest "
        f"multiple of {recipe['vocab_step']} reaching {recipe['coverage']:.0%}). Chosen **K = {s['draft_vocab']:,}** "
        f"of {recipe['vocab_size']:,}; it covers {s['heldout_coverage']:.2%} of the held-out answer tokens."
    )
    return (
        head
        + "\n\n"
        + md_table(rows, ["step", "seconds", "train_loss", "heldout_loss", "heldout_top1"])
        + "\n\n"
        + vocab
        + "\n\n"
        + md_table(cover, ["K", "coverage"])
    )


def real_speed_block() -> str:
    from specdec.harness import real_speed

    path = results.COMMITTED / "real" / f"{real_speed.TABLE}.csv"
    if not path.exists():
        return "No measured rows yet: `python -m specdec.harness.real_speed`."
    import pandas as pd

    frame = real_speed.latest(pd.read_csv(path, dtype=results.DIGEST_DTYPES))
    s = real_speed.summary(frame)
    first = frame.iloc[0]
    device, note_of_run = real_speed.run_note(tabledb.provenance_path(path), first.run)
    rows = [
        dict(comparison="SD / plain decoding", measured=f"{s['sd_over_plain']:.2f}x", target="≥ 1.5x",
             detail=f"{s['sd_tokens_per_s']:.1f} vs {s['plain_tokens_per_s']:.1f} tok/s; same greedy text: "
                    f"{s['same_text_sd']}; τ {s['tau']:.2f}, α {s['alpha']:.3f}"),
        dict(comparison="engine / HF assisted generation", measured=f"{s['sd_over_hf_assisted']:.2f}x",
             target="≥ 1.5x", detail=f"{s['hf_assisted_tokens_per_s']:.1f} tok/s for HF; same text: "
                                     f"{s['same_text_hf']}"),
        dict(comparison=f"batched SD, B = {s['batch_size']} / B = 1", measured=f"{s['batched_bn_over_b1']:.2f}x",
             target="≥ 3x", detail=f"{s['batched_bn_tokens_per_s']:.1f} vs {s['batched_b1_tokens_per_s']:.1f} tok/s; "
                                   f"same text: {s['same_text_batched']}"),
        dict(comparison="c = draft step / target step", measured=f"{s['c_forward']:.3f}", target="papers 0.06–0.1",
             detail=f"forward at 128 tokens of context; in the engine's loop {s['c_engine']:.3f}"),
        dict(comparison="v = verification (γ + 1 tokens) / target step", measured=f"{s['verify_cost']:.2f}",
             target="Eq. (1): 1", detail=f"α that 1.5x needs at this c and these v(k), best γ: "
                                         f"{s['alpha_for_target']:.2f} (held-out top-1 of the draft: see above)"),
    ]  # fmt: skip
    note = (
        f"γ = {first.gamma} (chosen before the timed rounds: the largest expected speedup τ / (γ c + v(γ + 1)) at "
        f"the draft's held-out α and the c and v measured then), {int(first.max_new_tokens)} new tokens, greedy, "
        f"{int(first.threads)} thread, medians over {frame.repeat.nunique()} interleaved rounds after a warm-up; "
        f"weights `{first.weights}`, run {first.run}; {note_of_run} (device {device}; provenance: "
        "`results/real/real_speed.provenance.jsonl`)."
    )
    return md_table(rows, ["comparison", "measured", "target", "detail"]) + "\n\n" + note


def agreement_rows() -> list[dict]:
    """finding | tiny verdict | real verdict | agree?, for notebook 01's engine findings on each profile's committed
    rows; "engine speed" twice: as decided (the rows in the papers' cost regime decide, the same for both profiles)
    and as measured on the profile's own pair on this CPU (the verdict's ``machine`` part)."""
    from specdec import engine_findings
    from specdec.harness.profile import Profile

    found = {
        name: {v.name: v for v in engine_findings.findings_from_results(
            name, root=results.COMMITTED, strict=Profile.load(name).strict)}
        for name in ("tiny", "real")
    }  # fmt: skip

    def text(v) -> str:
        return f"{v.status} ({v.estimate:.3f} [{v.low:.3f}, {v.high:.3f}], n {v.n})"

    rows = []
    for name in found["tiny"]:
        tiny, real = found["tiny"][name], found["real"].get(name)
        if real is None:
            continue
        pairs = [(name, tiny, real)]
        if tiny.machine is not None and real.machine is not None:
            pairs.append((f"{name}, measured on the profile's pair (this CPU)", tiny.machine, real.machine))
        for label, a, b in pairs:
            rows.append({"finding": label, "tiny": text(a), "real": text(b), "agree?": "yes" if a.status == b.status
                         else "no"})  # fmt: skip
    return rows


def agreement_block() -> str:
    rows = agreement_rows()
    if not rows:
        return "No committed engine rows of both profiles yet: notebook 01 with `profile=real`."
    return md_table(rows, ["finding", "tiny", "real", "agree?"])
