"""Step 1 of the AASD recipe (``aasd.recipe``): the target's greedy answers to training prompts (plain decoding on
our engine), stored as JSON lines next to the models, one per prompt, keyed by target, revision (or weights) and
answer length; an interrupted run resumes, a changed setting writes another file. ``load_answers`` reads them back,
once.
"""

from __future__ import annotations

import json
import pathlib

import torch

from specdec.aasd.rows import Rows, pick_rows
from specdec.cache import CachedLM
from specdec.engine import generate
from specdec.zoo import models


def is_main(accelerator) -> bool:
    return accelerator is None or accelerator.is_main_process


def answers_path(folder: pathlib.Path, target: str, version: str, max_new_tokens: int) -> pathlib.Path:
    """Where a target's answers are stored (``version``: its revision, or its weights' digest)."""
    return pathlib.Path(folder) / f"distill-{target.split('/')[-1]}@{version}-{max_new_tokens}.jsonl"


def target_version(profile, target: str) -> str:
    """What names a target's answers: its pinned revision, a local target's weights digest, else ``main``."""
    source, revision = profile.model_source(target)
    if revision:
        return revision
    return models.weights_identity(source)[:12] if pathlib.Path(source).is_dir() else "main"


def load_answers(path: pathlib.Path) -> dict[str, list[int]]:
    """The stored answers ``{row id: answer ids}`` of ``path`` (empty when there is none yet)."""
    done = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                done[row["id"]] = row["answer"]
    return done


@torch.no_grad()
def distill(target, rows: Rows, max_new_tokens: int, path: pathlib.Path, progress: bool = True) -> None:
    """The target's greedy answers (EOS kept; an answer cut at ``max_new_tokens`` has none) to the prompts of
    ``rows`` not yet in ``path``, appended one JSON line ``{"id", "answer"}`` per prompt as they are made."""
    from tqdm.auto import tqdm

    done = load_answers(path)
    todo = [i for i, name in enumerate(rows.ids) if name not in done]
    path.parent.mkdir(parents=True, exist_ok=True)
    device = next(target.parameters()).device
    with path.open("a") as f:
        for i in tqdm(todo, desc="target answers", disable=not progress):
            ids, inputs = rows.prompt(i)
            inputs = {k: v.to(device=device, dtype=target.dtype) for k, v in inputs.items()}
            res = generate(
                CachedLM(target),
                ids.to(device),
                None,
                max_new_tokens=max_new_tokens,
                eos_token_id=rows.eos_id,
                target_inputs=inputs,
            )
            f.write(json.dumps({"id": rows.ids[i], "answer": res.output_ids}) + "\n")
            f.flush()


def target_answers(target, rows: Rows, cfg: dict, path: pathlib.Path, accelerator=None) -> Rows:
    """``cfg["rows"]`` of ``rows`` (a seeded draw; ``None``: all) answered by ``target`` (``distill`` on the main
    process, answers up to ``cfg["max_new_tokens"]``), the answers loaded once."""
    prompts = rows.subset(pick_rows(len(rows), cfg["rows"], cfg.get("seed", 0)))
    if is_main(accelerator):
        distill(target, prompts, cfg["max_new_tokens"], path)
    if accelerator is not None:
        accelerator.wait_for_everyone()
    return prompts.with_answers(load_answers(path))


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = []
