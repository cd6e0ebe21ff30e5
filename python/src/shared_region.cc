#include "shared_region.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace mploader::python::shared {
namespace {

constexpr char kMagic[8] = {'M', 'P', 'L', 'S', 'H', 'A', 'R', 'E'};
constexpr uint32_t kVersion = 1;
constexpr size_t kWriteChunk = size_t{1} << 20;
constexpr int kAllSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
constexpr const char* kLabel = "mploader-shared-container";

uint64_t fold_multiply(uint64_t a, uint64_t b) {
  const unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

uint64_t load_tail(const char* p, size_t n) {
  uint64_t v = 0;
  std::memcpy(&v, p, n);
  return v;
}

// Each entry's table slot: linear probing from its hash. The table is at most half full.
void place(uint64_t* slots, uint64_t capacity, uint64_t hash, uint64_t index) {
  const uint64_t mask = capacity - 1;
  for (uint64_t s = hash & mask;; s = (s + 1) & mask) {
    if (slots[s] == 0) {
      slots[s] = (slot_tag(hash) << kSlotIndexBits) | (index + 1);
      return;
    }
  }
}

uint64_t table_capacity(uint64_t count) {
  uint64_t capacity = 8;
  while (capacity < 2 * count) capacity *= 2;
  return capacity;
}

}  // namespace

uint64_t hash_bytes(std::string_view bytes) {
  constexpr uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull;
  const char* p = bytes.data();
  size_t n = bytes.size();
  uint64_t h = fold_multiply(n ^ k0, k1);
  for (; n >= 8; p += 8, n -= 8) h = fold_multiply(h ^ load_tail(p, 8), k1);
  h = fold_multiply(h ^ load_tail(p, n) ^ (uint64_t{n} << 56), k0);
  return fold_multiply(h, k1);
}

ipc::Result<std::unique_ptr<RegionBuilder>> RegionBuilder::start(Kind kind) {
  ipc::UniqueFd fd(memfd_create(kLabel, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) return ipc::last_error("memfd_create", "a shared container");
  return std::unique_ptr<RegionBuilder>(new RegionBuilder(kind, std::move(fd)));
}

ipc::Status RegionBuilder::add(std::string_view encoded, uint64_t key_hash) {
  offsets_.push_back(written_ + pending_.size());
  if (kind_ == Kind::kDict) hashes_.push_back(key_hash);
  pending_.append(encoded);
  return pending_.size() >= kWriteChunk ? flush() : ipc::Status(ipc::Ok{});
}

ipc::Status RegionBuilder::flush() {
  for (size_t done = 0; done < pending_.size();) {
    const ssize_t n = pwrite(fd_.get(), pending_.data() + done, pending_.size() - done,
                             static_cast<off_t>(written_ + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ipc::last_error("pwrite", "writing a shared container's entries");
    done += static_cast<size_t>(n);
  }
  written_ += pending_.size();
  pending_.clear();
  return ipc::Ok{};
}

void RegionBuilder::fill_tables(char* region, uint64_t offsets_at, uint64_t capacity) const {
  auto* header = reinterpret_cast<Header*>(region);
  std::memcpy(header->magic, kMagic, sizeof kMagic);
  header->kind = kind_;
  header->version = kVersion;
  header->count = offsets_.size();
  header->offsets_at = offsets_at;
  header->slots_at = offsets_at + offsets_.size() * sizeof(uint64_t);
  header->capacity = capacity;
  header->total_bytes = header->slots_at + capacity * sizeof(uint64_t);
  std::memcpy(region + header->offsets_at, offsets_.data(), offsets_.size() * sizeof(uint64_t));
  auto* slots = reinterpret_cast<uint64_t*>(region + header->slots_at);
  for (uint64_t i = 0; i < hashes_.size(); ++i) place(slots, capacity, hashes_[i], i);
}

ipc::Result<std::shared_ptr<const ipc::SealedBytes>> RegionBuilder::finish() {
  if (ipc::Status flushed = flush(); !flushed.ok()) return flushed.error();
  const uint64_t capacity = kind_ == Kind::kDict ? table_capacity(offsets_.size()) : 0;
  const uint64_t offsets_at = (written_ + 7) / 8 * 8;  // the tables are read as uint64s
  const uint64_t total = offsets_at + (offsets_.size() + capacity) * sizeof(uint64_t);
  if (ftruncate(fd_.get(), static_cast<off_t>(total)) != 0) {
    return ipc::last_error("ftruncate", "a shared container of " + std::to_string(total) +
                                            " bytes");
  }
  void* mapped = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
  if (mapped == MAP_FAILED) return ipc::last_error("mmap", "a shared container's tables");
  fill_tables(static_cast<char*>(mapped), offsets_at, capacity);
  munmap(mapped, total);
  if (fcntl(fd_.get(), F_ADD_SEALS, kAllSeals) != 0) {
    return ipc::last_error("fcntl(F_ADD_SEALS)", "a shared container");
  }
  return ipc::SealedBytes::adopt(std::move(fd_));
}

std::optional<Region> Region::open(std::shared_ptr<const ipc::SealedBytes> memory,
                                   std::string* why) {
  const std::string_view bytes = memory->view();
  Header h{};
  if (bytes.size() < sizeof h) {
    *why = "it holds " + std::to_string(bytes.size()) + " bytes, fewer than a header";
    return std::nullopt;
  }
  std::memcpy(&h, bytes.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.version != kVersion ||
      (h.kind != Kind::kList && h.kind != Kind::kDict)) {
    *why = "it is not a shared container of this version of mploader";
    return std::nullopt;
  }
  const bool table_ok = h.kind == Kind::kList ? h.capacity == 0
                                              : h.capacity >= 2 * h.count &&
                                                    (h.capacity & (h.capacity - 1)) == 0;
  const uint64_t limit = bytes.size() / sizeof(uint64_t);
  if (h.total_bytes != bytes.size() || h.count > limit || h.capacity > limit || !table_ok ||
      h.offsets_at < sizeof h || h.offsets_at % alignof(uint64_t) != 0 ||
      h.slots_at != h.offsets_at + h.count * sizeof(uint64_t) ||
      h.total_bytes != h.slots_at + h.capacity * sizeof(uint64_t)) {
    *why = "its header's sizes do not add up to its " + std::to_string(bytes.size()) + " bytes";
    return std::nullopt;
  }
  return Region(std::move(memory));
}

std::string_view Region::entry(uint64_t i) const {
  if (i >= header_->count) return {};
  const std::string_view all = bytes();
  uint64_t at = 0;
  std::memcpy(&at, all.data() + header_->offsets_at + i * sizeof(uint64_t), sizeof at);
  if (at < sizeof(Header) || at >= header_->offsets_at) return {};
  return all.substr(at, header_->offsets_at - at);
}

uint64_t Region::slot(uint64_t s) const {
  uint64_t value = 0;
  std::memcpy(&value,
              bytes().data() + header_->slots_at + (s & (header_->capacity - 1)) * sizeof value,
              sizeof value);
  return value;
}

}  // namespace mploader::python::shared
