"""mploader.tune(): num_workers measured on your dataset, on this machine."""
from . import _C
from ._native import NativeDatasetBase
from ._worker import SampleFetch


def tune(dataset, batch_size=1, shuffle=False, *, workers=(0, 1, 2, 4), prefetch=(),
         batch_sizes=(), batches_per_point=30, time_budget_s=20.0):
    """Runs short epochs of ``dataset`` (a map-style Dataset, or one of mploader's readers)
    at each worker count (and prefetch_factor and batch size, when given), and recommends a
    num_workers with the reason: CPU-, I/O-, memory-, IPC- or loop-bound. Returns a dict:
    "recommendation" (num_workers, prefetch_factor, batch_size, samples_per_s, bound, reason),
    "table" (every point measured), "choices", "cpu_budget", "skipped" and "summary" (text
    to print). Stays within ``time_budget_s``; docs/tuning-num-workers.md says how it
    decides."""
    source = dataset._native if isinstance(dataset, NativeDatasetBase) else SampleFetch(dataset)
    return _C.tune(source, len(dataset), int(batch_size), bool(shuffle), workers=list(workers),
                   prefetch=list(prefetch), batch_sizes=list(batch_sizes),
                   batches_per_point=int(batches_per_point), time_budget_s=float(time_budget_s))
