"""What a keyed function's methods see: ``ctx`` of ``open``, of ``process_element``/``on_timer``, and
``ctx.timer_service`` (PyFlink's ``RuntimeContext``, ``KeyedProcessFunction.Context``, ``TimerService``).

The per-key core implements them (``fw_magics.runtime.streaming.keyed.core``), the same in every
mode. The contexts of the other functions are concrete and pure: ``ProcessContext``
(``process_function``), ``JoinContext`` and ``BroadcastContext`` (``co_process``), and a
``CheckpointedFunction``'s two (``checkpointed``).
"""

from __future__ import annotations

import abc

from .state import ListState, ListStateDescriptor, ValueState, ValueStateDescriptor


class TimerService(abc.ABC):
    """``ctx.timer_service``: the current key's event-time timers, and the watermark."""

    __slots__ = ()

    @abc.abstractmethod
    def register_event_time_timer(self, timestamp: int) -> None:
        """Call ``on_timer(timestamp, ctx)`` of the current key once the watermark passes ``timestamp`` (epoch ms)."""

    @abc.abstractmethod
    def delete_event_time_timer(self, timestamp: int) -> None:
        """Forget the current key's timer at ``timestamp``."""

    @abc.abstractmethod
    def current_watermark(self) -> int:
        """The watermark (epoch ms; ``MIN_WATERMARK`` while there is none)."""

    @abc.abstractmethod
    def current_processing_time(self) -> int:
        """The wall clock, in epoch ms."""

    @abc.abstractmethod
    def register_processing_time_timer(self, timestamp: int) -> None:
        """Processing-time timers: refused in one line by fw-magics (the backlog and the stream would differ)."""

    @abc.abstractmethod
    def delete_processing_time_timer(self, timestamp: int) -> None:
        """As ``register_processing_time_timer``."""


class Context(abc.ABC):
    """``ctx`` of ``process_element`` and ``on_timer``: the record's time, the current key, its timers."""

    __slots__ = ()

    timer_service: TimerService

    @abc.abstractmethod
    def timestamp(self) -> int | None:
        """The record's event time (epoch ms; None without event time); in ``on_timer``, the timer's time."""

    @abc.abstractmethod
    def get_current_key(self):
        """The current key: one value, or a tuple for several key columns."""

    @abc.abstractmethod
    def get_broadcast_state(self, name: str):
        """A broadcast input's state called ``name``, read-only (a ``KeyedBroadcastProcessFunction``'s)."""


class RuntimeContext(abc.ABC):
    """``ctx`` of ``open()``: the state a function declares, as handles bound to whichever key is current."""

    @abc.abstractmethod
    def get_state(self, descriptor: ValueStateDescriptor) -> ValueState:
        """The value state ``descriptor`` describes."""

    @abc.abstractmethod
    def get_list_state(self, descriptor: ListStateDescriptor) -> ListState:
        """The list state ``descriptor`` describes."""

    @abc.abstractmethod
    def get_index_of_this_subtask(self) -> int:
        """Which parallel instance (state partition) runs the function."""
