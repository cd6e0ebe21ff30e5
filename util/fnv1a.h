// FNV-1a, 64 bits: the fingerprint of a Loader state's text, of a corpus's shard list and of
// the options a state was made with. Not cryptographic: it catches accidents (a state edited by
// hand, a corpus or options changed between save and resume), not forgery. Numbers go in as
// their 8 bytes, least significant first, so a fingerprint is the same on every machine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace mploader::detail {

class Fnv1a {
 public:
  static constexpr uint64_t kOffsetBasis = 0xcbf29ce484222325ULL;

  // `start`: a hash to continue (a running checksum over many buffers).
  explicit Fnv1a(uint64_t start = kOffsetBasis) : hash_(start) {}

  void add_byte(uint8_t byte) {
    hash_ ^= byte;
    hash_ *= 0x100000001b3ULL;
  }
  void add_bytes(const void* data, size_t size) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < size; ++i) add_byte(bytes[i]);
  }
  void add(const std::string& text) { add_bytes(text.data(), text.size()); }
  void add(uint64_t value) {
    for (int byte = 0; byte < 8; ++byte) add_byte(static_cast<uint8_t>(value >> (8 * byte)));
  }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_;
};

}  // namespace mploader::detail
