"""Notebook 02's experiment: this engine against transformers' assisted generation, on the one harness.

``comparison(profile, ...)`` is an ``Experiment`` whose requests are the held-out prompts (``zoo.tasks``: text from
outside the project, cut at seeded places) times ``runs`` timed passes, and whose methods are plain decoding (the
reference every other row is marked lossless against), this engine's speculative decoding (``specdec.engine``,
greedy, γ) and HF assisted generation (``specdec.peer.hf_assisted``, the same pair, the same γ). The methods of a
prompt run back to back, so their walltime ratio sees the same machine state; a pass is one ``run`` key column, and
``python -m specdec.harness.peer_experiment --run k`` times pass ``k`` in a process of its own (a run of the notebook
reads the committed passes and computes only missing ones). A row is one decode: its tokens, its target calls, its
block efficiency and its seconds; ``specdec.peer.peer_verdicts`` pools them.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass

import torch

from specdec import bench, peer, results
from specdec.harness.experiment import Experiment, Method, Request, Setting, plain, speculative
from specdec.harness.profile import Profile
from specdec.zoo import tasks
from specdec.zoo.models import pair_weights

TABLE = "peer_hf_assisted"
KEY = ["pair", "weights", "prompt_id", "prompts", "method", "gamma", "max_new_tokens", "temperature", "device",
       "threads", "run"]  # fmt: skip
# The columns of a stored row that do not depend on the machine's speed (``Experiment.check`` recomputes them).
EXACT_COLUMNS = ["output", "new_tokens", "target_calls", "block_efficiency"]


@dataclass
class AssistedResult:
    """One HF assisted generation as the harness stores it (``harness.experiment.Decoded``)."""

    output_ids: list[int]
    target_calls: int
    total_time: float

    def summary(self) -> dict:
        n = len(self.output_ids)
        return dict(
            new_tokens=n,
            target_calls=self.target_calls,
            block_efficiency=n / self.target_calls if self.target_calls else float("nan"),
            total_time=self.total_time,
        )


def assisted(target, draft, *, gamma: int) -> Method:
    """HF assisted generation as a method: ``peer.hf_assisted`` with the setting's token budget and stop tokens."""

    def decode(request: Request, setting: Setting) -> AssistedResult:
        out = peer.hf_assisted(
            target,
            draft,
            request.prompt_ids,
            gamma=gamma,
            max_new_tokens=setting.max_new_tokens,
            eos_token_id=setting.eos_token_id,
        )
        return AssistedResult(out["output_ids"], out["target_calls"], out["total_time"])

    return Method(decode=decode, params={"gamma": gamma})


def peer_row(request: Request, result) -> dict:
    """A stored row: tokens, target calls (HF's count its prefill, which verifies the first block; the engine's do
    not), block efficiency, seconds and the tokens themselves (``output``, JSON)."""
    stats = result.summary()
    row = {k: stats[k] for k in ("new_tokens", "target_calls", "block_efficiency", "total_time")}
    row["output"] = json.dumps(list(result.output_ids))
    return row


def prompt_requests(tokenizer, prompts: list[dict], runs, device) -> list[Request]:
    """One request per (run, prompt), run by run: every prompt of pass 0, then of pass 1, ..."""
    out = []
    for run in runs:
        for p in prompts:
            key = dict(prompt_id=p["id"], prompts=tasks.text_digest(p["prompt"]), run=run)
            out.append(Request(f"{p['id']}/run{run}", tasks.encode(tokenizer, p["prompt"]).to(device), key))
    return out


def comparison(
    profile,
    *,
    pair: str = "default",
    n_per_kind: int = 3,
    gamma: int = 5,
    max_new_tokens: int = 64,
    runs=(0, 1, 2),
    threads: int = 1,
) -> Experiment:
    """Plain decoding, ``specdec`` (this engine, speculative) and ``hf_assisted`` on ``n_per_kind`` held-out prompts
    of every kind, greedy, ``max_new_tokens`` each, in the timed passes ``runs`` (an int: passes ``0..runs-1``), with
    ``threads`` CPU threads (``torch.set_num_threads``; also a key column). ``exp.context``: ``target``, ``draft``,
    ``tokenizer``, ``prompts``, ``device_name``."""
    profile = Profile.load(profile)
    if profile.device_type == "cpu":
        torch.set_num_threads(threads)
    runs = list(range(runs)) if isinstance(runs, int) else list(runs)
    target, draft, tokenizer = profile.load_pair(pair)
    prompts = tasks.heldout_prompts(n=n_per_kind)
    device_name = bench.describe_device(target)
    setting = Setting(max_new_tokens=max_new_tokens, eos_token_id=tokenizer.eos_token_id)
    methods = {
        "plain": plain(target),
        "specdec": speculative(target, lambda request: draft, gamma=gamma),
        "hf_assisted": assisted(target, draft, gamma=gamma),
    }
    requests = prompt_requests(tokenizer, prompts, runs, profile.device)

    def warm_up() -> None:  # a model's first calls pay one-time costs: one untimed decode of each method
        for method in methods.values():
            method.decode(requests[0], setting)

    fixed = dict(
        pair=pair,
        weights=pair_weights(profile.name, pair),
        temperature=setting.sampling.temperature,
        max_new_tokens=max_new_tokens,
        device=device_name,
        threads=torch.get_num_threads() if profile.device_type == "cpu" else "",
    )
    exp = Experiment(
        profile.store(TABLE, KEY),
        requests,
        methods,
        fixed=fixed,
        setting=setting,
        row=peer_row,
        lossless_column=None,  # marked when read (``Experiment.frame``)
        warm_up=warm_up,
        # the model ids in every row's provenance (a paper run's rows must name the paper's models)
        provenance={
            **profile.provenance(),
            **results.model_provenance(target=target, draft=draft),
            "device": device_name,
        },
        desc="engine vs HF assisted",
    )
    exp.context = dict(target=target, draft=draft, tokenizer=tokenizer, prompts=prompts, device_name=device_name)
    return exp


def main(argv=None) -> None:
    """Time pass ``--run k`` of notebook 02's comparison in this process (rows into ``results/<profile>``)."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--run", type=int, nargs="+", required=True)
    parser.add_argument("--profile", default="tiny")
    parser.add_argument("--n-per-kind", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    exp = comparison(
        args.profile,
        n_per_kind=args.n_per_kind,
        max_new_tokens=args.max_new_tokens,
        runs=args.run,
        threads=args.threads,
    )
    frame = exp.run()
    print(peer.pooled(frame).to_string())


if __name__ == "__main__":
    main()
