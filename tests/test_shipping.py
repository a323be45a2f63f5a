"""Which modules travel with the job by value, and the one line when one cannot (no Spark session)."""

from __future__ import annotations

import functools
import pickle
import sys
import types

import pytest
from pyspark import cloudpickle

import fw_magics as fw
from fw_magics.spark import shipping
from fw_magics.teaching import testing
from tests.cluster import usermodule


@pytest.fixture
def module(tmp_path):
    mod = usermodule.write_and_import(tmp_path)
    yield mod
    sys.modules.pop(mod.__name__, None)
    with_value = getattr(cloudpickle, "_PICKLE_BY_VALUE_MODULES", set())
    with_value.discard(mod.__name__)
    shipping._SHIPPED.discard(mod.__name__)


def test_installed_and_standard_modules_stay_by_reference(module):
    for name in ("json", "os.path", "fw_magics", "fw_magics.datastream", "pyspark.sql", "pyarrow", "pandas", "__main__"):
        assert not shipping.is_user_module(name), name
    assert shipping.is_user_module(module.__name__)


def test_modules_are_found_through_wrappers_partials_and_aggregate_instances(module, tmp_path):
    wrapped = testing.count_calls(functools.partial(module.scaled), str(tmp_path))
    assert module.__name__ in shipping._modules_reached(wrapped)
    assert module.__name__ in shipping._modules_reached(module.Total())
    assert module.__name__ not in shipping._modules_reached(len)
    made = {}
    exec("def f(x):\n    return x", made)  # no module at all (__module__ is None): nothing to ship
    assert shipping.ship_code(made["f"]) == []


def test_a_shipped_module_unpickles_where_it_cannot_be_imported(module):
    by_reference = cloudpickle.dumps(module.scaled)
    assert shipping.ship_code(module.Total()) == [module.__name__]
    by_value, agg = cloudpickle.dumps(module.scaled), cloudpickle.dumps(module.Total())
    del sys.modules[module.__name__]  # as on a worker that never saw it
    with pytest.raises(ModuleNotFoundError):
        pickle.loads(by_reference)
    scaled, total = pickle.loads(by_value), pickle.loads(agg)
    record = types.SimpleNamespace(k=1, v=2.0)
    assert list(scaled([record])) == [(1, 20.0)]
    assert total.get_result(total.add(record, total.create_accumulator())) == (1, 20.0)


def test_a_compiled_or_vanished_module_is_refused_in_one_line(module):
    fake = types.ModuleType("fastmath_ext")
    fake.__file__ = "/home/me/project/fastmath_ext.cpython-311-x86_64-linux-gnu.so"

    def f(x):
        return x

    f.__module__ = "fastmath_ext"
    sys.modules["fastmath_ext"] = fake
    try:
        with pytest.raises(fw.FullWindowError) as info:
            shipping.ship_code(f)
    finally:
        del sys.modules["fastmath_ext"]
    message = str(info.value)
    assert "'fastmath_ext'" in message and ".so" in message and "\n" not in message and "pip install" in message
    del sys.modules[module.__name__]
    with pytest.raises(fw.FullWindowError, match=module.__name__):
        shipping.ship_code(module.scaled)
