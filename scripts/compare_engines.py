"""This engine against an older commit's engine and transformers' assisted generation, side by side in one
process (notebook 02's setting: tiny default pair, greedy, γ 5, 64 new tokens, held-out prompts, EOS on; one
thread; rounds alternate the methods, the order reversed every other round). Prints tokens/s (median round) and
the medians of the per-round ratios.

    PYTHONPATH=src OMP_NUM_THREADS=1 python scripts/compare_engines.py --old-rev 00cd3c7 --per-kind 2 --rounds 8
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import subprocess
import sys
import tempfile

import torch


def import_old(rev: str, module: str):
    """Module ``specdec.<module>`` of ``src/specdec`` at git revision ``rev``, from the package imported as
    ``specdec_old`` (extracted once per process)."""
    import importlib

    if "specdec_old" not in sys.modules:
        folder = pathlib.Path(tempfile.mkdtemp())
        archive = subprocess.run(["git", "archive", rev, "src/specdec"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
        (folder / "src" / "specdec").rename(folder / "specdec_old")
        for path in (folder / "specdec_old").rglob("*.py"):
            text = (
                path.read_text()
                .replace("from specdec.", "from specdec_old.")
                .replace("from specdec import", "from specdec_old import")
            )
            path.write_text(text.replace("import specdec.", "import specdec_old."))
        sys.path.insert(0, str(folder))
    return importlib.import_module(f"specdec_old.{module}")


def import_old_engine(rev: str):
    """``generate`` of ``src/specdec`` at git revision ``rev`` (``import_old``)."""
    return import_old(rev, "engine").generate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old-rev", required=True)
    parser.add_argument("--per-kind", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    torch.set_num_threads(1)
    from specdec import peer
    from specdec.engine import generate
    from specdec.zoo import tasks
    from specdec.zoo.models import load_pair

    old_generate = import_old_engine(args.old_rev)
    target, draft, tokenizer = load_pair("tiny", "default")
    prompts = [tasks.encode(tokenizer, p["prompt"]) for p in tasks.heldout_prompts(n=args.per_kind)]
    kw = dict(gamma=5, max_new_tokens=64, eos_token_id=tokenizer.eos_token_id)

    def hf(ids):
        r = peer.hf_assisted(target, draft, ids, **kw)
        return r["output_ids"], r["total_time"]

    def run(fn):
        return lambda ids: (lambda r: (r.output_ids, r.total_time))(fn(target, ids, draft, **kw))

    methods = {"hf": hf, "old": run(old_generate), "new": run(generate)}
    seconds = {m: [] for m in methods}
    tokens, same = dict.fromkeys(methods, 0), dict.fromkeys(methods, True)
    for r in range(args.rounds):
        total = dict.fromkeys(methods, 0.0)
        for ids in prompts:
            outs = {}
            for m in list(methods) if r % 2 == 0 else list(methods)[::-1]:
                outs[m], secs = methods[m](ids)
                total[m] += secs
                tokens[m] += len(outs[m]) if r == 0 else 0
            for m in methods:
                same[m] &= outs[m] == outs["hf"]
        for m in methods:
            seconds[m].append(total[m])
    print(f"{len(prompts)} prompts x {args.rounds} rounds, 1 thread; same text as HF: {same}")
    for m in methods:
        to_hf = statistics.median(h / t for h, t in zip(seconds["hf"], seconds[m]))
        to_old = statistics.median(o / t for o, t in zip(seconds["old"], seconds[m]))
        print(
            f"{m:>4}: {tokens[m] / statistics.median(seconds[m]):7.1f} tokens/s | x HF {to_hf:.3f} | x old {to_old:.3f}"
        )


if __name__ == "__main__":
    main()
