# The components, one line each, in dependency order (a component after those it depends on).
# Each line is the MPLOADER_BUILD_<NAME> option (ON by default) and the folder components/<name>.
mploader_component(vision  "images: decoding, transforms, ImageFolder")
mploader_component(remote  "URLs: http, https and s3 through one shard cache per machine")
mploader_component(shards  "WebDataset-style tar shards, local or by URL")
mploader_component(hdf5    "HDF5 files as datasets, on libhdf5")
mploader_component(parquet "Parquet files as datasets, on Arrow C++ from the pyarrow wheel")
