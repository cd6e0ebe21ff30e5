// mploader-soak's data: samples that carry their own index and a payload derived from it, so
// that the soak can check every delivered batch from its contents alone, and a ledger that
// checks one epoch's deliveries: each index exactly once, each payload intact.
#pragma once

#include <mploader/batch.h>
#include <mploader/dataset.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace bench::soak {

// `samples` samples; sample i is "index" (int64 scalar, = i) and "payload" (uint8
// [payload_bytes], byte j = payload_byte(i, j)).
std::shared_ptr<mploader::Dataset> make_indexed_dataset(int64_t samples, int64_t payload_bytes);

// Byte `j` of sample `index`'s payload: differs between neighbouring samples and positions.
inline uint8_t payload_byte(int64_t index, int64_t j) {
  return static_cast<uint8_t>((index * 131 + j) % 251);
}

// One epoch's deliveries. Not thread-safe (the soak's loop alone uses it).
class DeliveryLedger {
 public:
  DeliveryLedger(int64_t samples, int64_t payload_bytes);
  // Forgets the previous epoch.
  void start_epoch();
  // Counts each index of `batch` and checks its fields against Batch::indices().
  void record(const mploader::Batch& batch);
  // "" when every index came exactly once with its payload; else what went wrong, naming up
  // to ten indices of each kind.
  std::string problems() const;

 private:
  void note_wrong(int64_t index, const std::string& what);

  int64_t payload_bytes_;
  std::vector<uint32_t> seen_;       // deliveries per index this epoch
  std::vector<int64_t> out_of_range_;
  std::vector<std::string> wrong_;   // the first few wrong fields, described
  int64_t wrong_count_ = 0;
};

}  // namespace bench::soak
