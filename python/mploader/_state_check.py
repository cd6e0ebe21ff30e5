"""The checks of a state handed to DataLoader.load_state_dict(): a state that is not one
state_dict() or merge_states() returned, or was changed since, is an OptionError("state") that
names what is wrong, never a KeyError or TypeError from deep inside the resume."""
import torch

from ._errors import OptionError

_UINT64 = 1 << 64


def _refuse(what):
    raise OptionError(f"mploader: DataLoader.load_state_dict: {what}. Give the dict that "
                      "state_dict() (or mploader.merge_states()) returned, as saved.", "state")


def _field(state, key, kinds, where="the state"):
    if key not in state:
        _refuse(f"{where} has no {key!r}")
    value = state[key]
    if not isinstance(value, kinds) or (kinds is int and isinstance(value, bool)):
        names = " or ".join(k.__name__ for k in (kinds if isinstance(kinds, tuple) else (kinds,)))
        _refuse(f"{where}'s {key!r} is {value!r} ({type(value).__name__}), not {names}")
    return value


def _count(state, key, where="the state", least=0):
    value = _field(state, key, int, where)
    if value < least:
        _refuse(f"{where}'s {key!r} is {value}, below {least}")
    return value


def _check_seed(state):
    seed = state.get("engine_seed")
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)
                             or not 0 <= seed < _UINT64):
        _refuse(f"the state's 'engine_seed' is {seed!r}, not None or an integer from 0 to 2**64 - 1")


def _check_rng(state):
    rng = _field(state, "rng", dict)
    torch_state = _field(rng, "torch", torch.Tensor, "the state's 'rng'")
    generator = rng.get("generator")
    for name, value in (("torch", torch_state), ("generator", generator)):
        if value is not None and (not isinstance(value, torch.Tensor)
                                  or value.dtype != torch.uint8):
            _refuse(f"the state's rng[{name!r}] is not a torch.ByteTensor generator state")


def _check_job(state):
    facts = _field(state, "distributed", dict, "the job state")
    for key in ("epoch", "dataset_size", "num_replicas", "batch_size", "seed"):
        _count(facts, key, "the job state's 'distributed'", 1 if key == "num_replicas" else 0)
    remaining = _field(state, "remaining", list, "the job state")
    for span in remaining:
        if (not isinstance(span, (list, tuple)) or len(span) != 2
                or not all(isinstance(p, int) and not isinstance(p, bool) for p in span)
                or not 0 <= span[0] < span[1]):
            _refuse(f"the job state's 'remaining' holds {span!r}, not a range [first, last) "
                    "of positions")
    _check_seed(state)


def check_state(state):
    """Returns "job" for a job state (merge_states()), "rank" for a DataLoader's own; raises
    OptionError("state") naming what is wrong otherwise."""
    if not isinstance(state, dict):
        _refuse(f"the state is a {type(state).__name__}, not a dict")
    if state.get("mploader_job_state") == 1:
        _check_job(state)
        return "job"
    if state.get("mploader_state") != 1:
        _refuse("the state is not one that DataLoader.state_dict() returned (no "
                "'mploader_state': 1)")
    _count(state, "epoch")
    _check_seed(state)
    if "engine" in state:
        _field(state, "engine", str)
        _check_rng(state)
        _field(state, "drew_base_seed", bool)
        if "job" in state:
            _check_job(state["job"])
    return "rank"
