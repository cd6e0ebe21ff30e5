// NpyDataset: a map-style dataset over .npy arrays with one row per sample (NpyArray, npy.cc,
// reads and maps each file).
#include <mploader/errors.h>
#include <mploader/npy.h>
#include <mploader/sample_writer.h>

#include <ATen/ATen.h>

namespace mploader {

NpyDataset::NpyDataset(const std::vector<std::pair<std::string, std::string>>& arrays) {
  if (arrays.empty()) throw Error("mploader: NpyDataset needs at least one (name, path) array");
  for (const auto& [name, path] : arrays) arrays_.emplace_back(name, NpyArray(path));
  rows_ = static_cast<size_t>(arrays_.front().second.rows());
  for (const auto& [name, array] : arrays_) {
    if (static_cast<size_t>(array.rows()) != rows_) {
      throw Error("mploader: NpyDataset: '" + name + "' (" + array.path() + ") has " +
                  std::to_string(array.rows()) + " rows but '" + arrays_.front().first + "' has " +
                  std::to_string(rows_) + "; every array needs one row per sample");
    }
  }
}

Sample NpyDataset::get(int64_t index) {
  Sample s;
  for (const auto& [name, array] : arrays_) s.set(name, array.row(index));
  return s;
}

std::optional<SampleLayout> NpyDataset::sample_layout() const {
  SampleLayout layout;
  for (const auto& [name, array] : arrays_) {
    const auto& shape = array.shape();
    layout.push_back({name, array.dtype(),
                      std::vector<int64_t>(shape.begin() + (shape.empty() ? 0 : 1), shape.end())});
  }
  return layout;
}

void NpyDataset::write(int64_t index, SampleWriter& out) {
  for (size_t k = 0; k < arrays_.size(); ++k) arrays_[k].second.copy_row(index, out.bytes(k));
}

void NpyDataset::write_batch(const int64_t* indices, size_t count, BatchWriter& out) {
  for (size_t k = 0; k < arrays_.size(); ++k) {
    const NpyArray& array = arrays_[k].second;
    auto* dst = static_cast<uint8_t*>(out.bytes(k));
    for (size_t r = 0; r < count; ++r) array.copy_row(indices[r], dst + r * array.row_bytes());
  }
}

}  // namespace mploader
