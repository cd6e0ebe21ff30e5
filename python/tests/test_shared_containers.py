"""SharedList and SharedDict: they read as the list and dict they were built from, refuse
writes, and travel to workers as shared memory under every start method."""
import collections
import decimal
import pickle

import pytest

import mploader
from mploader import SharedDict, SharedList
from mploader import _shared

Point = collections.namedtuple("Point", "x y")


class Opaque:
    """A value with no form of its own: pickled per entry."""

    def __init__(self, n):
        self.n = n

    def __eq__(self, other):
        return isinstance(other, Opaque) and other.n == self.n


def deep(levels):
    value = "bottom"
    for _ in range(levels):
        value = [value]
    return value


VALUES = [
    None, True, False, 0, -1, 2**63 - 1, -2**63, 2**64, -2**200, 1.5, float("inf"), -0.0,
    "", "text", "ünïcödé ✓", "lone \udc80 surrogate", b"", b"\x00\xff bytes",
    (), ("path/a.jpg", 3), [1, [2, [3]]], {"k": (1, 2.5), 7: None, b"b": [True]},
    Point(1, 2), Opaque(5), {1, 2, 3}, decimal.Decimal("1.10"), deep(100),
]


def original_dict():
    made = {f"key-{i}": value for i, value in enumerate(VALUES)}
    made.update({7: "seven", -3: "minus three", 2**70: "big", b"raw": "bytes key",
                 "lone \udc81": "surrogate key"})
    return made


def test_a_shared_dict_reads_as_the_dict_it_was_built_from():
    plain = original_dict()
    shared = SharedDict(plain)
    assert len(shared) == len(plain)
    assert shared == plain and plain == shared
    assert list(shared) == list(plain)  # insertion order
    assert list(shared.keys()) == list(plain.keys())
    assert list(shared.values()) == list(plain.values())
    assert list(shared.items()) == list(plain.items())
    for key, value in plain.items():
        assert shared[key] == value and type(shared[key]) is type(value)
        assert key in shared and shared.get(key) == value
    assert type(shared["key-22"]) is Point  # a named tuple keeps its type
    assert shared.get("absent") is None and shared.get("absent", 4) == 4
    assert "absent" not in shared
    with pytest.raises(KeyError, match="absent"):
        shared["absent"]
    assert isinstance(shared, collections.abc.Mapping)


def test_keys_are_found_as_a_dict_finds_them():
    numpy = pytest.importorskip("numpy")
    shared = SharedDict({1: "one", True + 1: "two", 0: "zero", "s": "str", b"s": "bytes"})
    assert shared[True] == "one" and shared[1.0] == "one" and shared[numpy.int64(2)] == "two"
    assert shared[False] == "zero" and shared[-0.0] == "zero"
    assert shared["s"] == "str" and shared[b"s"] == "bytes"
    assert 1.5 not in shared and (1,) not in shared and None not in shared
    with pytest.raises(TypeError, match="unhashable"):
        shared[[1]]
    assert shared == {1: "one", 2: "two", 0: "zero", "s": "str", b"s": "bytes"}


def test_a_key_of_another_type_is_refused_by_name():
    with pytest.raises(TypeError, match="a key is a tuple, where keys are str, bytes or int"):
        SharedDict({(1, 2): "pair"})


def test_a_shared_list_reads_as_the_list_it_was_built_from():
    plain = list(VALUES)
    shared = SharedList(plain)
    assert len(shared) == len(plain) and shared == plain and plain == shared
    assert list(shared) == plain
    for i in range(-len(plain), len(plain)):
        assert shared[i] == plain[i]
    for cut in (slice(None), slice(2, 9), slice(None, None, -1), slice(1, None, 3),
                slice(-4, -1), slice(50, 60)):
        assert shared[cut] == plain[cut]
    with pytest.raises(IndexError):
        shared[len(plain)]
    assert "text" in shared and "missing" not in shared
    assert shared.index("text") == plain.index("text") and shared.count(None) == 1
    assert list(reversed(shared)) == plain[::-1]
    assert SharedList(range(5)) == [0, 1, 2, 3, 4] and SharedList([]) == []
    assert SharedList(x for x in "abc") == ["a", "b", "c"]


def test_each_read_builds_a_new_object_and_the_shared_entry_stays():
    shared = SharedDict({"k": [1, 2]})
    got = shared["k"]
    got.append(3)
    assert shared["k"] == [1, 2]


@pytest.mark.parametrize("make, write", [
    (lambda: SharedDict({"a": 1}), lambda c: c.__setitem__("a", 2)),
    (lambda: SharedDict({"a": 1}), lambda c: c.__delitem__("a")),
    (lambda: SharedDict({"a": 1}), lambda c: c.update(b=2)),
    (lambda: SharedDict({"a": 1}), lambda c: c.pop("a")),
    (lambda: SharedDict({"a": 1}), lambda c: c.setdefault("b", 2)),
    (lambda: SharedList([1]), lambda c: c.__setitem__(0, 2)),
    (lambda: SharedList([1]), lambda c: c.append(2)),
    (lambda: SharedList([1]), lambda c: c.sort()),
])
def test_writing_is_refused_as_shared_and_read_only(make, write):
    with pytest.raises(TypeError, match="shared memory that every worker reads, so it cannot "
                                        "be changed"):
        write(make())


def test_a_plain_pickle_carries_the_entries():
    shared = SharedDict(original_dict())
    copied = pickle.loads(pickle.dumps(shared))
    assert type(copied) is SharedDict and copied == shared
    assert copied.fileno() != shared.fileno()
    listed = pickle.loads(pickle.dumps(SharedList(VALUES)))
    assert listed == VALUES


def test_memory_that_is_not_a_container_is_refused():
    with pytest.raises(ValueError, match="cannot be read as one"):
        _shared._from_bytes(SharedDict, b"not a container at all, not even close")
    region = SharedList([1, 2])._region_bytes()
    with pytest.raises(ValueError, match="it holds a list"):
        _shared._from_bytes(SharedDict, region)
    with pytest.raises(ValueError, match="do not add up"):
        _shared._from_bytes(SharedList, region + b"\0" * 8)


def test_the_entries_are_in_one_memfd_and_nothing_in_dev_shm(tmp_path):
    import os
    before = set(os.listdir("/dev/shm"))
    shared = SharedDict({str(i): i for i in range(1000)})
    assert "mploader-shared-container" in os.readlink(f"/proc/self/fd/{shared.fileno()}")
    assert set(os.listdir("/dev/shm")) - before == set()
    assert shared.nbytes > 0 and "1,000 entries" in repr(shared)


def test_the_package_exports_them():
    assert mploader.SharedDict is SharedDict and mploader.SharedList is SharedList
