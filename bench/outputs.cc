// CSV, gnuplot script + data + PNG, and the terminal progress bar.
#include "bench/outputs.h"

#include <unistd.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <stdexcept>
#include <tuple>

namespace bench {

namespace {

std::ofstream open_for_writing(const std::string& path, const char* option) {
  std::ofstream out(path);
  if (!out) {
    throw std::runtime_error(std::string(option) + ": cannot write '" + path +
                             "'; check that its folder exists and is writable");
  }
  return out;
}

void check_written(std::ofstream& out, const std::string& path) {
  out.flush();
  if (!out) throw std::runtime_error("cannot finish writing '" + path + "' (disk full?)");
}

std::string stem_of(const std::string& png) {
  const std::string ext = ".png";
  if (png.size() > ext.size() && png.compare(png.size() - ext.size(), ext.size(), ext) == 0) {
    return png.substr(0, png.size() - ext.size());
  }
  return png;
}

}  // namespace

void write_csv(const std::string& path, const std::vector<RunResult>& rows) {
  std::ofstream out = open_for_writing(path, "--csv");
  out << "loader,workload,workers,batch_size,prefetch,samples_per_s,mb_per_s,first_batch_s,"
         "wait_p50_ms,wait_p99_ms,utilisation,busy_ms_per_batch,head_of_line_s,batches,wall_s,"
         "teardown_s,corrupt,read_ms,decode_ms,transform_ms,write_ms,handoff_ms,on_cpu\n";
  for (const RunResult& r : rows) {
    char line[512];
    std::snprintf(line, sizeof line,
                  "%s,%s,%lld,%lld,%lld,%.3f,%.3f,%.6f,%.4f,%.4f,%.4f,%.4f,%.6f,%lld,%.4f,%.4f,"
                  "%lld",
                  r.config.loader.c_str(), r.config.workload.c_str(),
                  static_cast<long long>(r.config.workers),
                  static_cast<long long>(r.config.batch_size),
                  static_cast<long long>(r.config.prefetch), r.samples_per_s, r.mb_per_s,
                  r.first_batch_s, r.wait_p50_ms, r.wait_p99_ms, r.utilisation,
                  r.busy_ms_per_batch, r.head_of_line_s, static_cast<long long>(r.batches),
                  r.wall_s, r.teardown_s, static_cast<long long>(r.corrupt));
    out << line;
    // The stage split: mploader rows have one, the others -1.
    for (size_t k = 0; k < 5; ++k) {
      const double ms = k < r.stage_ms_per_batch.size() ? r.stage_ms_per_batch[k] : -1;
      std::snprintf(line, sizeof line, ",%.4f", ms);
      out << line;
    }
    std::snprintf(line, sizeof line, ",%.4f\n", r.on_cpu);
    out << line;
  }
  check_written(out, path);
}

namespace {

// Writes the gnuplot script `gp` (one panel per workload) and its data `dat`.
void write_gnuplot_files(const std::string& png, const std::string& gp, const std::string& dat,
                         const std::vector<RunResult>& rows) {
  // One gnuplot data block (separated by two blank lines) per loader x configuration.
  using Key = std::tuple<std::string, std::string, int64_t, int64_t>;
  std::map<Key, std::vector<const RunResult*>> series;
  for (const RunResult& r : rows) {
    if (r.config.workers < 0) continue;  // mploader-auto: no worker count to plot it at
    series[{r.config.workload, r.config.loader, r.config.batch_size, r.config.prefetch}]
        .push_back(&r);
  }
  std::vector<std::string> workloads;  // one panel each, in name order
  for (const auto& entry : series) {
    if (workloads.empty() || workloads.back() != std::get<0>(entry.first)) {
      workloads.push_back(std::get<0>(entry.first));
    }
  }
  std::ofstream data = open_for_writing(dat, "--plot");
  std::ofstream script = open_for_writing(gp, "--plot");
  script << "# Redraw with: gnuplot " << gp << "\n"
         << "set terminal pngcairo noenhanced size " << 560 * workloads.size() + 200 << ",520\n"
         << "set output '" << png << "'\n"
         << "set multiplot layout 1," << workloads.size()
         << " title 'mploader-bench: samples/s against num_workers'\n"
         << "set xlabel 'num_workers'\nset ylabel 'samples/s'\nset key top left\n"
         << "set grid\nset xtics 1\nset yrange [0:*]\n";
  int block = 0;
  std::string panel;
  for (const auto& [key, points] : series) {
    const auto& [workload, loader, batch, prefetch] = key;
    data << "# " << loader << " " << workload << " batch=" << batch << " prefetch=" << prefetch
         << "\n";
    for (const RunResult* r : points) data << r->config.workers << ' ' << r->samples_per_s << '\n';
    data << "\n\n";
    if (workload != panel) {
      script << (panel.empty() ? "" : "\n") << "set title '" << workload << "'\nplot";
      panel = workload;
    } else {
      script << ", \\\n    ";
    }
    script << " '" << dat << "' index " << block << " using 1:2 with linespoints title '"
           << loader << " b=" << batch << " p=" << prefetch << "'";
    ++block;
  }
  script << "\nunset multiplot\n";
  check_written(data, dat);
  check_written(script, gp);
}

}  // namespace

std::string write_plot(const std::string& png, const std::vector<RunResult>& rows) {
  const std::string stem = stem_of(png), dat = stem + ".dat", gp = stem + ".gp";
  write_gnuplot_files(png, gp, dat, rows);
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    return "plot: gnuplot is not installed (apt-get install gnuplot-nox); wrote " + gp +
           " and " + dat + ": run gnuplot " + gp + " to draw " + png;
  }
  const int status = std::system(("gnuplot '" + gp + "'").c_str());
  if (status != 0) {
    return "plot: gnuplot " + gp + " failed (status " + std::to_string(status) +
           "); the script and " + dat + " are kept";
  }
  return "plot: wrote " + png + " (script " + gp + ", data " + dat + ")";
}

Progress::Progress(int64_t total) : total_(total), enabled_(isatty(STDERR_FILENO) == 1) {}

void Progress::step(const std::string& what) {
  if (!enabled_) return;
  constexpr int kWidth = 24;
  const int filled = total_ > 0 ? static_cast<int>(kWidth * done_ / total_) : 0;
  std::cerr << "\r\033[K[" << std::string(filled, '#') << std::string(kWidth - filled, '.')
            << "] " << done_ + 1 << "/" << total_ << " " << what << std::flush;
  ++done_;
}

void Progress::finish() {
  if (enabled_) std::cerr << "\r\033[K" << std::flush;
}

}  // namespace bench
