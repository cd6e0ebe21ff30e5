#include "tools/soak/dataset.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <sstream>

namespace bench::soak {
namespace {

constexpr size_t kNamed = 10;  // indices named per kind of problem

class IndexedPayloadDataset : public mploader::Dataset {
 public:
  IndexedPayloadDataset(int64_t samples, int64_t payload_bytes)
      : samples_(samples), payload_bytes_(payload_bytes) {}
  size_t size() const override { return static_cast<size_t>(samples_); }
  mploader::Sample get(int64_t index) override {
    at::Tensor payload = at::empty({payload_bytes_}, at::kByte);
    uint8_t* bytes = payload.data_ptr<uint8_t>();
    for (int64_t j = 0; j < payload_bytes_; ++j) bytes[j] = payload_byte(index, j);
    return {{"index", at::scalar_tensor(index, at::kLong)}, {"payload", payload}};
  }

 private:
  int64_t samples_;
  int64_t payload_bytes_;
};

// "n (a, b, c, ...)": how many, and the first kNamed of them.
std::string name_some(const std::vector<int64_t>& indices) {
  std::ostringstream s;
  s << indices.size() << " (";
  for (size_t i = 0; i < indices.size() && i < kNamed; ++i) s << (i ? ", " : "") << indices[i];
  s << (indices.size() > kNamed ? ", ...)" : ")");
  return s.str();
}

}  // namespace

std::shared_ptr<mploader::Dataset> make_indexed_dataset(int64_t samples, int64_t payload_bytes) {
  return std::make_shared<IndexedPayloadDataset>(samples, payload_bytes);
}

DeliveryLedger::DeliveryLedger(int64_t samples, int64_t payload_bytes)
    : payload_bytes_(payload_bytes), seen_(static_cast<size_t>(samples), 0) {}

void DeliveryLedger::start_epoch() {
  std::fill(seen_.begin(), seen_.end(), 0);
  out_of_range_.clear();
  wrong_.clear();
  wrong_count_ = 0;
}

void DeliveryLedger::note_wrong(int64_t index, const std::string& what) {
  if (wrong_.size() < kNamed) wrong_.push_back("index " + std::to_string(index) + ": " + what);
  ++wrong_count_;
}

void DeliveryLedger::record(const mploader::Batch& batch) {
  const at::Tensor index = batch["index"].contiguous();
  const at::Tensor payload = batch["payload"].contiguous();
  const std::vector<int64_t>& indices = batch.indices();
  const int64_t* index_field = index.data_ptr<int64_t>();
  const uint8_t* bytes = payload.data_ptr<uint8_t>();
  for (size_t row = 0; row < indices.size(); ++row) {
    const int64_t i = indices[row];
    if (i < 0 || i >= static_cast<int64_t>(seen_.size())) {
      out_of_range_.push_back(i);
      continue;
    }
    ++seen_[static_cast<size_t>(i)];
    if (index_field[row] != i) {
      note_wrong(i, "its row says index " + std::to_string(index_field[row]));
      continue;
    }
    const uint8_t* row_bytes = bytes + static_cast<int64_t>(row) * payload_bytes_;
    for (int64_t j = 0; j < payload_bytes_; ++j) {
      if (row_bytes[j] != payload_byte(i, j)) {
        note_wrong(i, "payload byte " + std::to_string(j) + " is " +
                          std::to_string(row_bytes[j]) + ", not " +
                          std::to_string(payload_byte(i, j)));
        break;
      }
    }
  }
}

std::string DeliveryLedger::problems() const {
  std::vector<int64_t> missing, repeated;
  for (size_t i = 0; i < seen_.size(); ++i) {
    if (seen_[i] == 0) missing.push_back(static_cast<int64_t>(i));
    if (seen_[i] > 1) repeated.push_back(static_cast<int64_t>(i));
  }
  std::string text;
  auto add = [&](const std::string& part) { text += (text.empty() ? "" : "; ") + part; };
  if (!missing.empty()) add("indices never delivered: " + name_some(missing));
  if (!repeated.empty()) add("indices delivered more than once: " + name_some(repeated));
  if (!out_of_range_.empty()) add("indices out of range: " + name_some(out_of_range_));
  if (wrong_count_ > 0) {
    std::string first;
    for (const std::string& w : wrong_) first += (first.empty() ? "" : ", ") + w;
    add(std::to_string(wrong_count_) + " samples with wrong contents (" + first + ")");
  }
  return text;
}

}  // namespace bench::soak
