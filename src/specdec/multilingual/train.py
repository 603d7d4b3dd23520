"""The command line of the multilingual recipe (``specdec.multilingual.recipe``), both profiles::

    python -m specdec.multilingual.train [data | train | all | drafters] ...   # tiny: the shipped ml-* zoo
    python -m specdec.multilingual.train --profile paper [distil | finetune | all] ...   # paper scale

``--profile`` picks the driver by the profile's data source (``Profile.data_source``): ``generated`` (tiny)
runs ``specdec.multilingual.zoo_run`` (its steps and options below; ``drafters``:
``specdec.multilingual.zoo_retrain``), ``hub`` (paper) runs ``specdec.multilingual.hub_run`` (Vicuna target,
vicuna-68m drafters, the WMT / JParaCrawl training sets of ``paper.yaml``; ``--help`` after ``--profile paper``
lists its options).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import time

import torch

from specdec import zoo
from specdec.harness.profile import Profile
from specdec.multilingual import hub_run, zoo_run
from specdec.multilingual.data import build_data, data_summary
from specdec.multilingual.zoo_retrain import retrain_drafters
from specdec.zoo import cli


def main(argv=None):
    """Run the driver of ``--profile`` (default tiny) with the other arguments."""
    argv = list(sys.argv[1:] if argv is None else argv)
    profile = argparse.ArgumentParser(add_help=False)
    profile.add_argument("--profile", choices=["tiny", "paper"], default="tiny")
    known, rest = profile.parse_known_args(argv)
    drivers = {"generated": tiny_main, "hub": hub_run.main}
    return drivers[Profile.load(known.profile).data_source](rest)


def tiny_parser() -> argparse.ArgumentParser:
    """The tiny driver's options."""
    parser = argparse.ArgumentParser(prog="python -m specdec.multilingual.train", description=zoo_run.__doc__)
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--profile", choices=["tiny"], default="tiny")
    parser.add_argument("step", nargs="?", choices=["data", "train", "all", "drafters"], default="all")
    parser.add_argument(
        "--data",
        type=pathlib.Path,
        default=pathlib.Path(".gpu/ml_data.pt"),
        help="the data file (read by train, written by all)",
    )
    parser.add_argument(
        "--out",
        type=pathlib.Path,
        default=None,
        help="data: the data file to write; train/all: the models directory (default .cache/trained; the shipped "
        "zoo only when named: --out data/models); drafters without --train-seed: required",
    )
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument(
        "--steps-scale",
        type=cli.POS_NUMBER,
        default=1.0,
        help="multiply steps and budgets (and, below 1, the prompts per set): CI smoke runs",
    )
    parser.add_argument("--langs", nargs="*", default=None, help="pairs X→En to build drafters for (default all)")
    parser.add_argument("--prompts-per-set", type=cli.POS, default=None)
    parser.add_argument("--threads", type=cli.POS, default=1)
    parser.add_argument(
        "--distilled",
        type=pathlib.Path,
        default=zoo.DATA / "multilingual" / "ml_distilled.jsonl.gz",
        help="drafters: the saved distillation of the target in the models directory",
    )
    parser.add_argument(
        "--summary-dir",
        type=pathlib.Path,
        default=zoo.DATA / "multilingual",
        help="drafters: where ml_training.csv / ml_run.json live",
    )
    parser.add_argument(
        "--only", nargs="*", default=None, help="drafters: the names to retrain (default: P-F, grid, large)"
    )
    parser.add_argument(
        "--train-seed",
        type=int,
        nargs="*",
        default=[],
        help="drafters: finetune training seeds k > 0 of the named drafters into --out/seed<k> (0: the shipped zoo)",
    )
    parser.add_argument(
        "--no-eval", action="store_true", help="drafters with --train-seed: skip the held-out scores (weights only)"
    )
    return parser


def tiny_main(argv=None):
    """The tiny driver's steps: ``data`` (build and save the data file), ``train`` (``zoo_run.train_all``), ``all``
    (both), ``drafters`` (``zoo_retrain.retrain_drafters``)."""
    parser = tiny_parser()
    args = parser.parse_args(argv)
    if args.step == "drafters" and not args.train_seed and args.out is None:
        parser.error(
            "drafters retrains drafters inside a models folder and rewrites its summary: name it, "
            "--out data/models for the shipped zoo"
        )
    if args.threads:
        torch.set_num_threads(args.threads)
    data_path = args.out if args.step == "data" and args.out else args.data
    if args.step in ("data", "all"):
        t0 = time.perf_counter()
        data = build_data()
        data_path.parent.mkdir(parents=True, exist_ok=True)
        torch.save(data, data_path)
        summary = {"file": str(data_path), "bytes": data_path.stat().st_size}
        print(json.dumps({**summary, "seconds": round(time.perf_counter() - t0, 1), **data_summary(data)}))
    if args.step == "drafters":
        return retrain_drafters(
            build_data(),
            zoo.MODELS if args.train_seed else args.out,
            args.distilled,
            args.summary_dir,
            args.only,
            device=args.device,
            train_seeds=args.train_seed,
            out_dir=args.out if args.train_seed else None,
            evaluate=not args.no_eval,
        )
    if args.step in ("train", "all"):
        data = torch.load(data_path, weights_only=True)
        zoo_run.train_all(
            data,
            cli.output_dir(args.out),
            device=args.device,
            steps_scale=args.steps_scale,
            langs=args.langs,
            prompts_per_set=args.prompts_per_set,
        )


if __name__ == "__main__":
    main()

# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["main"]
