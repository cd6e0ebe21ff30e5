"""The documentation's Python programs (blocks marked "python program" in README.md and
docs/*.md) run as they are, against the installed package."""
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def programs():
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines = page.read_text(encoding="utf-8").splitlines()
        start = None
        for number, line in enumerate(lines, 1):
            if start is None and line.strip() == "```python program":
                start = number
            elif start is not None and line.strip() == "```":
                found.append(pytest.param("\n".join(lines[start:number - 1]),
                                          id=f"{page.relative_to(ROOT)}:{start}"))
                start = None
        assert start is None, f"{page}:{start}: a python program block is never closed"
    return found


def test_there_are_programs_to_run():
    assert len(programs()) >= 2  # the README's and the Python page's


@pytest.mark.parametrize("code", programs())
def test_program_runs(code, tmp_path):
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
