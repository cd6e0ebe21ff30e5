"""The first Python of a spawned worker or of the forkserver (start_method spawn or
forkserver): ``python -c "import mploader._spawned"`` loads the plugins the main process had
loaded, then becomes the worker the engine asked for, and never returns. Imported anywhere
else, it does nothing."""
import os

from . import _C
from ._plugins import PLUGINS_ENV
from ._spawning import SPAWNED_COMMAND

for _path in filter(None, os.environ.get(PLUGINS_ENV, "").split(os.pathsep)):
    _C.load_plugin(_path)
_C.init(SPAWNED_COMMAND)
