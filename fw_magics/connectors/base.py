"""What the streaming runtime asks of a source with a backlog (FLIP-327's ``isBacklog``): the declared base.

A source is a :class:`Source`: the runtime asks it the questions below and never which kind it is. A
kind is one folder of ``fw_magics/connectors`` (``files/``, ``postgres/``, ``two_inputs/``) and one line
in ``registry.py``; its ``kind`` is the name a source step's detail and the job's records carry.

Every answer is JSON or a Spark DataFrame:

* ``describe()``: what it reads (recorded; a restart must describe the same source);
* ``manifest(root)``: where it recorded its backlog in the job's folder (``exists()``, ``read()``:
  read back checked at a restart);
* ``record(root, backlog)``: at the job's *first* start, fix the backlog (the positions it ends at)
  in the job's folder; ``relist(root)``: at a restart, what changed since;
* ``backlog_frame``: a batch DataFrame of exactly the backlog; ``fresh_stream``: a streaming DataFrame
  right after it; ``stream``: one from the very beginning (``mode="stream"``); ``operator_stream``: the
  stream of a non-keyed operator, each row with the source subtask that read it; ``lag``: what is left
  to read after a micro-batch (files, rows), as far as it can tell without reading;
* its position in a savepoint, asked of each input (``inputs_at``, ``joined``): ``saved_position``,
  ``position_fields``, ``position_snapshots``, ``read_since_switch``, ``restore_position``,
  ``same_place``; and, without a source at hand (a savepoint read from disk), its class's codec:
  ``check_position``, ``position_in_words``, ``POSITION_FIELDS`` and ``check_position_fields``.

:class:`OneInput` is a source that reads one thing (a folder, a table); :class:`Composite` is made of
one-input sources and answers for each of them (two inputs: ``two_inputs.source.ConnectedSource``).
Each one-input kind also has a ``declare(spark, ...)`` class method: the argument checks of its
``fw.from_*`` function and the :class:`Declared` step it makes (``datastream/sources.py`` calls it).

**Kafka** fits the same base; it is not implemented because ``spark-sql-kafka`` is not in PySpark's
jars and could not be resolved here (``spark.jars.packages`` found no Maven repository). With the
connector on the classpath it would be: ``record``: the latest offset of every partition at the first
start (from a batch read of the topic, or an admin client), written as Kafka's offsets JSON
``{"topic": {"0": 42, "1": 17}}``; ``backlog_frame``: ``spark.read.format("kafka").option(
"startingOffsets", "earliest").option("endingOffsets", <that JSON>)``; ``fresh_stream``:
``spark.readStream.format("kafka").option("startingOffsets", <that JSON>)`` (plus one idle trigger for
the switch, or none: Kafka's first batch runs at start); ``stream``: ``startingOffsets="earliest"``; the
value column parsed with ``from_json(value, schema)``.
"""

from __future__ import annotations

import abc
import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from ..errors import FullWindowError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

#: The columns a non-keyed operator's stream adds to each row (``operator_stream``): the source subtask
#: that read it, and its place in what that subtask read.
SUBTASK, POSITION = "__fw_subtask", "__fw_pos"
#: The name of the source subtasks' operator state in a savepoint (``position_snapshots``).
SPLITS = "splits"
#: Seconds a held source waits for the handover before it answers "nothing yet" (``fresh_stream``'s
#: ``hold``): Spark then asks about twice a second instead of at every trigger (each ask cost the JVM
#: ~7 ms of CPU at 100 ms triggers, taken from the backlog), and the release is still seen within 50 ms.
HOLD_WAIT = 0.5


def appears(path: str, seconds: float) -> bool:
    """Whether ``path`` exists, or comes to within ``seconds`` (looked for every 50 ms)."""
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


@dataclass(frozen=True)
class Declared:
    """A source as ``fw.from_*`` declares it, its arguments checked: the ``detail`` its step records (its
    ``"source"`` is the kind), the ``schema`` of its rows, its default step ``name``, and ``stream()``: what
    it reads outside a job (every record, then the new ones)."""

    detail: dict
    schema: object  # a StructType
    name: str
    stream: Callable[[], DataFrame]


class Source(abc.ABC):
    """A source with a backlog, as the streaming runtime sees it (see the module docstring).

    Every source has ``schema`` (its rows' StructType), ``event_time`` (a column, or None),
    ``delay_ms`` (its watermark delay; None: its frames carry their own watermarks), ``delays`` (each
    input's delay by its input tag; ``{None: delay}`` for one input) and ``on_late`` ("drop", "fail")."""

    #: The name stored in a source step's detail (``"source"``) and in a description (``"kind"``): in the
    #: job's log and its savepoints, so never renamed.
    kind: ClassVar[str]
    #: The keys of a description that a record written by an older fw-magics may lack (not a change).
    ADDED_SINCE: ClassVar[tuple[str, ...]] = ()

    schema: object
    event_time: str | None
    delay_ms: int | None
    delays: dict
    on_late: str

    # -- what it reads, and its backlog -----------------------------------------------------------------

    @abc.abstractmethod
    def describe(self) -> dict:
        """What it reads, as JSON with its ``kind``: recorded, and compared at a restart and a restore."""

    @abc.abstractmethod
    def manifest(self, root: str):
        """Where it recorded its backlog in the job's folder ``root``: an object with ``exists()`` and
        ``read()`` (read back checked: a damaged or planted file is one line)."""

    @abc.abstractmethod
    def record(self, root: str, backlog: bool) -> tuple[dict, list[dict]]:
        """At the job's first start: fix the backlog (none with ``backlog`` False: a stream reads
        everything) in ``root``. Returns its summary (``{"files": n, "bytes": b}``, ``{"rows": n}``) and
        the files skipped (each ``{"name", "skipped"}``)."""

    @abc.abstractmethod
    def relist(self, root: str) -> list[dict]:
        """At a restart: what changed since it was recorded (a file gone: skipped; one changed: listed
        anew), as entries ``{"name", "size"}`` or ``{"name", "skipped"}``; one line if it cannot be read."""

    @abc.abstractmethod
    def backlog_frame(self, spark, root: str) -> DataFrame:
        """A batch DataFrame of exactly the backlog recorded in ``root``."""

    @abc.abstractmethod
    def fresh_stream(self, spark, root: str, max_files: int | None, parallelism: int | None = None,
                     hold: str | None = None) -> DataFrame:
        """A streaming DataFrame of what comes after the backlog (everything in mode "stream"), whose first
        micro-batch runs at once (the switch). With ``hold`` (a path), one that may start while the backlog
        runs and reads no fresh record before that file exists (``appears``)."""

    @abc.abstractmethod
    def stream(self, spark, root: str, max_files: int | None, parallelism: int | None = None) -> DataFrame:
        """A stream-mode job's streaming DataFrame: every record from the very beginning."""

    def lag(self, root: str, end: dict) -> dict:
        """What is left to read after ``end`` (the end offset Spark reported for a micro-batch of a query over
        ``fresh_stream`` or ``stream``), as far as the source can tell without reading it: ``{"files_behind":
        n}`` (a folder), ``{"rows_behind": n}`` (a table), or {} where it cannot tell (the default). Asked
        of each one-input source once per micro-batch (``job.metrics()``): cheap, and never fails."""
        return {}

    def why_no_max_files(self) -> str | None:
        """Why ``max_files_per_trigger`` cannot cap its micro-batches (a clause of the user's line), or None."""
        return None

    def asks_a_server(self) -> bool:
        """Whether its newest offset is asked of a server (a query that takes a while), so a trigger that asked
        before a caller's commit can end after the caller began to wait (``Plan.settle``)."""
        return False

    def kept_on_server(self, root: str) -> str | None:
        """What the job in ``root`` keeps on a server while it is stopped (a replication slot, which keeps the
        server's log), as a clause for its repr and ``%fw_recover``, or None."""
        return next(filter(None, (source.kept_on_server(own) for source, own, _ in self.inputs_at(root))), None) \
            if not isinstance(self, OneInput) else None

    @classmethod
    def kept_on_server_as(cls, described: dict, root: str) -> str | None:
        """``kept_on_server`` from a job's record alone (``%fw_recover``): the job in ``root`` whose source was
        described as ``described`` (its ``describe()``, untrusted). A one-input kind that keeps something says it."""
        return None

    def without_backlog(self) -> list[str]:
        """Its inputs made with ``backlog=False`` (FLIP-327's ``isBacklog=false``), each named (a folder, a table)."""
        return [name for source, _, _ in self.inputs_at("") for name in source.without_backlog()]

    # -- its position in a savepoint ------------------------------------------------------------------

    @abc.abstractmethod
    def inputs_at(self, root: str, position: dict | None = None) -> list[tuple[OneInput, str, dict | None]]:
        """Each input as (its one-input source, its folder in the job's ``root``, its part of ``position``)."""

    @classmethod
    @abc.abstractmethod
    def joined(cls, parts: list[dict]) -> dict:
        """Its whole from its inputs' parts, in ``inputs_at``'s order (positions, restore details)."""

    @abc.abstractmethod
    def position_fields(self, position: dict) -> dict:
        """The fields a savepoint's document gives ``position`` (how far it read), or {}."""

    @abc.abstractmethod
    def same_place(self, position: dict) -> str | None:
        """Why a savepoint's ``position`` is not of this source (another folder, another table), or None."""

    def position_at(self, now: bool) -> dict:
        """A position for a savepoint written from tables (``fw.write_savepoint`` without ``from_savepoint``):
        nothing read, or (``now``) everything present now read. A kind that cannot say is refused in one line."""
        raise FullWindowError(f"a {self.kind} source cannot yet start a savepoint written from tables at its "
                              "beginning or now; accepted: write_savepoint(..., from_savepoint=a savepoint of the job)")

    def discard_position(self, position: dict) -> None:
        """Undo what ``position_at`` or ``saved_position`` left on a server for ``position`` (a replication slot),
        for a savepoint that was then not written; one line if it cannot (what is left, how to drop it). A kind
        that leaves nothing does nothing."""

    @contextlib.contextmanager
    def discarding(self, position: dict | None):
        """The block, after which ``position`` (None: nothing) is a savepoint's; when the block fails,
        ``position`` is discarded (``discard_position``) before its error goes on (one that could not be
        discarded says so in a note on it)."""
        try:
            yield
        except BaseException as error:
            if position is not None:
                _discard(self, position, error)
            raise

    @classmethod
    def check_position_fields(cls, document: dict, position: dict, where: str, error) -> None:
        """``error`` in one line when a field of the savepoint ``document`` that this kind writes
        (``POSITION_FIELDS``) disagrees with the ``position`` the savepoint holds."""


class OneInput(Source):
    """A source that reads one thing (a folder, a table): it is its own input, and answers for its position."""

    #: The key of its description that names where it reads (its folder, its table).
    PLACE: ClassVar[str]
    #: The fields its savepoints' documents may hold (``position_fields``): name -> (what it accepts, its check).
    POSITION_FIELDS: ClassVar[dict] = {}

    has_backlog: bool

    def inputs_at(self, root: str, position: dict | None = None) -> list[tuple[OneInput, str, dict | None]]:
        return [(self, root, position)]

    @classmethod
    def joined(cls, parts: list[dict]) -> dict:
        (part,) = parts
        return part

    @property
    @abc.abstractmethod
    def named(self) -> str:
        """It in a few words for the user: its folder's name, its table."""

    def without_backlog(self) -> list[str]:
        return [] if self.has_backlog else [self.named]

    def reads_in_words(self) -> str:
        """What it reads, for a notebook's summary of the stream ("the folder /data/orders: parquet files
        named *.parquet"); never a credential."""
        return f"{self.kind} {self.named}"

    def there_now(self) -> str | None:
        """What is there to read now, in words (the backlog a job starting now would take), read cheaply (a
        folder's listing, a table's bounds), for a notebook's summary; a reading error in words, never
        raised; None when it cannot be told before a job starts."""
        return None

    @abc.abstractmethod
    def operator_stream(self, spark, root: str, max_files: int | None, parallelism: int) -> DataFrame:
        """The stream of a non-keyed operator job: what comes after the backlog, each row with ``SUBTASK``
        (the source subtask that read it) and ``POSITION`` (its place in what that subtask read)."""

    @abc.abstractmethod
    def saved_position(self, root: str, end: dict) -> dict:
        """What a savepoint keeps of it after a micro-batch whose end offset (its stream's) was ``end``."""

    @abc.abstractmethod
    def position_snapshots(self, position: dict, parallelism: int) -> list[dict]:
        """The operator state of its ``parallelism`` source subtasks at ``position`` (``SPLITS``)."""

    @abc.abstractmethod
    def read_since_switch(self, spark, root: str, position: dict, scratch: str):
        """A batch DataFrame of what its stream read up to ``position`` (not the backlog), or None;
        ``scratch``: a file name in ``root`` it may write (the caller removes it)."""

    @abc.abstractmethod
    def restore_position(self, root: str, snapshots: list[dict], position: dict, parallelism: int) -> dict:
        """Lay a restored job's source out in ``root`` from a savepoint's ``position`` and its subtasks'
        ``snapshots``, at ``parallelism``: what was read is its backlog, never read again. Returns the
        switch event's detail."""

    @classmethod
    @abc.abstractmethod
    def check_position(cls, doc, where: str, error) -> dict:
        """``doc`` if it is a position of this kind that fw-magics wrote; ``error`` with one line naming
        ``where`` otherwise (a savepoint's position is untrusted input)."""

    @classmethod
    @abc.abstractmethod
    def position_in_words(cls, position: dict) -> str:
        """A checked position in words ("3 of 5 files read")."""

    @classmethod
    def check_splits(cls, snapshots: list[dict], position: dict, where: str, error) -> None:
        """``error`` in one line when its source subtasks' ``snapshots`` in a savepoint (the splits, each
        with what was read of it) disagree with the checked ``position`` the savepoint holds: a split
        marked unread there would be read again, its records counted twice. A kind whose splits say
        nothing beyond its position need not override it."""


class Composite(Source):
    """A source made of one-input sources (``inputs``), each in its own folder of the job's: its description
    holds theirs under ``PARTS``, its position theirs as ``{PARTS: [...]}``."""

    PARTS: ClassVar[str] = "inputs"
    #: Its description's parts, in words (a savepoint's field check says what it accepts).
    PARTS_IN_WORDS: ClassVar[str]

    inputs: list[OneInput]

    @classmethod
    def joined(cls, parts: list[dict]) -> dict:
        return {cls.PARTS: parts}

    @staticmethod
    @abc.abstractmethod
    def input_root(root: str, index: int) -> str:
        """Input ``index``'s own folder in the job's ``root``."""

    @classmethod
    def described_parts(cls, described: dict) -> list[dict]:
        """The descriptions of its inputs in its own ``described``."""
        return described[cls.PARTS]

    @classmethod
    def input_details(cls, detail: dict) -> list[tuple[dict, object]]:
        """Each input's (step detail, schema) in its step's ``detail``: what the registry makes them of."""
        return [(d, s) for d, s, *_ in detail[cls.PARTS]]

    @classmethod
    def split_position(cls, doc, count: int, where: str, error) -> list:
        """Its ``count`` inputs' parts of a savepoint's position ``doc`` (each checked by its own kind after);
        ``error`` in one line when ``doc`` is not of that shape."""
        if not (isinstance(doc, dict) and set(doc) == {cls.PARTS} and isinstance(doc[cls.PARTS], list)
                and len(doc[cls.PARTS]) == count):
            raise error(f"the source position {where} is not one of {count} inputs' positions fw-magics wrote")
        return doc[cls.PARTS]

    def position_at(self, now: bool) -> dict:
        """Each input's own ``position_at``, joined as its savepoints' positions are (``{PARTS: [...]}``): a
        bootstrapped two-input job reads each input from its beginning, or after what each holds now."""
        return self.joined(each_position([(source, lambda s=source: s.position_at(now)) for source in self.inputs]))

    def discard_position(self, position: dict) -> None:
        """Each input's own part discarded, every one tried; the first that could not be, raised after."""
        failed = None
        for source, _, own in self.inputs_at("", position):
            try:
                source.discard_position(own)
            except Exception as error:
                failed = failed or error
        if failed is not None:
            raise failed

    def position_fields(self, position: dict) -> dict:
        return {}  # each input's position says what was read

    def same_place(self, position: dict) -> str | None:
        for number, (source, _, own) in enumerate(self.inputs_at("", position), start=1):
            elsewhere = source.same_place(own)
            if elsewhere is not None:
                return f"input {number}: {elsewhere}"
        return None

    def why_no_max_files(self) -> str | None:
        return next(filter(None, (source.why_no_max_files() for source in self.inputs)), None)

    def asks_a_server(self) -> bool:
        return any(source.asks_a_server() for source in self.inputs)


def each_position(calls: list[tuple[OneInput, Callable[[], dict]]]) -> list[dict]:
    """Each input's position, ``calls`` (its source, what makes its position) made in order; when one fails, the
    ones made before it are discarded (``Source.discard_position``) and its error goes on."""
    made = []
    try:
        for source, call in calls:
            made.append((source, call()))
    except BaseException as error:
        for source, position in made:
            _discard(source, position, error)
        raise
    return [position for _, position in made]


def _discard(source: Source, position: dict, error: BaseException) -> None:
    try:
        source.discard_position(position)
    except Exception as undone:
        error.add_note(str(undone))
