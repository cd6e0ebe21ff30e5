"""The first Python of a spawned worker or of the forkserver (start_method spawn or
forkserver): ``python -c "import mploader._spawned"`` becomes the worker the engine asked for,
and never returns. Imported anywhere else, it does nothing."""
from . import _C
from ._spawning import SPAWNED_COMMAND

_C.init(SPAWNED_COMMAND)
