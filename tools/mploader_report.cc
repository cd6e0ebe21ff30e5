// mploader-report: prints the crash reports that mploader writes when a worker process dies.
//
//   mploader-report                      # every report in the default crash directory
//   mploader-report DIR FILE.json ...    # a DIR means every *.json in it
//   mploader-report --json               # the reports as JSON lines, for a program
//
// Newest first. A file that is not a readable version-1 report gets one line on stderr and the
// others still print. Exit: 0 all good (or no reports), 1 a file was bad, 2 bad usage or a
// path that does not exist.
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

constexpr int kVersion = 1;
constexpr const char* kWhereReportsComeFrom =
    "mploader writes one report there each time a worker process dies (to "
    "LoaderOptions::crash_dir, else $MPLOADER_CRASH_DIR, else ./mploader-crashes)";

struct Report {
  std::string path;
  json body;
};

// ---- Checking a report ---------------------------------------------------------------------

enum class Kind { kInteger, kString, kObject, kArray, kObjectOrNull };

struct Field {
  const char* pointer;
  Kind kind;
};

// Everything mploader always writes at the top, and everything this tool prints.
constexpr Field kTopFields[] = {
    {"/time", Kind::kString},           {"/unix_time", Kind::kInteger},
    {"/main_pid", Kind::kInteger},      {"/worker", Kind::kObject},
    {"/worker/id", Kind::kInteger},     {"/worker/pid", Kind::kInteger},
    {"/cause", Kind::kString},          {"/what_happened", Kind::kString},
    {"/evidence", Kind::kString},       {"/remedy", Kind::kString},
    {"/exit", Kind::kObject},           {"/exit/signal", Kind::kInteger},
    {"/exit/exit_code", Kind::kInteger}, {"/crash_record", Kind::kObjectOrNull},
    {"/frames", Kind::kArray},          {"/details", Kind::kObject},
    {"/details/in_flight", Kind::kArray},
};
constexpr Field kFrameFields[] = {{"/address", Kind::kInteger}, {"/function", Kind::kString},
                                  {"/file", Kind::kString},     {"/line", Kind::kInteger},
                                  {"/module", Kind::kString}};
constexpr Field kBatchFields[] = {{"/epoch", Kind::kInteger}, {"/sequence", Kind::kInteger},
                                  {"/indices", Kind::kArray}};
const std::vector<std::string> kCauses = {"shm_full", "oom", "killed", "terminated", "segfault",
                                          "bus_error", "fpe", "illegal_instruction", "abort",
                                          "exit", "hang", "signal"};

// Whether `v` is of `kind`; `name` says what `kind` is, for the message when it is not.
bool has_kind(const json& v, Kind kind, std::string& name) {
  switch (kind) {
    case Kind::kInteger: name = "an integer"; return v.is_number_integer();
    case Kind::kString: name = "a string"; return v.is_string();
    case Kind::kObject: name = "an object"; return v.is_object();
    case Kind::kArray: name = "an array"; return v.is_array();
    case Kind::kObjectOrNull: name = "an object or null"; return v.is_object() || v.is_null();
  }
  return false;
}

// "" when every field is there with its type; else what is wrong, naming the field by its
// JSON pointer under `prefix` (e.g. /frames/2/line).
template <size_t N>
std::string check_fields(const json& j, const Field (&fields)[N], const std::string& prefix) {
  for (const Field& f : fields) {
    const json::json_pointer pointer(f.pointer);
    if (!j.contains(pointer)) return "missing field " + prefix + f.pointer;
    const json& v = j.at(pointer);
    if (std::string want; !has_kind(v, f.kind, want)) {
      return "field " + prefix + f.pointer + " is " + v.type_name() + ", expected " + want;
    }
  }
  return "";
}

std::string check_report(const json& j) {
  if (!j.is_object()) return "not a crash report: the JSON is " + std::string(j.type_name()) +
                             ", not an object";
  if (!j.contains("mploader_crash_report")) {
    return "not an mploader crash report (no \"mploader_crash_report\" version field)";
  }
  const json& version = j["mploader_crash_report"];
  if (!version.is_number_integer() || version.get<int64_t>() != kVersion) {
    return "unsupported report version " + version.dump() + " (this mploader-report reads " +
           "version " + std::to_string(kVersion) + "; use the one of the mploader that wrote it)";
  }
  if (std::string e = check_fields(j, kTopFields, ""); !e.empty()) return e;
  const std::string cause = j["cause"];
  if (std::find(kCauses.begin(), kCauses.end(), cause) == kCauses.end()) {
    return "field /cause is '" + cause + "', not a known cause";
  }
  for (size_t i = 0; i < j["frames"].size(); ++i) {
    const std::string at = "/frames/" + std::to_string(i);
    if (std::string e = check_fields(j["frames"][i], kFrameFields, at); !e.empty()) return e;
  }
  const json& in_flight = j["details"]["in_flight"];
  for (size_t i = 0; i < in_flight.size(); ++i) {
    const std::string at = "/details/in_flight/" + std::to_string(i);
    if (std::string e = check_fields(in_flight[i], kBatchFields, at); !e.empty()) return e;
    for (const json& index : in_flight[i]["indices"]) {
      if (!index.is_number_integer()) return "field " + at + "/indices holds a non-integer";
    }
  }
  return "";
}

// Reads and checks one file; false with `error` set when it is not a good report.
bool load_report(const std::string& path, Report& report, std::string& error) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  const std::string text(std::istreambuf_iterator<char>(in), {});
  if (!in.is_open() || in.bad()) error = std::string("cannot read it: ") + std::strerror(errno);
  else if (text.empty()) error = "the file is empty (the writer may have run out of disk)";
  if (!error.empty()) return false;
  try {
    report.body = json::parse(text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    what.erase(0, what.find("] ") == std::string::npos ? 0 : what.find("] ") + 2);
    error = "not valid JSON (" + what + ")";
    return false;
  }
  report.path = path;
  error = check_report(report.body);
  return error.empty();
}

// ---- Printing a report ---------------------------------------------------------------------

// "24-31, 40, 7 (10 samples)": ascending runs joined, at most `max_runs` of them.
std::string abbreviate(const json& indices, size_t max_runs = 6) {
  std::vector<int64_t> v = indices.get<std::vector<int64_t>>();
  std::string s;
  size_t runs = 0;
  for (size_t i = 0; i < v.size(); ++runs) {
    size_t end = i + 1;
    while (end < v.size() && v[end] == v[end - 1] + 1) ++end;
    if (runs == max_runs) {
      s += ", ...";
      break;
    }
    s += (s.empty() ? "" : ", ") + std::to_string(v[i]);
    if (end - i > 1) s += "-" + std::to_string(v[end - 1]);
    i = end;
  }
  return s + " (" + std::to_string(v.size()) + (v.size() == 1 ? " sample)" : " samples)");
}

std::string describe_frame(size_t n, const json& f) {
  char address[32];
  std::snprintf(address, sizeof address, "0x%016llx",
                static_cast<unsigned long long>(f["address"].get<uint64_t>()));
  const std::string function = f["function"];
  const std::string file = f["file"];
  const std::string module = f["module"];
  std::string s = "  #" + std::to_string(n) + " " + address + " in " +
                  (function.empty() ? "??" : function);
  if (!file.empty()) s += " at " + file + ":" + std::to_string(f["line"].get<int64_t>());
  if (!module.empty()) s += " (" + module.substr(module.find_last_of('/') + 1) + ")";
  return s;
}

void print_report(std::ostream& out, const Report& r) {
  const json& j = r.body;
  out << "== " << j["time"].get<std::string>() << "  worker " << j["worker"]["id"] << " (pid "
      << j["worker"]["pid"] << ")  " << j["cause"].get<std::string>() << " ==\n"
      << "Report:        " << r.path << "\n"
      << "What happened: " << j["what_happened"].get<std::string>() << "\n"
      << "Evidence:      " << j["evidence"].get<std::string>() << "\n";
  const json& in_flight = j["details"]["in_flight"];
  if (in_flight.empty()) out << "In flight:     no batch\n";
  for (const json& b : in_flight) {
    out << "In flight:     batch " << b["sequence"] << " of epoch " << b["epoch"] << ", indices "
        << abbreviate(b["indices"]) << "\n";
  }
  if (j["frames"].empty()) out << "Frames:        none recorded\n";
  else out << "Frames:\n";
  for (size_t i = 0; i < j["frames"].size(); ++i) {
    out << describe_frame(i, j["frames"][i]) << "\n";
  }
  out << "Remedy:        " << j["remedy"].get<std::string>() << "\n\n";
}

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
    return a.body["unix_time"].get<int64_t>() > b.body["unix_time"].get<int64_t>();
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
