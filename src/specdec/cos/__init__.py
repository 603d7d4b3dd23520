"""CoS (fast LLM collaborative decoding via speculation).

``algorithm``: standard / parallel / SD / Naive-CoS / CoS decoding of n models (``decode`` re-exported), the paper's
settings and theorems; ``combine``: the combination functions (re-exported here); ``tasks``: the four task suites;
``train``: the CoS zoo and its training; ``experiments``: one experiment per notebook table on the harness;
``tables``: the paper's numbers and table layouts; ``findings``: the verdicts on the committed tables, the verdict
functions by claim family in ``speed_verdicts`` (C1, C4) and ``theory_verdicts`` (C2, C3); ``exactness``: the C2
check.
"""

from specdec.cos.algorithm import decode
from specdec.cos.combine import Combination, contrastive, uniform_average, weighted_ensemble

__all__ = ["Combination", "contrastive", "decode", "uniform_average", "weighted_ensemble"]
