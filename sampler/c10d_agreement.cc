// verify_ranks_agree: one allgather over a c10d process group of what each rank's sampler will
// do this epoch, checked identically on every rank, so a mismatch is the same clear error
// everywhere instead of a collective that waits for ever on the rank with fewer batches.
// Kept in its own file: the c10d headers are heavy, and a libtorch without them still builds
// the rest (verify_ranks_agree then says so).
// Thread-safety: reentrant; the process group's own rules apply to concurrent collectives.
#include <mploader/errors.h>
#include <mploader/rank_agreement.h>

#include "util/c10d_collectives.h"

#include <cstring>
#include <string>
#include <vector>

namespace mploader {

#ifdef MPLOADER_HAVE_C10D
namespace {

// One row per rank, every value as int64 (unsigned ones bit-cast).
enum Field { kGroupRank, kGroupSize, kRank, kWorld, kDataset, kPrint, kSeed, kEpoch, kBatches,
             kFields };

struct Compared {
  Field field;
  const char* what;
  const char* fix;
};

// In the order a root cause is most likely: dataset first, derived counts last.
const Compared kCompared[] = {
    {kDataset, "the dataset size", "every rank must load the same dataset"},
    {kPrint, "the fingerprint of the data and batching options",
     "every rank must build its sampler from the same lengths and the same BucketOptions, or "
     "its Loader over a StreamingDataset from the same shards with the same batch_size, "
     "drop_last, shuffle, shuffle_buffer, uneven_ranks and num_workers"},
    {kSeed, "the seed", "give every rank the same seed"},
    {kEpoch, "the epoch", "call set_epoch with the same epoch on every rank"},
    {kBatches, "the number of batches this epoch",
     "a sampler whose ranks get unequal batch counts would hang the job; use "
     "DistributedBucketSampler or DistributedSampler"},
};

int64_t bits(uint64_t v) {
  int64_t out;
  std::memcpy(&out, &v, sizeof out);
  return out;
}

std::string value_text(Field f, int64_t v) {
  if (f == kPrint || f == kSeed || f == kEpoch) {
    uint64_t u;
    std::memcpy(&u, &v, sizeof u);
    return std::to_string(u);
  }
  return std::to_string(v);
}

[[noreturn]] void disagree(const std::vector<std::vector<int64_t>>& rows, const Compared& c) {
  std::string list;
  int shown = 0;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (r > 0 && rows[r][c.field] == rows[0][c.field]) continue;
    if (++shown > 8) {
      list += ", ...";
      break;
    }
    list += (list.empty() ? "" : ", ") + std::string("rank ") + std::to_string(r) + ": " +
            value_text(c.field, rows[r][c.field]);
  }
  throw OptionError("sampler", std::string("mploader: the ranks disagree on ") + c.what + " (" +
                                   list + "); " + c.fix);
}

void check_rows(const std::vector<std::vector<int64_t>>& rows) {
  for (size_t r = 0; r < rows.size(); ++r) {
    const std::vector<int64_t>& row = rows[r];
    if (row[kRank] != row[kGroupRank] || row[kWorld] != row[kGroupSize]) {
      throw OptionError("rank", "mploader: rank " + std::to_string(row[kGroupRank]) + " of a " +
                                    "process group of " + std::to_string(row[kGroupSize]) +
                                    " built its sampler as rank " + std::to_string(row[kRank]) +
                                    " of " + std::to_string(row[kWorld]) +
                                    "; give the sampler the group's rank and size");
    }
  }
  for (const Compared& c : kCompared) {
    for (const std::vector<int64_t>& row : rows) {
      if (row[c.field] != rows[0][c.field]) disagree(rows, c);
    }
  }
}

// c10d::ProcessGroup and c10d::Backend (libtorch 1.13 and 2.x alike) have the same getRank,
// getSize and allgather.
template <typename Group>
void verify_over(Group& group, const RankAgreement& mine, std::chrono::milliseconds timeout) {
  const int64_t values[kFields] = {group.getRank(),   group.getSize(),    mine.rank,
                                   mine.world_size,   mine.dataset_size,  bits(mine.fingerprint),
                                   bits(mine.seed),   bits(mine.epoch),   mine.batches};
  at::Tensor row = at::empty({kFields}, at::kLong);
  std::memcpy(row.data_ptr<int64_t>(), values, sizeof values);
  std::vector<std::vector<int64_t>> rows;
  for (const at::Tensor& t : detail::allgather(group, row, timeout)) {
    const int64_t* p = t.data_ptr<int64_t>();
    rows.emplace_back(p, p + kFields);
  }
  check_rows(rows);
}

}  // namespace

void verify_ranks_agree(c10d::ProcessGroup& group, const RankAgreement& mine,
                        std::chrono::milliseconds timeout) {
  verify_over(group, mine, timeout);
}

void verify_ranks_agree(c10d::Backend& group, const RankAgreement& mine,
                        std::chrono::milliseconds timeout) {
  verify_over(group, mine, timeout);
}

#else

namespace {

[[noreturn]] void no_c10d() {
  throw Error("mploader: verify_ranks_agree needs c10d, and the libtorch mploader was built "
              "against has no torch/csrc/distributed/c10d headers; build with a libtorch that "
              "has them (Debian: libtorch-dev)");
}

}  // namespace

void verify_ranks_agree(c10d::ProcessGroup&, const RankAgreement&, std::chrono::milliseconds) {
  no_c10d();
}

void verify_ranks_agree(c10d::Backend&, const RankAgreement&, std::chrono::milliseconds) {
  no_c10d();
}

#endif

}  // namespace mploader
