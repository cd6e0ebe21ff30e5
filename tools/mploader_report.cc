// mploader-report: prints the crash reports that mploader writes when a worker process dies.
//
//   mploader-report                      # every report in the default crash directory
//   mploader-report DIR FILE.json ...    # a DIR means every *.json in it
//   mploader-report --json               # the reports as JSON lines, for a program
//
// Newest first. A file that is not a readable version-1 report gets one line on stderr and the
// others still print. Exit: 0 all good (or no reports), 1 a file was bad, 2 bad usage or a
// path that does not exist.
#include "supervise/crash_report_format.h"
#include "tools/report_reader.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
namespace key = mploader::crash_report;  // the format, shared with the writer

constexpr const char* kWhereReportsComeFrom =
    "mploader writes one report there each time a worker process dies (to "
    "LoaderOptions::crash_dir, else $MPLOADER_CRASH_DIR, else ./mploader-crashes)";

using mploader::report_tool::load_report;
using mploader::report_tool::print_report;
using mploader::report_tool::Report;

// ---- Finding the files ---------------------------------------------------------------------

std::string default_directory() {
  const char* env = std::getenv("MPLOADER_CRASH_DIR");
  return env != nullptr && *env != '\0' ? env : "mploader-crashes";
}

// Expands each DIR to its *.json files (sorted by name). Returns false, having said why on
// stderr, when a path does not exist; a folder that cannot be listed sets `unreadable`.
bool expand_paths(const std::vector<std::string>& args, bool json_mode,
                  std::vector<std::string>& files, bool& unreadable) {
  bool ok = true;
  for (const std::string& arg : args) {
    std::error_code ec;
    const fs::file_status st = fs::status(arg, ec);
    if (!fs::exists(st)) {
      std::cerr << "mploader-report: " << arg << ": no such file or directory; "
                << kWhereReportsComeFrom << "\n";
      ok = false;
    } else if (!fs::is_directory(st)) {
      files.push_back(arg);
    } else {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(arg, ec)) {
        if (entry.path().extension() == ".json") found.push_back(entry.path().string());
      }
      if (ec) {
        std::cerr << "mploader-report: " << arg << ": cannot list the folder: " << ec.message()
                  << "\n";
        unreadable = true;
      }
      std::sort(found.begin(), found.end());
      if (found.empty() && !ec) {
        (json_mode ? std::cerr : std::cout) << "mploader-report: no crash reports in " << arg
                                            << "; " << kWhereReportsComeFrom << "\n";
      }
      files.insert(files.end(), found.begin(), found.end());
    }
  }
  return ok;
}

int run(const std::vector<std::string>& args, bool json_mode) {
  std::vector<std::string> files;
  bool unreadable = false;
  if (!expand_paths(args.empty() ? std::vector<std::string>{default_directory()} : args,
                    json_mode, files, unreadable)) {
    return 2;
  }
  std::vector<Report> reports;
  bool all_good = !unreadable;
  for (const std::string& path : files) {
    Report r;
    std::string error;
    if (load_report(path, r, error)) {
      reports.push_back(std::move(r));
    } else {
      std::cerr << "mploader-report: " << path << ": " << error << "\n";
      all_good = false;
    }
  }
  std::stable_sort(reports.begin(), reports.end(), [](const Report& a, const Report& b) {
    return a.body[key::top::kUnixTime].get<int64_t>() > b.body[key::top::kUnixTime].get<int64_t>();
  });
  for (const Report& r : reports) {
    if (json_mode) std::cout << r.body.dump() << "\n";
    else print_report(std::cout, r);
  }
  return all_good ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("mploader-report: prints the crash reports mploader writes when a worker "
               "process dies, newest first", "mploader-report");
  std::vector<std::string> paths;
  bool json_mode = false;
  app.add_option("paths", paths, "report files, or folders of them (default: $MPLOADER_CRASH_DIR, "
                 "else ./mploader-crashes)");
  app.add_flag("--json", json_mode, "print each report as one JSON object per line");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << "mploader-report: " << e.what() << "; see mploader-report --help\n";
    return 2;
  }
  return run(paths, json_mode);
}
