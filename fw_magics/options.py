"""fw-magics settings, changed by assignment: ``fw.options.display_max_rows = 200``.

* ``display_max_rows`` (default 1,000): the most records a DataStream's preview shows, all
  partitions together (jupysql's ``displaylimit``, pandas' ``display.max_rows``). ``--show N``
  asks for N per partition; beyond this cap the preview ends with "… N more rows, use
  .to_pandas()", and no more than this many rows per partition come to the driver.
* ``display_max_bytes`` (default 1,000,000): the most characters of one preview's HTML (and,
  separately, of its plain text); wide rows stop the preview earlier, with the same note.

``fw.options.reset()`` puts the defaults back.
"""

from __future__ import annotations

from .errors import FullWindowError, did_you_mean

DEFAULTS = {"display_max_rows": 1000, "display_max_bytes": 1_000_000}
_MINIMUM = {"display_max_rows": 0, "display_max_bytes": 10_000}


class Options:
    """The settings above; an unknown name or a value that is not a whole number is refused in one line."""

    __slots__ = ("_values",)

    def __init__(self):
        object.__setattr__(self, "_values", dict(DEFAULTS))

    def __getattr__(self, name: str):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(self._unknown(name)) from None

    def __setattr__(self, name: str, value) -> None:
        if name not in DEFAULTS:
            raise FullWindowError(self._unknown(name))
        if isinstance(value, bool) or not isinstance(value, int) or value < _MINIMUM[name]:
            raise FullWindowError(f"fw.options.{name} takes a whole number >= {_MINIMUM[name]:,}; got {value!r}")
        self._values[name] = value

    def reset(self) -> None:
        """The defaults again."""
        self._values.update(DEFAULTS)

    @staticmethod
    def _unknown(name: str) -> str:
        return f"no option {name!r}" + did_you_mean(name, DEFAULTS, otherwise=f"; options are: {', '.join(DEFAULTS)}")

    def __repr__(self) -> str:
        return "fw.options(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"


options = Options()
