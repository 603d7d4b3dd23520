"""A peer implementation to compare against: transformers' assisted generation.

``hf_assisted(target, draft, prompt_ids, ...)`` runs ``target.generate(assistant_model=draft)`` with a
constant schedule of ``num_assistant_tokens = γ`` and confidence threshold 0 (so it drafts exactly γ tokens
like specdec does), counting the target's forward calls with a hook to get its block efficiency.
"""

from __future__ import annotations

import copy

import torch

from specdec.engine import now
from specdec.verdict import FAILS, HOLDS, SANITY, Verdict, bootstrap_ci, decide


def hf_assisted(target, draft, prompt_ids, *, gamma: int = 5, max_new_tokens: int = 64, eos_token_id=None):
    """Greedy assisted generation. Returns ``{output_ids, new_tokens, target_calls, block_efficiency,
    total_time}``; ``target_calls`` counts every target forward (HF verifies its first block together with
    the prompt, so there is no separate prefill call)."""
    calls = [0]
    handle = target.register_forward_hook(lambda *_: calls.__setitem__(0, calls[0] + 1))
    draft.generation_config.num_assistant_tokens = gamma
    draft.generation_config.num_assistant_tokens_schedule = "constant"
    draft.generation_config.assistant_confidence_threshold = 0.0
    ids = torch.as_tensor(prompt_ids).reshape(1, -1).to(target.device)
    config = copy.deepcopy(target.generation_config)
    config.update(
        do_sample=False,
        max_new_tokens=max_new_tokens,
        min_new_tokens=0,
        eos_token_id=eos_token_id,
        pad_token_id=0,
        use_cache=True,
    )
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # HF's assistant warns about its own internal generate() kwargs
    try:
        t0 = now(target.device)  # the engine's clock: on CUDA it waits for the queued kernels
        out = target.generate(ids, attention_mask=torch.ones_like(ids), assistant_model=draft, generation_config=config)
        elapsed = now(target.device) - t0
    finally:
        handle.remove()
        hf_logging.set_verbosity(verbosity)
    new = out[0, ids.shape[1] :].tolist()
    return {
        "output_ids": new,
        "new_tokens": len(new),
        "target_calls": calls[0],
        "block_efficiency": len(new) / calls[0] if calls[0] else float("nan"),
        "total_time": elapsed,
    }


PEER_SPEED_GOAL = 1.2  # the project's goal: this engine ≥ 1.2x transformers' assisted generation


def peer_verdicts(frame, goal: float = PEER_SPEED_GOAL) -> list[Verdict]:
    """Notebook 02's findings on its stored rows (one per prompt: ``same_text``, ``new_tokens``, ``hf_seconds``,
    ``specdec_seconds``): our engine gives HF's greedy text on every prompt (exact share; a sanity check), and its
    tokens/s over HF assisted generation's (pooled ratio, bootstrap over prompts) is above the project's ``goal``.
    The interval covers prompt-to-prompt variation of the stored run only, not other runs, days or thread counts."""
    same = frame.same_text.astype(str).str.lower() == "true"
    rows = list(
        zip(frame.new_tokens.astype(float), frame.hf_seconds.astype(float), frame.specdec_seconds.astype(float))
    )

    def ratio(sample):
        tokens = sum(r[0] for r in sample)
        return (tokens / sum(r[2] for r in sample)) / (tokens / sum(r[1] for r in sample))

    est, low, high = bootstrap_ci(rows, ratio)
    share = float(same.mean()) if len(same) else float("nan")
    devices = ", ".join(sorted(set(frame.device.astype(str)))) if "device" in frame else "this machine"
    return [
        Verdict(
            "HF peer: same text",
            "greedy SD in this engine gives the same tokens as transformers' assisted generation on every prompt",
            share,
            share,
            share,
            len(same),
            HOLDS if share == 1.0 else FAILS,
            "(our check, no paper claim)",
            validity="yes",
            validity_why="yes: greedy decoding must give the same tokens in any two correct engines",
            section=SANITY,
        ),
        Verdict(
            "HF peer: speed",
            f"this engine decodes faster than transformers' assisted generation (tokens/s ratio > {goal:g})",
            est,
            low,
            high,
            len(rows),
            decide(low, high, goal),
            f"(our goal: ≥ {goal:g}x)",
            f"Walltime of one stored run on {devices} ({len(rows)} prompts): the interval covers the prompts of that"
            " run only, not other runs, days or thread counts.",
            validity="yes",
            validity_why="yes: a claim about this engine against transformers on the machine that ran both",
            regime=f"this machine ({devices})",
        ),
    ]
