"""Progress of long work, redrawn only when its whole percent changes (never imports streamlit)."""

from __future__ import annotations


class PercentSteps:
    """A ``progress(done, total)`` callback (:func:`contextfit.replay`'s) that calls
    :meth:`draw` only when the whole percent changes: a 1,000-turn replay draws
    101 times, not 1,001. :attr:`shown` is ``None`` until the first draw.

    >>> class Printed(PercentSteps):
    ...     def draw(self, percent, done, total): print(percent, done, total)
    >>> steps = Printed()
    >>> steps(0, 1000); steps(5, 1000); steps(10, 1000); steps(1000, 1000); steps(0, 0)
    0 0 1000
    1 10 1000
    100 1000 1000
    """

    def __init__(self) -> None:
        self.shown: int | None = None

    def __call__(self, done: int, total: int) -> None:
        percent = 100 * done // total if total else 100
        if percent != self.shown:
            self.shown = percent
            self.draw(percent, done, total)

    def draw(self, percent: int, done: int, total: int) -> None:
        raise NotImplementedError


__all__ = ["PercentSteps"]
