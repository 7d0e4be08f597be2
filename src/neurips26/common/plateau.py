"""The plateau rule that decides when a training run has converged.

Several reproductions train "to a plateau, not to a step count": every few steps they
evaluate a held-out loss, and they stop once ``patience`` evaluations in a row fail to
improve on it by more than a relative ``min_improvement``. :class:`Plateau` is that
counter, kept apart from what is evaluated (a cross-entropy, a reconstruction error, a
bilevel problem's upper objective) and from the training loop that calls it.
"""

from __future__ import annotations

import math

from neurips26.common.validation import check_float, check_int

__all__ = ["Plateau"]


class Plateau:
    """Stop once ``patience`` evaluations in a row improve by no more than ``min_improvement``.

    An evaluation *counts* when its value ``v`` is below ``(1 - min_improvement) * r``,
    where ``r`` is the last value that counted (``inf`` before the first, so the first
    finite value always counts). Slow progress therefore still resets the counter once
    its sum since ``r`` exceeds the margin; only a flat (or worsening) stretch of
    ``patience`` evaluations stops training. The values are losses (non-negative): the
    rule is relative.

    Parameters
    ----------
    patience : int
        Evaluations in a row that do not count before the rule fires (>= 1).
    min_improvement : float
        Relative improvement that counts, in ``[0, 1)`` (0: any decrease counts).

    Attributes
    ----------
    values : list of float
        Every value given to :meth:`update`, in order.
    reference : float
        ``r``, the last value that counted.
    best : float
        The lowest value seen (a run may keep the weights of its best evaluation).
    since : int
        Evaluations since the last one that counted.
    stopped : bool
        Whether the rule has fired.

    Examples
    --------
    >>> rule = Plateau(patience=2, min_improvement=0.1)
    >>> [rule.update(v) for v in (1.0, 0.8, 0.79, 0.78, 0.77)]
    [False, False, False, True, True]
    >>> rule.reference, rule.best
    (0.8, 0.77)
    """

    def __init__(self, patience: int, min_improvement: float = 0.01) -> None:
        self.patience = check_int(patience, "patience", min=1)
        self.min_improvement = check_float(min_improvement, "min_improvement", min=0.0,
                                           max=1.0, max_inclusive=False)  # fmt: skip
        self.values: list[float] = []
        self.reference = math.inf
        self.best = math.inf
        self.since = 0
        self.stopped = False

    def update(self, value: float) -> bool:
        """Record one evaluation; True once the rule has fired (it stays fired).

        Raises
        ------
        TypeError
            If ``value`` is not a real number.
        ValueError
            If ``value`` is NaN (a diverged run is the caller's to report; ``inf`` is
            accepted and never counts).
        """
        # numbers, numpy and one-element torch scalars; not text, not bools
        if isinstance(value, (bool, str, bytes)) or not hasattr(value, "__float__"):
            raise TypeError(f"value must be a real number, got {type(value).__name__}")
        value = float(value)
        if math.isnan(value):
            raise ValueError("value: NaN evaluation (the run diverged?)")
        self.values.append(value)
        self.best = min(self.best, value)
        if self.stopped:
            return True
        if value < (1.0 - self.min_improvement) * self.reference:
            self.reference, self.since = value, 0
        else:
            self.since += 1
        self.stopped = self.since >= self.patience
        return self.stopped
