"""TABED in the registry (``specdec.papers``): notebooks 10-14, its page, its notebooks' parameter names."""

from __future__ import annotations

from specdec.harness.study import Study, Table


def vocabulary(parameter: str, notebook: str) -> set[str] | None:
    """TABED's ensembles (``methods``), the MT* grid policy's criteria and the MTCP* policy's divergences."""
    if parameter in ("methods", "gamma_methods"):
        from specdec.tabed.algorithm import ENSEMBLES

        return set(ENSEMBLES)
    if parameter == "criteria":  # the MT* grid policy's criteria (``tabed.algorithm.grid_weights``)
        return {"hard", "kl", "tvd", "hard+kl"}
    if parameter == "divergences":  # the MTCP* softmax policy's divergences
        return {"kl", "tvd"}
    return None


def zoo(profile):
    """TABED's models under ``profile`` (``tabed.zoo.zoo_for``)."""
    from specdec.tabed.zoo import zoo_for

    return zoo_for(profile)


# notebooks 10-13's runs (``experiments.KEY``), Table 3's long-answer pair (``windows.WINDOW_KEY``: one training seed
# per call) and the target's cached first answers the tiny second turns carry (``data.ANSWER_KEY``)
TABLES = (
    Table("tabed_runs", "specdec.tabed.experiments", "KEY"),
    Table("tabed_windows", "specdec.tabed.windows", "WINDOW_KEY", "WINDOW_EXACT", "recompute_windows"),
    Table("tabed_first_answers", "specdec.tabed.data", "ANSWER_KEY", "ANSWER_EXACT"),
)
STUDY = Study("TABED", "tabed", ("10", "11", "12", "13", "14"), "papers/tabed.md", vocabulary, zoo, TABLES)
