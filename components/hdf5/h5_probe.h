// The metadata probe: a short-lived child process opens the file, reads the fields' metadata
// and writes it back through a pipe, so the training process never opens the file (a handle
// it held would be inherited by every forked worker) and a crash of libhdf5 on a damaged file
// costs a child, not the training job.
#pragma once

#include <mploader/hdf5/h5_dataset.h>

#include <string>
#include <vector>

namespace mploader::hdf5::detail {

// The fields' metadata, read in a child process. Throws Error naming the file: what the child
// found (as read_metadata() would throw it), or how the child ended (a signal, a timeout of
// `timeout_s`).
std::vector<H5FieldInfo> probe_metadata(const std::string& file, const std::vector<H5Field>& fields,
                                        bool swmr, double timeout_s);

}  // namespace mploader::hdf5::detail
