"""The exceptions mploader raises, and the raising again of a worker's own exception."""
import importlib


class Error(RuntimeError):
    """Base of every exception mploader itself raises."""


class OptionError(Error, ValueError):
    """An option or input is wrong; ``option`` names it. A ValueError, as torch raises."""

    def __init__(self, message, option=""):
        super().__init__(message)
        self.option = option


class WorkerCrashed(Error):
    """A worker process died. ``cause`` ("segfault", "oom", "killed", ...), ``worker_id``,
    ``pid``, ``signal``, ``exit_code``, ``indices`` (the samples it held) and ``report_path``
    (its crash report) say which, why and where to look."""

    def __init__(self, message, **facts):
        super().__init__(message)
        self.worker_id = facts.get("worker_id", -1)
        self.pid = facts.get("pid", 0)
        self.cause = facts.get("cause", "")
        self.signal = facts.get("signal", 0)
        self.exit_code = facts.get("exit_code", 0)
        self.indices = list(facts.get("indices", []))
        self.report_path = facts.get("report_path", "")


class Timeout(WorkerCrashed):
    """No batch came within ``timeout`` seconds; the worker was stopped and its stack taken."""


class _KeyErrorMessage(str):
    """KeyError quotes its message with repr(); this keeps the traceback readable (as torch)."""

    def __repr__(self):
        return self


def _exception_type(path):
    """The class named "module.Qualified.Name", or None; the module is the longest prefix of the
    path that imports (a class may be nested in another)."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for name in parts[cut:]:
                found = getattr(found, name)
        except AttributeError:
            return None
        return found if isinstance(found, type) and issubclass(found, BaseException) else None
    return None


def _raised_again(facts):
    if facts["worker_id"] < 0:  # num_workers=0: the dataset's own exception object, unchanged
        from . import _C
        original = _C.take_in_process_error()
        if original is not None:
            return original
    return _rebuilt(facts)


def _cpp_exception_type(path):
    """The Python class for an exception a C++ reader threw ("mploader::vision::DecodeError")."""
    if not path.startswith("mploader::"):
        return None
    return OptionError if path.endswith("::OptionError") else Error


def _rebuilt(facts):
    """The dataset's exception, of its own type where that type can be built from a message,
    as torch's DataLoader raises it: "Caught <type> in DataLoader worker process <n>." and the
    worker's traceback (a C++ reader's: mploader.Error, or OptionError)."""
    path = facts["exception_type"]
    kind = _cpp_exception_type(path) or _exception_type(path) or RuntimeError
    if not issubclass(kind, Exception):
        # SystemExit or KeyboardInterrupt raised inside a worker ended that worker's sample,
        # not the training: it reaches the loop as an Exception (torch reports a worker that
        # exits so as an ordinary error), which `except Exception` catches.
        kind = Error
    where = (f"DataLoader worker process {facts['worker_id']}" if facts["worker_id"] >= 0
             else "the main process (num_workers=0)")
    sample = f", sample {facts['index']}" if facts["index"] >= 0 else ""
    name = path.rpartition("::")[2] if "::" in path else path.rpartition(".")[2]
    if "::" in path:  # a C++ reader's message is whole in itself
        message = f"Caught {name} in {where}{sample}: {facts['original_message']}"
    else:
        message = f"Caught {name} in {where}{sample}.\nOriginal {facts['original_message']}"
    if kind is KeyError:
        message = _KeyErrorMessage(message)
    try:
        error = kind(message)
    except Exception:  # a type whose constructor wants more than a message
        error = RuntimeError(message)
    error.worker_id = facts["worker_id"]
    error.index = facts["index"]
    return error


def from_cpp(kind, message, facts):
    """The Python exception for an mploader C++ exception (called by mploader._C)."""
    if kind == "WorkerError":
        return _raised_again(facts)
    if kind == "Timeout":
        return Timeout(message, **facts)
    if kind == "WorkerCrashed":
        return WorkerCrashed(message, **facts)
    if kind == "OptionError":
        return OptionError(message, facts.get("option", ""))
    return Error(message)


