#include "tools/soak/run.h"

#include "tools/soak/dataset.h"
#include "tools/soak/inject.h"
#include "tools/soak/kills.h"
#include "tools/soak/log.h"
#include "tools/soak/probe.h"

#include <mploader/errors.h>
#include <mploader/loader.h>

#include <stdlib.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <thread>

namespace bench::soak {
namespace {

using Clock = std::chrono::steady_clock;

// One of the two loaders that take epochs in turn, and what the soak did to it.
struct LoaderTrack {
  std::unique_ptr<mploader::Loader> loader;
  bool persistent = false;
  std::set<int> killed;  // worker pids this soak killed and has not yet seen diagnosed
  int64_t kills = 0;
  int64_t restarts = 0;  // the loader's restarts, counted in its own epochs
  // Kills no restart answered because the loader did not need to: the worker died after the
  // epoch's last wait, and the epoch's end stopped the (non-persistent) pool anyway.
  int64_t absorbed = 0;
  // Kills still to cost a restart. A loader notices a death only when it waits on that
  // worker; a persistent one may do so in its next epoch, where the restart counts against
  // that epoch's max_restarts_per_epoch, so the soak kills fewer there.
  int64_t pending() const { return kills - restarts - absorbed; }
};

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

std::string mib(int64_t kib) { return fixed(static_cast<double>(kib) / 1024.0, 1); }

// A folder for the killed workers' crash reports (mploader writes one per death).
std::string make_crash_dir() {
  char dir[] = "/tmp/mploader-soak-crashes-XXXXXX";
  if (!mkdtemp(dir)) {
    throw std::runtime_error("cannot create a folder under /tmp for the crash reports; give "
                             "--crash-dir");
  }
  return dir;
}

class Soak {
 public:
  Soak(const SoakOptions& options, std::ostream& out)
      : options_(options), out_(out), random_(options.seed),
        ledger_(options.samples, options.payload_bytes),
        log_tally_(LoaderLogTally::install()), injector_(options.inject) {}

  int run();

 private:
  mploader::LoaderOptions loader_options(bool persistent) const;
  void build_loaders();
  std::string run_epoch(LoaderTrack& track, int64_t epoch);
  void settle(LoaderTrack& track);
  void check_flat(int64_t epoch, const ProcessCounts& counts);
  std::string death_problem() const;
  void print_header() const;
  void print_progress(int64_t epoch, const ProcessCounts& counts) const;
  int finish(const std::string& failure);
  int64_t total(int64_t LoaderTrack::*field) const {
    return tracks_[0].*field + tracks_[1].*field;
  }

  const SoakOptions& options_;
  std::ostream& out_;
  std::mt19937_64 random_;
  DeliveryLedger ledger_;
  LoaderLogTally& log_tally_;
  Injector injector_;  // --inject: planted in epoch check_from + 1
  std::string crash_dir_;
  LoaderTrack tracks_[2];  // [0] persistent, odd epochs; [1] not, even epochs
  Clock::time_point start_ = Clock::now();
  std::optional<ProcessCounts> reference_;  // the counts after epoch check_from
  std::string first_drift_;                 // the first epoch that was not flat, described
  double largest_rss_change_ = 0;           // percent, the largest in magnitude
};

mploader::LoaderOptions Soak::loader_options(bool persistent) const {
  mploader::LoaderOptions o;
  o.batch_size = options_.batch_size;
  o.num_workers = options_.workers;
  o.shuffle = true;
  o.seed = options_.seed;
  o.shm_dir = options_.shm_dir;
  o.crash_dir = crash_dir_;
  o.max_restarts_per_epoch = options_.max_kills;
  o.persistent_workers = persistent;
  // A hang must end the soak with a verdict, not stall it: 60 s is far beyond any batch here.
  o.timeout = std::chrono::seconds(60);
  return o;
}

void Soak::build_loaders() {
  crash_dir_ = options_.crash_dir.empty() ? make_crash_dir() : options_.crash_dir;
  auto data = make_indexed_dataset(options_.samples, options_.payload_bytes);
  for (int t = 0; t < 2; ++t) {
    tracks_[t].persistent = t == 0;
    tracks_[t].loader = std::make_unique<mploader::Loader>(data, loader_options(t == 0));
  }
}

// Runs epoch `epoch` (1-based) on `track`, killing workers as planned. Returns what was wrong
// with its deliveries ("" when each index came exactly once).
std::string Soak::run_epoch(LoaderTrack& track, int64_t epoch) {
  mploader::Loader& loader = *track.loader;
  loader.set_epoch(static_cast<uint64_t>(epoch - 1));
  const std::vector<int64_t> kills =
      plan_kills(random_, options_.kill_probability, options_.max_kills - track.pending(),
                 loader.batches_per_epoch());
  const int64_t restarts_before = log_tally_.restarts();
  ledger_.start_epoch();
  size_t next_kill = 0;
  const bool inject = epoch == options_.check_from + 1;
  for (int64_t batch = 0; std::optional<mploader::Batch> b = loader.next(); ++batch) {
    const int times = inject ? injector_.times_recorded(batch) : 1;
    for (int t = 0; t < times; ++t) ledger_.record(*b);
    for (; next_kill < kills.size() && kills[next_kill] == batch; ++next_kill) {
      if (kill_random_worker(loader, random_, track.killed) > 0) ++track.kills;
    }
  }
  track.restarts += log_tally_.restarts() - restarts_before;
  if (inject) injector_.plant();
  if (!track.persistent) track.absorbed += track.pending();  // its stopped pool reaped them
  return ledger_.problems();
}

// A persistent loader's Supervisor diagnoses a death on its own thread, writing a crash report,
// also after the epoch (a worker killed near its end). Measuring meanwhile would catch the
// report's descriptor: wait (at most 10 s) until every worker the soak killed is diagnosed.
// Then the soak forgets the pids it no longer needs, so that its own bookkeeping stays flat.
void Soak::settle(LoaderTrack& track) {
  const Clock::time_point give_up = Clock::now() + std::chrono::seconds(10);
  for (auto pid = track.killed.begin(); pid != track.killed.end();) {
    // A non-persistent loader's pool, Supervisor and all, stopped with the epoch.
    while (track.persistent && !log_tally_.diagnosed(*pid) && Clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    // A diagnosed worker is a zombie or gone: kill_random_worker() passes it by anyway.
    if (track.persistent && !log_tally_.diagnosed(*pid)) {
      ++pid;  // still undiagnosed after 10 s: kept, the counts will tell
      continue;
    }
    log_tally_.forget(*pid);
    pid = track.killed.erase(pid);
  }
}

// From check_from on: the exact counts equal epoch check_from's, RSS within 1 % of it.
void Soak::check_flat(int64_t epoch, const ProcessCounts& counts) {
  if (epoch < options_.check_from) return;
  if (!reference_) {
    reference_ = counts;
    return;
  }
  const std::string label = "epoch " + std::to_string(options_.check_from);
  const double change = rss_change_percent(counts, *reference_);
  if (std::fabs(change) > std::fabs(largest_rss_change_)) largest_rss_change_ = change;
  if (!first_drift_.empty()) return;
  std::string drift = count_difference(counts, *reference_, label);
  if (drift.empty() && std::fabs(change) > 1.0) {
    drift = "RSS " + mib(counts.rss_kib) + " MiB is " + fixed(change, 2) + " % from " + label +
            "'s " + mib(reference_->rss_kib) + " MiB (heap " + mib(counts.rss_anon_kib) +
            " MiB, was " + mib(reference_->rss_anon_kib) + "; shared memory " +
            mib(counts.rss_shmem_kib) + " MiB, was " + mib(reference_->rss_shmem_kib) + ")";
  }
  if (!drift.empty()) first_drift_ = "epoch " + std::to_string(epoch) + ": " + drift;
}

void Soak::print_header() const {
  out_ << "mploader-soak: " << options_.epochs << " epochs of " << options_.samples
       << " samples (batch " << options_.batch_size << ", " << options_.payload_bytes
       << "-byte payload), " << options_.workers << " fork workers; persistent (odd epochs) and "
       << "non-persistent (even) loaders; kills in " << fixed(100 * options_.kill_probability, 0)
       << " % of epochs, at most " << options_.max_kills << " (max_restarts_per_epoch); seed "
       << options_.seed << "; flat from epoch " << options_.check_from << '\n'
       << "epoch  kills  restarts  fds  threads  children  shm(named+mapped)  rss_MiB  "
          "elapsed_s\n";
}

void Soak::print_progress(int64_t epoch, const ProcessCounts& c) const {
  char line[160];
  const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
  const std::string shm = std::to_string(c.shm_named) + "+" + std::to_string(c.shm_mapped);
  std::snprintf(line, sizeof line, "%5lld  %5lld  %8lld  %3lld  %7lld  %8lld  %-17s  %7s  %9.1f",
                static_cast<long long>(epoch), static_cast<long long>(total(&LoaderTrack::kills)),
                static_cast<long long>(total(&LoaderTrack::restarts)),
                static_cast<long long>(c.fds), static_cast<long long>(c.threads),
                static_cast<long long>(c.children), shm.c_str(), mib(c.rss_kib).c_str(),
                elapsed);
  out_ << line << std::endl;
}

int Soak::run() {
  print_header();
  std::string failure;
  try {
    build_loaders();
  } catch (const std::exception& e) {
    return finish(std::string("building the loaders: ") + e.what());
  }
  for (int64_t epoch = 1; epoch <= options_.epochs && failure.empty(); ++epoch) {
    try {
      failure = run_epoch(tracks_[(epoch - 1) % 2], epoch);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    if (!failure.empty()) {
      failure = "epoch " + std::to_string(epoch) + ": " + failure;
      break;
    }
    settle(tracks_[(epoch - 1) % 2]);
    const ProcessCounts counts = measure_process_steady(options_.shm_dir);
    check_flat(epoch, counts);
    if (epoch % options_.report_every == 0 || epoch == options_.epochs) {
      print_progress(epoch, counts);
    }
  }
  if (failure.empty()) failure = first_drift_;
  return finish(failure);
}

// What the loaders' own messages say against the kills: every restart answers a diagnosed
// SIGKILL, and no worker died of anything else. "" when that holds.
std::string Soak::death_problem() const {
  const int64_t kills = total(&LoaderTrack::kills), restarts = total(&LoaderTrack::restarts);
  const int64_t diagnosed = log_tally_.sigkill_deaths(), other = log_tally_.other_deaths();
  if (other > 0) {
    return std::to_string(other) + " workers died of something else than the soak's SIGKILL "
           "(their lines are on stderr)";
  }
  if (restarts > diagnosed || diagnosed > kills) {
    return "the loaders restarted " + std::to_string(restarts) + " workers and diagnosed " +
           std::to_string(diagnosed) + " deaths by SIGKILL from outside, but the soak killed " +
           std::to_string(kills);
  }
  return "";
}

// Prints the verdict; removes the crash folder the soak made.
int Soak::finish(const std::string& failure) {
  const std::string problem = failure.empty() ? death_problem() : failure;
  const std::string deaths =
      std::to_string(total(&LoaderTrack::kills)) + " workers killed: " +
      std::to_string(total(&LoaderTrack::restarts)) + " restarted by their loader, " +
      std::to_string(total(&LoaderTrack::absorbed)) + " died after their epoch's last batch, " +
      std::to_string(tracks_[0].pending()) + " left for the next epoch; " +
      std::to_string(log_tally_.sigkill_deaths()) + " deaths diagnosed as SIGKILL from outside";
  if (!problem.empty()) {
    out_ << "FAIL: " << problem << " (" << deaths << ")" << std::endl;
  } else {
    const ProcessCounts& r = *reference_;
    out_ << "PASS: " << options_.epochs << " epochs of " << options_.samples
         << " samples, every index delivered exactly once in each; " << deaths
         << "; from epoch " << options_.check_from << " to " << options_.epochs << " fds "
         << r.fds << ", threads " << r.threads << ", children " << r.children << ", shm "
         << r.shm_named << " named + " << r.shm_mapped << " mapped stayed equal and RSS within "
         << fixed(largest_rss_change_, 2) << " % of " << mib(r.rss_kib)
         << " MiB (limit 1 %)" << std::endl;
  }
  for (LoaderTrack& t : tracks_) t.loader.reset();  // its workers end before the folder goes
  if (options_.crash_dir.empty() && !crash_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(crash_dir_, ignored);
  }
  return problem.empty() ? 0 : 1;
}

}  // namespace

int run_soak(const SoakOptions& options, std::ostream& out) {
  Soak soak(options, out);
  return soak.run();
}

}  // namespace bench::soak
