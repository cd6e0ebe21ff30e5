"""A sample as named leaves, and a batch's named leaves as the nested batch.

A worker flattens each sample into (name, leaf) pairs: the leaves are tensors (numpy arrays and
numbers become tensors, as default_collate makes them), str and bytes. The engine stacks the
tensors of a batch into shared memory and keeps the text rows; the main process nests them
again by name into what torch's default_collate returns for the same samples: dicts stay
dicts, tuples and lists become lists, strings become lists of str.

A collate_fn's batch is flattened the same way, but kept as it is rather than as
default_collate would make it: tuples stay tuples, and numbers, str and bytes come back as
themselves; each travels as a tensor whose name ends with "|i" (int), "|f" (float), "|o" (bool),
"|s" (str, its UTF-8 bytes) or "|b" (bytes).

A name is its path of segments joined by "/": "d<pos>:<key>" a dict's str key (pos keeps the
dict's order, since the engine keeps tensors and text apart), "n<pos>:<key>" an int key,
"l<i>" and "t<i>" list and tuple items, "_" a sample that is a leaf itself. A text leaf's name
ends with "|s" (str) or "|b" (bytes).
"""
import collections.abc
import functools

import torch

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
        raw = value.encode("utf-8") if isinstance(value, str) else value
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
    elif isinstance(value, str):
        out.append((name + "|s", value))
    elif isinstance(value, bytes):
        out.append((name + "|b", value))
    elif isinstance(value, bool):
        out.append((name, torch.tensor(value)))
    elif isinstance(value, int):
        out.append((name, torch.tensor(value, dtype=torch.int64)))
    elif isinstance(value, float):
        out.append((name, torch.tensor(value, dtype=torch.float64)))
    elif np is not None and isinstance(value, (np.ndarray, np.generic)):
        if value.dtype.kind in "OUSV":  # objects and strings: no tensor holds them
            raise TypeError(_UNSUPPORTED.format(value.dtype))
        out.append((name, torch.as_tensor(value)))
    else:
        return False
    return True


def _flatten(value, path, out, leaf=_leaf):
    name = path or "_"
    if leaf(value, name, out):
        return
    prefix = path + "/" if path else ""
    if isinstance(value, collections.abc.Mapping):
        for pos, (key, item) in enumerate(value.items()):
            if isinstance(key, str):
                segment = f"d{pos}:{_escape(key)}"
            elif isinstance(key, int) and not isinstance(key, bool):
                segment = f"n{pos}:{key}"
            else:
                raise TypeError(f"mploader: a sample's dict has the key {key!r} of type "
                                f"{type(key).__name__}; keys must be str or int. Use str keys.")
            _flatten(item, prefix + segment, out, leaf)
    elif isinstance(value, (list, tuple)):
        kind = "t" if isinstance(value, tuple) else "l"
        for i, item in enumerate(value):
            _flatten(item, f"{prefix}{kind}{i}", out, leaf)
    elif leaf is _collated_leaf:
        raise TypeError(f"mploader: collate_fn returned a {type(value).__name__} (at "
                        f"{path or 'the top'}); mploader carries tensors, numpy arrays, numbers, "
                        "str, bytes, and dicts, lists and tuples of them. Return those.")
    else:
        raise TypeError(_UNSUPPORTED.format(type(value)))


def flatten(sample):
    """The sample's leaves as [(name, leaf)], in the sample's order."""
    out = []
    _flatten(sample, "", out)
    return out


def flatten_collated(batch):
    """A collate_fn's batch as [(name, Tensor)], in its order."""
    out = []
    _flatten(batch, "", out, _collated_leaf)
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
             "s": lambda t: t.numpy().tobytes().decode("utf-8"), "b": lambda t: t.numpy().tobytes()}


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
    (mploader._C decodes a "|s" field's rows, and leaves a "|b" field's as bytes)."""
    root = {}
    for name, tensor in tensors:
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
