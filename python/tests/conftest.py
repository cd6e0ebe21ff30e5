import gc

import pytest


@pytest.fixture(autouse=True)
def _crash_reports_in_a_scratch_folder(tmp_path, monkeypatch):
    """Crash reports go to ./mploader-crashes unless crash_dir says otherwise: keep them out of
    the source tree."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def _collect_garbage():
    """Each test's loaders and workers end with the test, not during a later one."""
    yield
    gc.collect()
