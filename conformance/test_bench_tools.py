"""The spatial-index benchmark's command line: options that do not go together are refused before
anything is loaded, with a message naming what was given."""
import os
import subprocess

import pytest

BENCH_GEO = os.environ.get("CONFORMANCE_BENCH_GEO_BINARY",
                           os.path.join(os.path.dirname(__file__), "..", ".build", "debug", "gondola-bench-geo"))


@pytest.mark.parametrize("extra, message", [
    ([], "--slots needs --only country or --only resort, got no --only"),
    (["--only", "roaming"], "--slots needs --only country or --only resort, got --only roaming"),
])
def test_slots_needs_one_workload(extra, message):
    answer = subprocess.run([BENCH_GEO, "--slots", *extra], capture_output=True, text=True, timeout=30)
    assert answer.returncode != 0
    assert message in answer.stderr


def test_an_unknown_workload_is_named():
    answer = subprocess.run([BENCH_GEO, "--only", "glacier"], capture_output=True, text=True, timeout=30)
    assert answer.returncode != 0
    assert "--only must be country, resort, roaming, maps, fences or libspatialindex, got 'glacier'" in answer.stderr
