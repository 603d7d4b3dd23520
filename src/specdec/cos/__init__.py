"""CoS (fast LLM collaborative decoding via speculation).

``combine``: the combination functions (re-exported here); ``decoding``: standard / parallel / SD / Naive-CoS /
CoS decoding of n models (``decode`` re-exported); ``tasks``: the four task suites; ``train``: the CoS zoo;
``bench``: the notebooks' measurements.
"""

from specdec.cos.combine import Combination, contrastive, uniform_average, weighted_ensemble
from specdec.cos.decoding import decode

__all__ = ["Combination", "contrastive", "decode", "uniform_average", "weighted_ensemble"]
