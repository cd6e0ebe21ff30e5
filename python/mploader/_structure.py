"""A sample as named leaves, and a batch's named leaves as the nested batch.

A worker flattens each sample into (name, leaf) pairs: the leaves are tensors (numpy arrays
become tensors, as default_collate makes them), Python numbers, str and bytes. mploader._C
turns a number into a tensor [kind, bits] (kind 0 int, 1 bool, 2 float; bits the int, or the
float's IEEE bits), so that a field of ints and floats stacks without a cast, and the main
process makes the batch's dtype as default_collate would (torch.tensor of the numbers); it
keeps str and bytes as text rows tagged with their type. The engine stacks the tensors of a
batch into shared memory; the main process nests them again by name into what torch's
default_collate returns for the same samples: dicts stay dicts, tuples and lists become lists,
strings become lists of str.

As default_collate, a batch takes its first sample's structure: its dicts' keys, in its order
(a later sample's extra keys are left out; a missing one is a KeyError), and every later
sample must have the same leaves there.

A collate_fn's batch is flattened the same way, but kept as it is rather than as
default_collate would make it: tuples stay tuples, and numbers, str and bytes come back as
themselves; each travels as a tensor whose name ends with "|i" (int), "|f" (float), "|o" (bool),
"|s" (str, its UTF-8 bytes) or "|b" (bytes).

A name is its path of segments joined by "/": "d<pos>:<key>" a dict's str key (pos keeps the
dict's order, since the engine keeps tensors and text apart), "n<pos>:<key>" an int key,
"l<i>" and "t<i>" list and tuple items, "_" a sample that is a leaf itself. A number leaf's
name ends with "|n", a text leaf's with "|t". The engine's tensor table holds names of up to
MAX_NAME_BYTES bytes.
"""
import collections.abc
import functools

import torch

from . import _C

try:  # numpy is not one of torch's requirements: without it, no sample holds an array
    import numpy as np
except ImportError:
    np = None

_UNSUPPORTED = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                "lists; found {}")


def _escape(key):
    return key.replace("%", "%25").replace("/", "%2F").replace("|", "%7C")


def _unescape(key):
    return key.replace("%7C", "|").replace("%2F", "/").replace("%25", "%")


def _collated_leaf(value, name, out):
    """A leaf of a collate_fn's batch, every one a tensor."""
    if isinstance(value, torch.Tensor):
        out.append((name, value))
    elif isinstance(value, (str, bytes)):
        raw = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
        kind = "|s" if isinstance(value, str) else "|b"
        out.append((name + kind, torch.frombuffer(bytearray(raw), dtype=torch.uint8)
                    if raw else torch.empty(0, dtype=torch.uint8)))
    elif isinstance(value, bool):
        out.append((name + "|o", torch.tensor(value)))
    elif isinstance(value, int):
        out.append((name + "|i", torch.tensor(value, dtype=torch.int64)))
    elif isinstance(value, float):
        out.append((name + "|f", torch.tensor(value, dtype=torch.float64)))
    elif np is not None and isinstance(value, (np.ndarray, np.generic)) \
            and value.dtype.kind not in "OUSV":
        out.append((name, torch.as_tensor(value)))
    else:
        return False
    return True


def _leaf(value, name, out):
    if isinstance(value, torch.Tensor):
        out.append((name, value))
    elif isinstance(value, (str, bytes)):
        out.append((name + "|t", value))
    elif isinstance(value, (int, float)):  # bool too
        out.append((name + "|n", value))
    elif np is not None and isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind in "OUSV":  # objects and strings: no tensor holds them
            raise TypeError(_UNSUPPORTED.format(value.dtype))
        out.append((name, torch.as_tensor(value)))
    else:
        return False
    return True


def _dict_segment(pos, key):
    if isinstance(key, str):
        return f"d{pos}:{_escape(key)}"
    if isinstance(key, int) and not isinstance(key, bool):
        return f"n{pos}:{key}"
    raise TypeError(f"mploader: a sample's dict has the key {key!r} of type "
                    f"{type(key).__name__}; keys must be str or int. Use str keys.")


def _flatten(value, path, out, leaf=_leaf, keys=None, follow=False):
    """``keys``: each dict's keys by path, recorded from a batch's first sample; with
    ``follow``, a later sample's dicts are read by those keys, in that order."""
    name = path or "_"
    if leaf(value, name, out):
        return
    prefix = path + "/" if path else ""
    if isinstance(value, collections.abc.Mapping):
        order = keys.get(path) if follow else None
        if order is None:
            order = list(value)
            if keys is not None and not follow:
                keys[path] = order
        for pos, key in enumerate(order):
            _flatten(value[key], prefix + _dict_segment(pos, key), out, leaf, keys, follow)
    elif isinstance(value, (list, tuple)):
        kind = "t" if isinstance(value, tuple) else "l"
        for i, item in enumerate(value):
            _flatten(item, f"{prefix}{kind}{i}", out, leaf, keys, follow)
    elif leaf is _collated_leaf:
        raise TypeError(f"mploader: collate_fn returned a {type(value).__name__} (at "
                        f"{path_text(path)}); mploader carries tensors, numpy arrays, numbers, "
                        "str, bytes, and dicts, lists and tuples of them. Return those.")
    else:
        raise TypeError(_UNSUPPORTED.format(type(value)))


# The engine's tensor table keeps a name in 128 bytes, its terminator included.
MAX_NAME_BYTES = 127


def path_text(name):
    """A leaf's name as the user wrote the path: "d0:img/l1|t" -> "['img'][1]"."""
    name = name.rpartition("|")[0] if "|" in name[-2:] else name
    if name in ("", "_"):
        return "the sample itself"
    text = ""
    for kind, pos, key in _segments(name):
        text += f"[{key!r}]" if kind in "dn" else f"[{pos}]" if kind in "lt" else ""
    return text


def _check_lengths(out):
    for name, _ in out:
        if len(name.encode("utf-8")) > MAX_NAME_BYTES:
            raise ValueError(
                f"mploader: the sample's leaf at {path_text(name)} is nested too deep or under "
                f"too long a key: its path takes {len(name.encode('utf-8'))} bytes in the "
                f"engine's tensor table, which holds {MAX_NAME_BYTES}. Use shorter dict keys "
                "or less nesting, or return a collate_fn's batch of fewer levels.")


class SampleShape:
    """The structure of a batch's first sample: its dicts' keys in order, and its leaves'
    names, which every later sample of the batch must match (as default_collate requires)."""

    def __init__(self, sample, index):
        self.keys, out = {}, []
        _flatten(sample, "", out, keys=self.keys)
        _check_lengths(out)
        self.names = [name for name, _ in out]
        self.dtypes = [leaf.dtype if isinstance(leaf, torch.Tensor) else None for _, leaf in out]
        self.index = index
        self.first = out

    def flatten(self, sample, index):
        out = []
        _flatten(sample, "", out, keys=self.keys, follow=True)
        names = [name for name, _ in out]
        if names != self.names:
            raise RuntimeError(self._differs(names, index))
        for (name, leaf), dtype in zip(out, self.dtypes):
            if dtype is not None and leaf.dtype != dtype:
                # As torch's workers: stacking into a batch of the first sample's dtype refuses
                # another (a cast could truncate 1.5 to 1).
                raise TypeError(
                    f"mploader: default collation: sample {index} has a {leaf.dtype} tensor at "
                    f"{path_text(name)}, where the batch's first sample {self.index} has "
                    f"{dtype}; a batch is stacked in one dtype. Return one dtype for every "
                    "sample (.to(dtype)), or give a collate_fn.")
        return out

    def _differs(self, names, index):
        only_here = [path_text(n) + _kind(n) for n in names if n not in self.names]
        only_first = [path_text(n) + _kind(n) for n in self.names if n not in names]
        return (f"mploader: sample {index} and the batch's first sample {self.index} differ in "
                f"structure: only sample {index} has {', '.join(only_here) or 'nothing'}; only "
                f"sample {self.index} has {', '.join(only_first) or 'nothing'}. Every sample of "
                "a batch must have the same nesting, with a tensor, a number or text at the same "
                "places, as default_collate requires (or give a collate_fn).")


def _kind(name):
    return {"|n": " (a number)", "|t": " (text)"}.get(name[-2:], " (a tensor)")


def flatten(sample):
    """The sample's leaves as [(name, leaf)], in the sample's order."""
    return SampleShape(sample, 0).first


def flatten_collated(batch):
    """A collate_fn's batch as [(name, Tensor)], in its order."""
    out = []
    _flatten(batch, "", out, _collated_leaf)
    _check_lengths(out)
    return out


@functools.lru_cache(maxsize=4096)
def _segments(name):
    parts = []
    for segment in name.split("/"):
        kind = segment[0]
        if kind in "dn":
            pos, _, key = segment[1:].partition(":")
            parts.append((kind, int(pos), _unescape(key) if kind == "d" else int(key)))
        elif kind in "lt":
            parts.append((kind, int(segment[1:]), None))
        else:
            parts.append(("_", 0, None))
    return tuple(parts)


def _insert(root, name, value):
    node = root
    parts = _segments(name)
    for kind, pos, key in parts[:-1]:
        node = node.setdefault((kind, pos, key), {})
    node[parts[-1]] = value


def _build(node, tuples):
    if not isinstance(node, dict):
        return node
    items = sorted(node.items(), key=lambda item: item[0][1])
    kind = items[0][0][0] if items else "l"
    if kind == "_":
        return _build(items[0][1], tuples)
    if kind in "dn":
        return {key: _build(child, tuples) for (_, _, key), child in items}
    built = [_build(child, tuples) for _, child in items]
    return tuple(built) if tuples and kind == "t" else built


_COLLATED = {"i": lambda t: int(t), "f": lambda t: float(t), "o": lambda t: bool(t),
             "s": lambda t: t.numpy().tobytes().decode("utf-8", "surrogatepass"), "b": lambda t: t.numpy().tobytes()}


def unflatten_collated(tensors):
    """A collate_fn's batch again, from its [(name, Tensor)]."""
    root = {}
    for name, tensor in tensors:
        if len(name) > 2 and name[-2] == "|":
            name, tensor = name[:-2], _COLLATED[name[-1]](tensor)
        _insert(root, name, tensor)
    return _build(root, tuples=True)


def unflatten(tensors, texts):
    """The nested batch from its [(name, Tensor)] and [(name, [str or bytes per row])]
    (mploader._C decodes a "|t" field's rows, each to the str or bytes it was)."""
    root = {}
    for name, tensor in tensors:
        if name.endswith("|n"):
            name, tensor = name[:-2], _C.python_numbers(tensor)
        _insert(root, name, tensor)
    for name, rows in texts:
        base = name[:-2]
        # default_collate hands strings back as it got them: a list for the batch, a tuple for
        # a field of tuples or lists (it transposes those with zip).
        _insert(root, base, tuple(rows) if _segments(base)[-1][0] in "lt" else rows)
    return _build(root, tuples=False)


def native_batch(tensors, texts):
    """A C++ reader's batch: {name: Tensor} and {name: [str]} (or [bytes] for a field that is
    not UTF-8 text), by the names the reader gives; mploader._C decoded the text."""
    batch = dict(tensors)
    batch.update(texts)
    return batch
