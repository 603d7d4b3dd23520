"""The one experiment harness (``experiment``) and the ``Profile`` object (``profile``), the only place that knows
the tiny profile from the paper profile."""
