"""state_dict() and load_state_dict(): a loop stopped mid-epoch resumes, in another DataLoader
or another process, with exactly the batches it had not received, in the same order."""
import subprocess
import sys

import pytest
import torch

import mploader


class Numbers(torch.utils.data.Dataset):
    def __len__(self):
        return 50

    def __getitem__(self, i):
        return {"i": i, "x": torch.full((2,), float(i))}


def indices(batches):
    return [b["i"].tolist() for b in batches]


def loader(num_workers, **kwargs):
    return mploader.DataLoader(Numbers(), batch_size=4, shuffle=True, num_workers=num_workers,
                               **kwargs)


@pytest.mark.parametrize("saved_with,resumed_with", [(0, 0), (2, 2), (2, 0), (0, 2)])
def test_a_loop_stopped_mid_epoch_resumes_with_the_batches_it_had_not_received(saved_with,
                                                                               resumed_with):
    torch.manual_seed(7)
    first = loader(saved_with)
    it = iter(first)
    seen = [next(it) for _ in range(3)]
    state = first.state_dict()
    rest = list(it)
    assert len(seen) + len(rest) == 13

    torch.manual_seed(1234)  # another global generator state: the resume does not depend on it
    second = loader(resumed_with)
    second.load_state_dict(state)
    rng = torch.get_rng_state()
    resumed = list(second)
    assert indices(resumed) == indices(rest)
    assert torch.equal(torch.get_rng_state(), rng)  # drawing the order again used a copy
    assert sorted(sum(indices(seen) + indices(resumed), [])) == list(range(50))
    assert len(list(second)) == 13  # then the next epoch, whole


def test_a_state_taken_between_epochs_starts_the_next_one():
    torch.manual_seed(3)
    first = loader(2)
    list(first)
    state = first.state_dict()
    second = loader(2)
    second.load_state_dict(state)
    assert state["epoch"] == 1 and "engine" not in state
    assert sorted(sum(indices(list(second)), [])) == list(range(50))


def test_a_state_survives_a_restart_of_the_program(tmp_path):
    script = f"""
import sys, torch, mploader
sys.path.insert(0, {str(__file__.rsplit('/', 1)[0])!r})
from test_resume import loader, indices
torch.manual_seed(11)
if sys.argv[1] == "save":
    l = loader(2)
    it = iter(l)
    for _ in range(5):
        next(it)
    torch.save(l.state_dict(), {str(tmp_path / 'state.pt')!r})
    print(indices(list(it)))
else:
    l = loader(2)
    l.load_state_dict(torch.load({str(tmp_path / 'state.pt')!r}, weights_only=False))
    print(indices(list(l)))
"""
    runs = [subprocess.run([sys.executable, "-c", script, mode], capture_output=True,
                           text=True, timeout=120) for mode in ("save", "load")]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout and runs[0].stdout.count("[") > 5


def test_a_state_that_is_not_one_is_an_option_error():
    with pytest.raises(mploader.OptionError) as caught:
        loader(0).load_state_dict({"epoch": 3})
    assert caught.value.option == "state"
    torch.manual_seed(5)
    first = loader(0)
    it = iter(first)
    next(it)
    state = first.state_dict()
    other = mploader.DataLoader(Numbers(), batch_size=5, shuffle=True)  # another batch_size
    other.load_state_dict(state)
    with pytest.raises(mploader.OptionError) as caught:
        list(other)
    assert caught.value.option == "state"
