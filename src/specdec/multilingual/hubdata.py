"""The paper's parallel corpora on the Hugging Face hub, as rows of ``{language code: sentence}``.

Two schemas are read (``parallel_rows``):

- WMT14 / WMT16 / WMT19 and IWSLT2017 (``wmt/wmt16`` ``de-en`` ...): a ``translation`` column holding
  ``{"de": ..., "en": ...}``;
- JParaCrawl (``Verah/JParaCrawl-Filtered-English-Japanese-Parallel-Corpus``, the id of the authors'
  ``data_processing/dataset_configs.json``): a single ``train`` split with ``japanese`` and ``english`` columns
  (the columns the authors' ``extract_translation_jparacrawl_japanese`` reads) and the filter's verdicts.

JParaCrawl has no test split. Like the authors' ``loading_dataset`` (a set without an eval split is evaluated
on ``train[-N:]``), ``paper.yaml`` evaluates on its last ``JPARACRAWL_HELDOUT`` (80) rows, the ``datasets``
split slice ``"train[-80:]"``, and the drafter recipe draws its training prompts from ``"train[:-80]"``: the
two never share a row, and neither depends on a seed. Loading goes through ``specdec.hub.load_dataset``
(offline: the local cache only; a missing set raises ``DatasetNotAvailableError`` naming ``hf download``).
"""

from __future__ import annotations

from specdec import hub
from specdec.multilingual import parallel
from specdec.zoo.models import load_profile

JPARACRAWL = "Verah/JParaCrawl-Filtered-English-Japanese-Parallel-Corpus"
JPARACRAWL_HELDOUT = 80  # the authors' eval_data_num: train[-80:] is the evaluation set
JPARACRAWL_COLUMNS = {"ja": "japanese", "en": "english"}


def pair_of(example: dict) -> dict[str, str]:
    """``{language code: sentence}`` of one row of either schema (module docstring)."""
    if "translation" in example:
        return dict(example["translation"])
    if all(c in example for c in JPARACRAWL_COLUMNS.values()):
        return {lang: example[column] for lang, column in JPARACRAWL_COLUMNS.items()}
    raise KeyError(f"not a parallel-corpus row (no `translation`, no japanese/english columns): {sorted(example)}")


def parallel_rows(dataset_id: str, config: str | None, split: str, n: int | None = None) -> list[dict[str, str]]:
    """The first ``n`` rows (all: ``None``) of ``load_dataset(dataset_id, config, split=split)`` at the paper
    profile's pinned revision, as
    ``{language code: sentence}`` dicts. ``split`` may be a slice (``"train[-80:]"``, ``"train[:-80]"``)."""
    data = hub.load_dataset(dataset_id, config, split, n, revision=hub.paper_revision(dataset_id))
    return [pair_of(example) for example in data]


def paper_setup() -> dict:
    """The paper profile's evaluation sets and prompt (``multilingual`` in ``data/profiles/paper.yaml``)."""
    return load_profile("paper")["multilingual"]


def load_paper_prompts(src: str, tgt: str, n: int | None, generalization: bool = False) -> list[dict]:
    """The paper's evaluation prompts (X → En, or En → X from the same set, in Vicuna's chat template,
    ``paper_setup()``; the first ``n`` rows of the set, read by ``parallel_rows``: Ja is JParaCrawl's
    held-out tail ``train[-80:]``); raises ``DatasetNotAvailableError`` naming the dataset when it is neither
    reachable nor cached (this project never downloads at run time)."""
    if "en" not in (src, tgt):
        raise ValueError(f"the paper's test sets are X-English; there is no {src}->{tgt} set")
    setup = paper_setup()
    lang = parallel.canonical_lang(src if tgt == "en" else tgt)
    dataset_id, config, split = setup["generalization"] if generalization else setup["datasets"][lang]
    data = parallel_rows(dataset_id, config, split, n)  # DatasetNotAvailableError names `hf download`
    rows = []
    for i, pair in enumerate(data):
        text = setup["prompt"].format(
            src_name=parallel.language_name(src), tgt_name=parallel.language_name(tgt), text=pair[src]
        )
        rows.append(
            {
                "id": f"{dataset_id}/{i}:{src}-{tgt}",
                "source": dataset_id,
                "lang": lang,
                "direction": f"{src}-{tgt}",
                "prompt": setup["chat_template"].format(prompt=text),
                "reference": " " + pair[tgt],
            }
        )
    return rows


# The declared API (tests/probe_coverage.py); the other public names are this package's internals.
__all__ = ["JPARACRAWL", "JPARACRAWL_COLUMNS", "JPARACRAWL_HELDOUT"]
