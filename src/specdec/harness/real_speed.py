"""Speed of the real pair on this CPU, measured: ``python -m specdec.harness.real_speed``.

One thread, warm-up, interleaved rounds (the methods alternate inside a round, the order reversed every other round),
medians over rounds. Three comparisons on the real profile's default pair (SmolLM2-135M-Instruct and the draft
trained for it), greedy, on held-out chat prompts of the draft's data (``zoo.real_draft.prompt_texts``):

- ``plain`` (this engine, no draft) vs ``sd`` (this engine with the draft): the same greedy text asserted; τ, α;
- ``sd`` vs ``hf_assisted`` (transformers' assisted generation with the same draft and γ): the same text;
- batched SD (``batching.generate_batch``) at B = 8 vs B = 1 (``speed.batched_throughput``).

``c``: the draft's forward time over the target's (one new token after a 128-token context, ``bench.latency_ratio``)
and the engine's own (the SD run's draft seconds per draft call over plain decoding's seconds per target call).
Rows go to ``results/real/real_speed.csv`` (``ResultStore``, with provenance); ``summary`` reads them back.
Every row carries its run's id (column ``run``, a key column: the UTC time the run started, also on its provenance
line), so a re-measurement with the same settings (on a quieter machine, say) is stored beside the earlier one
instead of being skipped as done; ``latest`` reads one run. Rows stored before the column existed get the id of the
provenance line that wrote them (``migrate``, done on opening the table).

γ (``--gamma auto``, the default) is chosen before the timed rounds: the γ in 1..8 that maximises the expected
speedup ``τ(α, γ) / (γ c + v(γ + 1))`` at the draft's held-out top-1 agreement with the target's greedy tokens (α,
from its ``training.json``), the forward ``c`` and the verify costs ``v(k)`` (one target call of k new tokens over
one of 1 token: Eq. (1) takes ``v = 1``; a 1-thread CPU does not give that) measured on this machine just before;
they go to the provenance, and ``v(k)`` to the rows (``measure = verify``).
"""

from __future__ import annotations

import argparse
import csv
import datetime
import io
import json
import os
import pathlib
import statistics
from typing import Any

import torch

from specdec import bench, costs, engine, peer, speed
from specdec.harness.profile import Profile
from specdec.zoo import models

KEY = ["run", "weights", "measure", "method", "batch_size", "gamma", "n_prompts", "max_new_tokens", "threads", "repeat"]
TABLE = "real_speed"
SHARED_NOTE = "the machine's 2 CPU cores were shared with other engineers' jobs while this ran"  # runs before loads


def load_note(before: float, after: float) -> str:
    """How busy the machine was around a run, measured (the 1-minute load average before and after it): a run
    alone on one thread reads about 1; above the core count the ratios mix in other jobs."""
    cores = os.cpu_count()
    return f"1-minute load average {before:.2f} before and {after:.2f} after the run on {cores} CPU cores"


def provenance_lines(path) -> list[dict]:
    """The lines of the provenance file ``path``, parsed, in file order (none where it does not exist)."""
    path = pathlib.Path(path)
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def run_note(path, run: str | None = None) -> tuple[str, str]:
    """``(device_name, note)`` of run ``run`` (None: the latest) in the provenance file ``path`` (``SHARED_NOTE``
    where it has none: the runs before the load was recorded)."""
    lines = [p for p in provenance_lines(path) if run is None or p.get("run") == run]
    last = lines[-1] if lines else {}
    return last.get("device_name", bench.describe_device("cpu")), last.get("note", SHARED_NOTE)


def run_id(when: datetime.datetime | None = None) -> str:
    """A run's id: the UTC time it started, to the second (ISO 8601, so ids sort as times)."""
    when = when or datetime.datetime.now(datetime.UTC)
    return when.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def migrate(csv_path) -> bool:
    """Give the rows of a table written before the ``run`` column (``csv_path``, with its provenance sidecar) the
    id of the run that wrote them: the time of the provenance line naming their key (``run_id``), written into the
    CSV as the first column and onto each provenance line (``run``, and ``run`` first in its keys). True where it
    changed the files; a table that has the column, or none, is left alone."""
    from specdec import csvtext, tabledb

    csv_path = pathlib.Path(csv_path)
    if not csv_path.exists():
        return False
    header, records = csvtext.parse_csv(csv_path.read_bytes())
    if not header or "run" in header:
        return False
    prov_path = tabledb.provenance_path(csv_path)
    lines = provenance_lines(prov_path)
    run_of: dict[tuple, str] = {}
    for line in lines:
        line["run"] = run_id(datetime.datetime.fromisoformat(line["written"]))
        run_of.update({tuple(k): line["run"] for k in line["keys"]})
        line["keys"] = [[line["run"], *k] for k in line["keys"]]
        line["key_columns"] = ["run", *line["key_columns"]]
    old_key = [k for k in KEY if k != "run"]
    rows = [dict(zip(header, r)) for r in records]
    missing = [r for r in rows if tuple(r[k] for k in old_key) not in run_of]
    if missing:
        raise ValueError(f"{csv_path}: {len(missing)} rows have no provenance line naming their key, e.g. {missing[0]}")
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=["run", *header], lineterminator="\n")
    writer.writeheader()
    writer.writerows({"run": run_of[tuple(r[k] for k in old_key)], **r} for r in rows)
    csv_path.write_text(text.getvalue())
    prov_path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return True


def store():
    """The real profile's ``real_speed`` table (no base layer: every run is measured, none is taken as done from
    the committed rows), migrated to the ``run`` column first where it predates it."""
    profile = Profile.load("real")
    migrate(profile.results_dir / f"{TABLE}.csv")  # before opening: a table is never opened with another key
    return profile.store(TABLE, KEY, base=None)


def prompts(tokenizer, n: int) -> list[torch.Tensor]:
    """``n`` held-out chat prompts (token ids) of the real draft's data, shortest first."""
    from specdec.zoo import real_draft

    rows = real_draft.prompt_texts("heldout", real_draft.RECIPE["n_heldout"])
    ids = [real_draft.chat_ids(tokenizer, r["text"], real_draft.RECIPE["max_prompt_tokens"]) for r in rows]
    return [torch.tensor(i) for i in sorted(ids, key=len)[:: max(1, len(ids) // n)][:n]]


def single_rounds(target, draft, ids, *, gamma: int, max_new_tokens: int, eos: int, repeats: int) -> list[dict]:
    """Rows per round and method (``plain`` / ``sd`` / ``hf_assisted``) over all prompts: seconds, tokens, τ, α,
    draft seconds per draft call, target-decode seconds per call, and whether each text equals plain's."""

    def ours(drafter):
        def run(p):
            r = engine.generate(target, p, drafter, gamma=gamma, max_new_tokens=max_new_tokens, eos_token_id=eos)
            return r.output_ids, r.total_time, r.target_calls, r.draft_time, r.draft_calls, r

        return run

    def hf(p):
        r = peer.hf_assisted(target, draft, p, gamma=gamma, max_new_tokens=max_new_tokens, eos_token_id=eos)
        return r["output_ids"], r["total_time"], r["target_calls"], 0.0, 0, None

    methods = {"plain": ours(None), "sd": ours(draft), "hf_assisted": hf}
    for p in ids[:1]:  # warm-up: every method once, not recorded
        for run in methods.values():
            run(p)
    rows = []
    for rep in range(repeats):
        acc: dict[str, dict[str, Any]] = {
            m: dict(seconds=0.0, new_tokens=0, calls=0, draft_s=0.0, draft_calls=0, outs=[], acc=0, drafted=0)
            for m in methods
        }
        for p in ids:
            for m in list(methods) if rep % 2 == 0 else list(methods)[::-1]:
                out, secs, calls, dsec, dcalls, res = methods[m](p)
                a = acc[m]
                a["seconds"] += secs
                a["new_tokens"] += len(out)
                a["calls"] += calls
                a["draft_s"] += dsec
                a["draft_calls"] += dcalls
                a["outs"].append(out)
                if res is not None and res.drafted_per_block:
                    a["acc"] += sum(res.accepted_per_block)
                    a["drafted"] += sum(res.drafted_per_block)
        for m, a in acc.items():
            rows.append(
                dict(
                    measure="single",
                    method=m,
                    batch_size=1,
                    repeat=rep,
                    seconds=a["seconds"],
                    new_tokens=a["new_tokens"],
                    tokens_per_second=a["new_tokens"] / a["seconds"],
                    block_efficiency=a["new_tokens"] / a["calls"],
                    acceptance_rate=a["acc"] / a["drafted"] if a["drafted"] else float("nan"),
                    draft_step_s=a["draft_s"] / a["draft_calls"] if a["draft_calls"] else float("nan"),
                    target_step_s=a["seconds"] / a["calls"] if m == "plain" else float("nan"),
                    same_text=a["outs"] == acc["plain"]["outs"],
                )
            )
    return rows


def choose_gamma(alpha: float, c: float, gammas=range(1, 9), verify: dict[int, float] | None = None) -> int:
    """The γ of ``gammas`` with the largest expected speedup ``τ(α, γ) / (γ c + v(γ + 1))`` (i.i.d. acceptance;
    ``verify``: ``{k: v(k)}``, a k-token target call over a 1-token one; None: ``v = 1``, Eq. (1) as in ``costs``)."""

    def expected(g: int) -> float:
        tau = costs.expected_block_efficiency(alpha, g)
        return tau / (g * c + (verify[g + 1] if verify else 1.0))

    return max(gammas, key=expected)


def verify_costs(target, ks=range(1, 10), context: int = 128, repeats: int = 10) -> dict[int, float]:
    """``{k: v(k)}``: one target call of ``k`` new tokens after ``context`` over one of 1 token (B = 1, medians of
    ``bench.forward_latency``; the 1-token call measured beside each k, so a load change moves both)."""
    out = {}
    for k in ks:
        one = bench.forward_latency(target, 1, context, 1, repeats)
        out[k] = bench.forward_latency(target, 1, context, k, repeats) / one
    return out


def draft_alpha() -> float:
    """The real draft's held-out top-1 agreement with the target's greedy tokens (its last logged row)."""
    import json

    from specdec import realmodel
    from specdec.zoo import real_draft

    summary = json.loads((realmodel.REAL_MODELS / real_draft.DRAFT / "training.json").read_text())
    return float(summary["curve"][-1]["heldout_top1"])


def measure(n_prompts: int = 4, max_new_tokens: int = 64, gamma: int | None = None, repeats: int = 3, batch: int = 8):
    """Measure the three comparisons and ``c`` on the real default pair; append the rows to ``results/real``
    (``gamma`` None: ``choose_gamma`` at the draft's α and the forward ``c`` measured first)."""
    profile = Profile.load("real")
    profile.use_threads()
    run = run_id()
    load_before = os.getloadavg()[0]
    target, draft, tokenizer = profile.load_pair()
    choice = {}
    verify = verify_costs(target)
    if gamma is None:
        alpha, c = draft_alpha(), bench.latency_ratio(target, draft, context=128, repeats=10)
        gamma = choose_gamma(alpha, c, verify=verify)
        choice = dict(
            gamma_rule="argmax tau / (gamma c + v(gamma + 1))",
            gamma_alpha=alpha,
            gamma_c=round(c, 4),
            gamma_verify={k: round(v, 3) for k, v in verify.items()},
            gamma=gamma,
        )
        print(f"gamma {gamma}: alpha (held-out top-1) {alpha:.3f}, c (forward, measured now) {c:.3f}", flush=True)
    print("verify cost v(k): " + ", ".join(f"{k}: {v:.2f}" for k, v in verify.items()), flush=True)
    eos = tokenizer.eos_token_id
    ids = prompts(tokenizer, max(n_prompts, batch))
    common: dict[str, Any] = dict(
        run=run,
        weights=models.pair_weights("real"),
        gamma=gamma,
        max_new_tokens=max_new_tokens,
        threads=torch.get_num_threads(),
    )
    singles = single_rounds(
        target, draft, ids[:n_prompts], gamma=gamma, max_new_tokens=max_new_tokens, eos=eos, repeats=repeats
    )
    rows = [dict(n_prompts=n_prompts, **r) for r in singles]
    speed.batched_throughput(
        target,
        draft,
        ids[:batch],
        (1, batch),
        gamma=gamma,
        max_new_tokens=8,
        repeats=1,
        eos_token_id=[eos],
        with_generate=False,
    )  # warm-up
    for r in speed.batched_throughput(
        target,
        draft,
        ids[:batch],
        (1, batch),
        gamma=gamma,
        max_new_tokens=max_new_tokens,
        repeats=repeats,
        eos_token_id=[eos],
        with_generate=False,
    ):
        rows.append(
            dict(
                measure="batched",
                method="sd_batched",
                batch_size=r["batch_size"],
                repeat=r["repeat"],
                n_prompts=batch,
                seconds=r["seconds"],
                new_tokens=r["new_tokens"],
                tokens_per_second=r["tokens_per_second"],
                same_text=r["same_text"],
            )
        )
    for rep in range(repeats):
        rows.append(
            dict(
                measure="latency",
                method="forward_ratio",
                batch_size=1,
                repeat=rep,
                n_prompts=0,
                c=bench.latency_ratio(target, draft, context=128, repeats=10),
            )
        )
    for k, v in verify.items():
        rows.append(dict(measure="verify", method=f"target_k{k}", batch_size=1, repeat=0, n_prompts=0, c=v))
    provenance = dict(
        profile.provenance(),
        run=run,
        device_name=bench.describe_device("cpu"),
        note=load_note(load_before, os.getloadavg()[0]),
        pair=f"{profile.spec['pairs']['default']}",
        **choice,
    )
    store_rows(rows, common, provenance)


# the measured columns of every row (blank where its measure has none)
COLUMNS = (
    "seconds new_tokens tokens_per_second block_efficiency acceptance_rate draft_step_s target_step_s same_text c"
).split()


def store_rows(rows: list[dict], common: dict, provenance: dict) -> None:
    """Append one run's ``rows`` (each with the run's ``common`` key cells and every column of ``COLUMNS``, blank
    where a measure has none) to the table, with ``provenance`` on its line."""
    table = store()
    table.provenance = provenance
    table.append([{**common, **{c: r.get(c, "") for c in COLUMNS}, **r} for r in rows])


def summary(frame) -> dict:
    """The medians and ratios a reader wants, from the rows of one run (one ``weights`` x settings)."""
    single = frame[frame.measure == "single"].pivot(index="repeat", columns="method", values="seconds")
    tps = frame[frame.measure == "single"].groupby("method").tokens_per_second.median()
    sd = frame[(frame.measure == "single") & (frame.method == "sd")]
    plain = frame[(frame.measure == "single") & (frame.method == "plain")]
    batched = frame[frame.measure == "batched"].pivot(index="repeat", columns="batch_size", values="tokens_per_second")
    b = max(batched.columns)
    return dict(
        plain_tokens_per_s=tps["plain"],
        sd_tokens_per_s=tps["sd"],
        hf_assisted_tokens_per_s=tps["hf_assisted"],
        sd_over_plain=statistics.median(single["plain"] / single["sd"]),
        sd_over_hf_assisted=statistics.median(single["hf_assisted"] / single["sd"]),
        tau=sd.block_efficiency.median(),
        alpha=sd.acceptance_rate.median(),
        same_text_sd=bool(sd.same_text.astype(str).eq("True").all()),
        same_text_hf=bool(frame[frame.method == "hf_assisted"].same_text.astype(str).eq("True").all()),
        c_forward=frame[frame.measure == "latency"].c.median(),
        c_engine=sd.draft_step_s.median() / plain.target_step_s.median(),
        batch_size=int(b),
        batched_b1_tokens_per_s=batched[1].median(),
        batched_bn_tokens_per_s=batched[b].median(),
        batched_bn_over_b1=statistics.median(batched[b] / batched[1]),
        same_text_batched=bool(frame[frame.measure == "batched"].same_text.astype(str).eq("True").all()),
        verify_cost=verify_cost(frame),
        alpha_for_target=alpha_needed(frame[frame.measure == "latency"].c.median(), verify_costs_of(frame))
        if (frame.measure == "verify").any()
        else float("nan"),
    )


def alpha_needed(c: float, verify: dict[int, float], speedup: float = 1.5, gammas=range(1, 9)) -> float:
    """The smallest i.i.d. acceptance α whose best γ (``choose_gamma``'s expected speedup at this ``c`` and these
    ``verify`` costs) reaches ``speedup`` (bisection; NaN where no α ≤ 1 reaches it)."""

    def best(alpha: float) -> float:
        return max(
            costs.expected_block_efficiency(alpha, g) / (g * c + verify[g + 1]) for g in gammas if g + 1 in verify
        )

    if best(1.0) < speedup:
        return float("nan")
    low, high = 0.0, 1.0
    for _ in range(40):
        mid = (low + high) / 2
        low, high = (mid, high) if best(mid) < speedup else (low, mid)
    return high


def verify_costs_of(frame) -> dict[int, float]:
    """``{k: v(k)}`` of a run's ``measure = verify`` rows."""
    rows = frame[frame.measure == "verify"]
    return {int(m.removeprefix("target_k")): float(g.c.median()) for m, g in rows.groupby("method")}


def verify_cost(frame) -> float:
    """``v(γ + 1)`` of a run's rows: its verification call over a 1-token target call (NaN: a run before it was
    measured)."""
    if not (frame.measure == "verify").any():
        return float("nan")
    rows = frame[(frame.measure == "verify") & (frame.method == f"target_k{int(frame.gamma.iloc[0]) + 1}")]
    return float(rows.c.median())


def latest(frame, run: str | None = None):
    """The rows of run ``run`` (None: the last one; the table keeps every run's rows)."""
    return frame[frame.run == (run or frame.run.max())]


def report(frame, device: str, note: str) -> str:
    s = summary(latest(frame))
    return "\n".join(
        [
            f"device: {device}; {note}",
            f"plain {s['plain_tokens_per_s']:.1f} tok/s | SD {s['sd_tokens_per_s']:.1f} tok/s | SD / plain "
            f"{s['sd_over_plain']:.2f}x (target 1.5x) | same greedy text: {s['same_text_sd']}",
            f"tau {s['tau']:.2f} | alpha {s['alpha']:.3f} | c (forward) {s['c_forward']:.3f} | c (engine step) "
            f"{s['c_engine']:.3f} | verify cost v(gamma + 1) {s['verify_cost']:.2f} target steps",
            f"HF assisted {s['hf_assisted_tokens_per_s']:.1f} tok/s | engine / HF assisted "
            f"{s['sd_over_hf_assisted']:.2f}x (target 1.5x) | same text: {s['same_text_hf']}",
            f"batched SD B={s['batch_size']} {s['batched_bn_tokens_per_s']:.1f} tok/s vs B=1 "
            f"{s['batched_b1_tokens_per_s']:.1f} tok/s: {s['batched_bn_over_b1']:.2f}x (target 3x) | same text: "
            f"{s['same_text_batched']}",
        ]
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-prompts", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--gamma", type=int, default=None, help="default: chosen by α and the measured c")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--report-only", action="store_true", help="print the stored rows' summary, measure nothing")
    args = parser.parse_args(argv)
    if not args.report_only:
        measure(args.n_prompts, args.max_new_tokens, args.gamma, args.repeats)
    table = store()
    frame = table.frame()
    print(report(frame, *run_note(table.provenance_path, frame.run.max())))


if __name__ == "__main__":
    main()
