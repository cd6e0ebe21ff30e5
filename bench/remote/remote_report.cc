// The remote workload's table and ratios (remote_report.h).
#include "bench/remote/remote_report.h"

#include "bench/report.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace bench {
namespace {

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

const RemoteRow* find(const std::vector<RemoteRow>& rows, const std::string& loader,
                      const std::string& source, const std::string& cache, int64_t workers) {
  for (const RemoteRow& r : rows) {
    if (r.run.config.loader == loader && r.source == source && r.cache == cache &&
        r.run.config.workers == workers) {
      return &r;
    }
  }
  return nullptr;
}

// "mploader http cold / webdataset http cold: 4.02x", when both rows are there.
void print_ratio(std::ostream& out, int64_t workers, const std::string& what,
                 const RemoteRow* a, const RemoteRow* b) {
  if (a == nullptr || b == nullptr || b->run.samples_per_s <= 0) return;
  out << "  " << workers << (workers == 1 ? " worker:  " : " workers: ") << what << ' '
      << fixed(a->run.samples_per_s / b->run.samples_per_s, 2) << "x\n";
}

void print_table(std::ostream& out, const std::vector<RemoteRow>& rows) {
  char line[160];
  std::snprintf(line, sizeof line, "%-6s %-5s %-22s %7s %11s %14s %14s\n", "source", "cache",
                "loader", "workers", "samples/s", "first batch s", "downloaded MB");
  out << line;
  for (const RemoteRow& r : rows) {
    const std::string mb =
        r.downloaded_bytes < 0 ? "-" : fixed(static_cast<double>(r.downloaded_bytes) / 1e6, 1);
    std::snprintf(line, sizeof line, "%-6s %-5s %-22s %7lld %11s %14s %14s\n", r.source.c_str(),
                  r.cache.empty() ? "-" : r.cache.c_str(), r.run.config.loader.c_str(),
                  static_cast<long long>(r.run.config.workers),
                  fixed(r.run.samples_per_s, 0).c_str(), fixed(r.run.first_batch_s, 3).c_str(),
                  mb.c_str());
    out << line;
  }
}

}  // namespace

void print_remote(std::ostream& out, const RemoteBenchConfig& config,
                  const std::vector<RemoteRow>& rows, int64_t corpus_bytes) {
  if (config.json) {
    for (const RemoteRow& r : rows) {
      nlohmann::ordered_json j = nlohmann::ordered_json::parse(json_line(r.run));
      j["source"] = r.source;
      j["cache"] = r.cache;
      j["downloaded_bytes"] = r.downloaded_bytes;
      out << j.dump() << '\n';
    }
    return;
  }
  out << "remote: " << (rows.empty() ? 0 : rows.front().run.dataset_size) << " samples in "
      << fixed(static_cast<double>(corpus_bytes) / 1e6, 1) << " MB of tar shards, batch "
      << config.batch_size << ", " << config.batches << " batches a run; nginx ("
      << (config.http_rate == "0" ? "no rate limit" : "limit_rate " + config.http_rate)
      << ") and moto_server on 127.0.0.1\n";
  print_table(out, rows);
  out << "\nsamples/s ratios:\n";
  for (int64_t w : config.workers) {
    const RemoteRow* local = find(rows, "mploader", "local", "", w);
    for (const char* source : {"http", "s3"}) {
      const std::string s = source;
      print_ratio(out, w, "mploader " + s + " warm / mploader local",
                  find(rows, "mploader", s, "warm", w), local);
    }
    print_ratio(out, w, "mploader http cold / the same without read-ahead",
                find(rows, "mploader", "http", "cold", w),
                find(rows, "mploader-no-read-ahead", "http", "cold", w));
    print_ratio(out, w, "mploader http cold / webdataset http cold",
                find(rows, "mploader", "http", "cold", w),
                find(rows, "webdataset", "http", "cold", w));
    print_ratio(out, w, "mploader s3 cold / mosaic s3 cold",
                find(rows, "mploader", "s3", "cold", w), find(rows, "mosaic", "s3", "cold", w));
  }
}

}  // namespace bench
