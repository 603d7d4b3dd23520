"""CoS in the registry (``specdec.papers``): notebooks 20-22, its page, its notebooks' parameter names."""

from __future__ import annotations

from specdec.harness.study import Study


def vocabulary(parameter: str, notebook: str) -> set[str] | None:
    """CoS's task suites (``tasks``, ``tradeoff_tasks``)."""
    if parameter in ("tasks", "tradeoff_tasks"):
        from specdec.cos.tasks import TASKS

        return set(TASKS)
    return None


STUDY = Study("CoS", "cos", ("20", "21", "22"), "papers/cos.md", vocabulary)
