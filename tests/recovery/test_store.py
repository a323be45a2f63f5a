"""The event log: order across restarts, buffering, blocks, torn and corrupt records, SIGKILL."""

import os
import signal
import subprocess
import sys
import time
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fw_magics.recovery import JobEventStore
from fw_magics.recovery.event_store import encode


def ev(i):
    return {"type": "job_finished", "time": i, "n": i}


def test_events_come_back_in_order_across_restarts(tmp_path):
    store = JobEventStore(str(tmp_path))
    store.start()
    for i in range(5):
        store.write_event(ev(i))
    store.stop()
    store.start()  # a new process (or kernel) appends in a new file
    for i in range(5, 8):
        store.write_event(ev(i))
    store.stop()
    assert sorted(os.listdir(tmp_path)) == ["events.0", "events.1"]
    assert [e["n"] for e in JobEventStore(str(tmp_path)).read_events()] == list(range(8))


def test_cut_block_starts_the_next_file(tmp_path):
    store = JobEventStore(str(tmp_path))
    store.start()
    store.write_event(ev(0), cut_block=True)
    store.write_event(ev(1))
    store.stop()
    assert sorted(os.listdir(tmp_path)) == ["events.0", "events.1"]


def test_buffer_flushes_by_size_and_by_interval(tmp_path):
    by_size = JobEventStore(str(tmp_path / "size"), write_buffer_size=64, flush_interval=3600)
    by_size.start()
    for i in range(10):
        by_size.write_event(ev(i))
    deadline = time.time() + 5
    while time.time() < deadline and not (tmp_path / "size" / "events.0").exists():
        time.sleep(0.02)
    assert (tmp_path / "size" / "events.0").stat().st_size > 0
    by_size.stop()

    by_time = JobEventStore(str(tmp_path / "time"), write_buffer_size=1 << 20, flush_interval=0.2)
    by_time.start()
    by_time.write_event(ev(1))
    deadline = time.time() + 5
    while time.time() < deadline and not (tmp_path / "time" / "events.0").exists():
        time.sleep(0.02)
    assert [e["n"] for e in JobEventStore(str(tmp_path / "time")).read_events()] == [1]
    by_time.stop()


def test_flush_makes_events_durable(tmp_path):
    store = JobEventStore(str(tmp_path), flush_interval=3600)
    store.start()
    store.write_event(ev(1))
    store.flush()
    assert [e["n"] for e in JobEventStore(str(tmp_path)).read_events()] == [1]
    store.stop()


def test_torn_tail_at_every_byte_keeps_every_complete_record(tmp_path):
    records = [encode(ev(i)) for i in range(3)]
    whole = b"".join(records)
    complete = len(records[0]) + len(records[1])
    for cut in range(complete, len(whole)):
        (tmp_path / "events.0").write_bytes(whole[:cut])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = JobEventStore(str(tmp_path)).read_events()
        assert [e["n"] for e in got] == [0, 1]
        assert cut == complete or any("torn" in str(w.message) for w in caught)


def test_corrupt_record_is_skipped_and_reading_goes_on(tmp_path):
    records = [bytearray(encode(ev(i))) for i in range(3)]
    records[1][-2] ^= 0xFF  # flip a payload byte: checksum mismatch
    (tmp_path / "events.0").write_bytes(b"".join(records))
    with pytest.warns(UserWarning, match="corrupt record"):
        got = JobEventStore(str(tmp_path)).read_events()
    assert [e["n"] for e in got] == [0, 2]


def test_background_write_errors_are_surfaced(tmp_path):
    target = tmp_path / "events"
    store = JobEventStore(str(target), flush_interval=3600)
    store.start()
    target.write_text("a file where the event folder should be")  # the writer thread will fail
    store.write_event(ev(1))
    with pytest.raises(RuntimeError, match="writing job events failed"):
        store.flush()
    store.stop()


WRITER = """
import sys
from fw_magics.recovery import JobEventStore
store = JobEventStore(sys.argv[1], write_buffer_size=int(sys.argv[2]), flush_interval=0.001)
store.start()
i = 0
while True:
    store.write_event({"type": "job_finished", "time": i, "n": i, "pad": "x" * (i % 97)})
    i += 1
"""


@settings(max_examples=4, deadline=None)
@given(delay=st.floats(0.05, 0.6), buffer=st.sampled_from([64, 4096, 1 << 20]))
def test_sigkill_while_writing_leaves_a_readable_prefix(tmp_path_factory, delay, buffer):
    folder = tmp_path_factory.mktemp("killed")
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(buffer)])
    time.sleep(delay + 0.5)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = [e["n"] for e in JobEventStore(str(folder)).read_events()]
    assert got == list(range(len(got)))  # a prefix: nothing invented, nothing reordered
