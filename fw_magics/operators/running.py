"""What a running reduce and a running aggregate share in the per-key core: the key's running value lives
decoded for a key's run and is written once at its end, when its result is emitted (an upsert changelog)."""

from __future__ import annotations

from .base import ELEMENT
from .spec import StateType, codec_for


class Running:
    """The per-key part of a reduce or an aggregate (``element`` and ``result`` are theirs)."""

    STATE = "running"

    def __init__(self, core, state_type: StateType | None, label: str):
        self.core = core
        self.codec = codec_for(state_type, label)
        self.current = None
        self.touched = False

    def begin(self) -> None:
        stored = self.core.values.get(self.STATE)
        self.current = None if stored is None else self.codec.decode(stored)
        self.touched = False

    def timer(self, timestamp: int) -> None:  # reduce and aggregate register none
        pass

    def end(self) -> None:
        if not self.touched:
            return
        if self.current is None:
            self.core.values.pop(self.STATE, None)
        else:
            self.core.values[self.STATE] = self.codec.encode(self.current)
        self.core.emit(ELEMENT, self.result())

    def result(self):
        raise NotImplementedError
