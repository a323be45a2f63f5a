"""The shared Spark's watchdog log does not grow without end (no server started here)."""

from __future__ import annotations

from fw_magics.spark import shared


def test_the_watchdog_log_is_rotated_past_its_limit_keeping_one_old_log(tmp_path):
    log = tmp_path / shared.WATCHDOG_LOG
    assert shared.rotated(str(log), limit=10) == str(log) and not log.exists()  # no log yet: nothing to do
    log.write_bytes(b"0123456789")
    shared.rotated(str(log), limit=10)
    assert log.read_bytes() == b"0123456789"  # at the limit: kept, appended to
    log.write_bytes(b"first run, long enough\n")
    shared.rotated(str(log), limit=10)
    assert not log.exists() and (tmp_path / "watchdog.log.1").read_bytes() == b"first run, long enough\n"
    log.write_bytes(b"second run, long enough\n")
    shared.rotated(str(log), limit=10)
    assert (tmp_path / "watchdog.log.1").read_bytes() == b"second run, long enough\n"  # one old log, the newest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["watchdog.log.1"]
