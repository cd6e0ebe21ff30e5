"""The engine's own C++ readers: token files and mixtures of streams."""
from . import _C
from ._native import NativeDatasetBase


class TokenStream(NativeDatasetBase):
    """Token files (flat arrays of uint16 or uint32 ids, as nanoGPT writes them), cut into
    windows of ``context`` tokens: each sample {"input", "target"}, the target shifted by one.
    A stream: shuffle=True shuffles its shards. Options, as TokenStreamOptions names them:
    type ("uint16" or "uint32"), context, vocab_size, windows ("sequential" or "random"),
    windows_per_shard, cache_dir. Files may be http(s):// or s3:// URLs (docs/remote-data.md).
    """

    def __init__(self, files, **options):
        super().__init__(_C.TokenStream([str(f) for f in files], **options))


class StreamMixture(NativeDatasetBase):
    """Several streams mixed by weighted draws (docs/streaming.md). Options, as
    StreamMixtureOptions names them: end ("cycle", "first_exhausted" or "all_exhausted"),
    num_samples, source_field."""

    def __init__(self, sources, weights, **options):
        natives = []
        for source in sources:
            if not isinstance(source, NativeDatasetBase):
                raise TypeError("mploader.StreamMixture mixes mploader's streams (TarShards, "
                                f"TokenStream, ParquetShards, StreamMixture), not {source!r}")
            natives.append(source._native)
        super().__init__(_C.StreamMixture(natives, [float(w) for w in weights], **options))
