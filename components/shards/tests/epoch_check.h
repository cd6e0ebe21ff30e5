// The shard tests' Loader options, and one epoch of a Loader over their corpus
// (shard_test_support.h), every batch checked: each sample's "idx" is its index and its
// "txt" (pad_collate) is txt_of(index).
#pragma once

#include <catch2/catch.hpp>

#include "components/shards/tests/shard_test_support.h"

#include <mploader/loader.h>

#include <ATen/ATen.h>

#include <map>

namespace shard_test {

// The shard tests' Loader: 2 workers, batches of 4 (pad_collate), a shuffle buffer of 8.
inline mploader::LoaderOptions loader_options(mploader::StartMethod method) {
  mploader::LoaderOptions o;
  o.num_workers = 2;
  o.batch_size = 4;
  o.collate = mploader::pad_collate();
  o.shuffle = true;
  o.shuffle_buffer = 8;
  o.seed = 5;
  o.start_method = method;
  return o;
}

// The epoch's deliveries: how many times each index arrived.
inline std::map<int64_t, int> run_epoch(mploader::Loader& loader, uint64_t epoch) {
  loader.set_epoch(epoch);
  std::map<int64_t, int> seen;
  for (mploader::Batch& b : loader) {
    REQUIRE(b["idx"].size(0) == static_cast<int64_t>(b.indices().size()));
    for (size_t i = 0; i < b.indices().size(); ++i) {
      const int64_t g = b.indices()[i];
      const auto row = static_cast<int64_t>(i);
      REQUIRE(b["idx"][row].item<int64_t>() == g);
      const std::string want = txt_of(g);
      REQUIRE(b["txt_lengths"][row].item<int64_t>() == static_cast<int64_t>(want.size()));
      REQUIRE(bytes_of(b["txt"][row].slice(0, 0, want.size()).contiguous()) == want);
      ++seen[g];
    }
  }
  return seen;
}

// Every index of [0, total) arrived exactly once.
inline void check_once(const std::map<int64_t, int>& seen, int64_t total) {
  REQUIRE(static_cast<int64_t>(seen.size()) == total);
  for (const auto& [g, count] : seen) {
    CAPTURE(g);
    REQUIRE(count == 1);
    REQUIRE(g < total);
  }
}

}  // namespace shard_test
