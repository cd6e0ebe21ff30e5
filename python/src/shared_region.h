// The shared memory behind mploader.SharedList and mploader.SharedDict: one sealed memfd,
// written once in the process that builds the container and mapped read-only wherever it is
// read (forked workers inherit the mapping; spawned ones are handed the descriptor).
//
// Reading a Python object writes its reference count, so a worker that reads a parent's list
// or dict copies every page it touches. Here the entries are bytes that no one writes: a read
// decodes a fresh object from them (shared_codec.h) and the pages stay shared.
//
// Layout (native byte order; the region never leaves the machine):
//   Header                      what is below, and where
//   data                        the entries, encoded (a dict's: its key, then its value)
//   uint64 offsets[count]       where each entry starts in the region, in insertion order
//   uint64 slots[capacity]      a dict's open-addressing table: 0 is empty, otherwise the
//                               top 24 bits of the key's hash and 1 + the entry's index
// No Python here.
#pragma once

#include "ipc/sealed_bytes.h"
#include "ipc/status.h"
#include "ipc/unique_fd.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mploader::python::shared {

enum class Kind : uint32_t { kList = 1, kDict = 2 };

struct Header {
  char magic[8];
  Kind kind;
  uint32_t version;
  uint64_t count;
  uint64_t offsets_at;
  uint64_t slots_at;
  uint64_t capacity;  // a power of two; 0 for a list
  uint64_t total_bytes;
};

// The hash of a key's canonical bytes (shared_codec.h): the same in every process, which
// Python's own str hash is not (PYTHONHASHSEED).
uint64_t hash_bytes(std::string_view bytes);

// Writes entries into a new memfd as they come, in one pass; finish() adds the offsets and a
// dict's table, seals the memfd and maps it.
class RegionBuilder {
 public:
  static ipc::Result<std::unique_ptr<RegionBuilder>> start(Kind kind);
  // Appends one entry's encoded bytes; a dict's entry also gives its key's hash.
  ipc::Status add(std::string_view encoded, uint64_t key_hash = 0);
  ipc::Result<std::shared_ptr<const ipc::SealedBytes>> finish();

 private:
  RegionBuilder(Kind kind, ipc::UniqueFd fd) : kind_(kind), fd_(std::move(fd)) {}
  ipc::Status flush();
  void fill_tables(char* region, uint64_t offsets_at, uint64_t capacity) const;

  Kind kind_;
  ipc::UniqueFd fd_;
  uint64_t written_ = sizeof(Header);  // bytes in the memfd, the header's included
  std::string pending_;                // written in large pieces
  std::vector<uint64_t> offsets_;
  std::vector<uint64_t> hashes_;
};

// A mapped region, its header checked: every offset read later is checked against its size,
// so a region from elsewhere (a pickle, a descriptor) cannot make a read leave the mapping.
class Region {
 public:
  // nullopt with the reason in `why` for bytes that are not a region of this version.
  static std::optional<Region> open(std::shared_ptr<const ipc::SealedBytes> memory,
                                    std::string* why);

  Kind kind() const { return header_->kind; }
  uint64_t count() const { return header_->count; }
  std::string_view bytes() const { return memory_->view(); }
  int fd() const { return memory_->fd(); }
  // Entry `i`'s encoded bytes, to the end of the data; empty when its offset is out of range.
  std::string_view entry(uint64_t i) const;
  // A dict's slot `s` (masked to the table), as stored.
  uint64_t slot(uint64_t s) const;
  uint64_t capacity() const { return header_->capacity; }

 private:
  explicit Region(std::shared_ptr<const ipc::SealedBytes> memory)
      : memory_(std::move(memory)),
        header_(reinterpret_cast<const Header*>(memory_->view().data())) {}

  std::shared_ptr<const ipc::SealedBytes> memory_;
  const Header* header_;
};

constexpr uint64_t kSlotIndexBits = 40;
constexpr uint64_t kSlotIndexMask = (uint64_t{1} << kSlotIndexBits) - 1;
inline uint64_t slot_tag(uint64_t hash) { return hash >> kSlotIndexBits; }

}  // namespace mploader::python::shared
