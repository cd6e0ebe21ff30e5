// mploader-soak's worker kills: a seeded schedule of SIGKILLs at random batches (the restarts
// that answer them are counted by tools/soak/log.h).
#pragma once

#include <mploader/loader.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

namespace bench::soak {

// The batches of one epoch after whose delivery a worker is killed, in order (a batch may
// appear twice: two kills there). With chance `probability` the epoch has between 1 and
// `budget` kills, else none; none when budget < 1.
std::vector<int64_t> plan_kills(std::mt19937_64& random, double probability, int64_t budget,
                                size_t batches);

// SIGKILLs one of `loader`'s workers, chosen at random among those alive and not in `killed`,
// and adds it to `killed`. Returns its pid, or -1 when no worker qualified.
int kill_random_worker(const mploader::Loader& loader, std::mt19937_64& random,
                       std::set<int>& killed);

}  // namespace bench::soak
