// The crash-report reader of mploader-report (report_reader.h): checking a report's JSON
// and printing it for a person.
#include "tools/report_reader.h"

#include "supervise/crash_report_format.h"
#include "util/units.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>
#include <algorithm>
#include <string>
#include <vector>

namespace mploader::report_tool {
namespace {

using nlohmann::json;
using detail::mebibytes;
namespace key = mploader::crash_report;  // the format, shared with the writer

// ---- Checking a report ---------------------------------------------------------------------

enum class Kind { kInteger, kString, kObject, kArray, kObjectOrNull };

// A field by its key, inside the object `parent` (nullptr: the object checked itself).
struct Field {
  const char* parent;
  const char* key;
  Kind kind;

  std::string pointer() const {  // "/worker/id", as JSON pointers and messages write it
    return (parent != nullptr ? "/" + std::string(parent) : std::string()) + "/" + key;
  }
};

// Everything mploader always writes at the top, and everything this tool prints.
constexpr Field kTopFields[] = {
    {nullptr, key::top::kTime, Kind::kString},
    {nullptr, key::top::kUnixTime, Kind::kInteger},
    {nullptr, key::top::kMainPid, Kind::kInteger},
    {nullptr, key::top::kWorker, Kind::kObject},
    {key::top::kWorker, key::worker::kId, Kind::kInteger},
    {key::top::kWorker, key::worker::kPid, Kind::kInteger},
    {nullptr, key::top::kCause, Kind::kString},
    {nullptr, key::top::kWhatHappened, Kind::kString},
    {nullptr, key::top::kEvidence, Kind::kString},
    {nullptr, key::top::kRemedy, Kind::kString},
    {nullptr, key::top::kExit, Kind::kObject},
    {key::top::kExit, key::exit_status::kSignal, Kind::kInteger},
    {key::top::kExit, key::exit_status::kExitCode, Kind::kInteger},
    {nullptr, key::top::kCrashRecord, Kind::kObjectOrNull},
    {nullptr, key::top::kFrames, Kind::kArray},
    {nullptr, key::top::kDetails, Kind::kObject},
    {key::top::kDetails, key::details::kInFlight, Kind::kArray},
};
constexpr Field kFrameFields[] = {{nullptr, key::frame::kAddress, Kind::kInteger},
                                  {nullptr, key::frame::kFunction, Kind::kString},
                                  {nullptr, key::frame::kFile, Kind::kString},
                                  {nullptr, key::frame::kLine, Kind::kInteger},
                                  {nullptr, key::frame::kModule, Kind::kString}};
constexpr Field kBatchFields[] = {{nullptr, key::batch::kEpoch, Kind::kInteger},
                                  {nullptr, key::batch::kSequence, Kind::kInteger},
                                  {nullptr, key::batch::kIndices, Kind::kArray}};

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
    const json::json_pointer pointer(f.pointer());
    if (!j.contains(pointer)) return "missing field " + prefix + f.pointer();
    const json& v = j.at(pointer);
    if (std::string want; !has_kind(v, f.kind, want)) {
      return "field " + prefix + f.pointer() + " is " + v.type_name() + ", expected " + want;
    }
  }
  return "";
}

std::string check_report(const json& j) {
  if (!j.is_object()) return "not a crash report: the JSON is " + std::string(j.type_name()) +
                             ", not an object";
  if (!j.contains(key::top::kVersionKey)) {
    return std::string("not an mploader crash report (no \"") + key::top::kVersionKey +
           "\" version field)";
  }
  const json& version = j[key::top::kVersionKey];
  if (!version.is_number_integer() || version.get<int64_t>() != key::kVersion) {
    return "unsupported report version " + version.dump() + " (this mploader-report reads " +
           "version " + std::to_string(key::kVersion) +
           "; use the one of the mploader that wrote it)";
  }
  if (std::string e = check_fields(j, kTopFields, ""); !e.empty()) return e;
  const std::string cause = j[key::top::kCause];
  if (!key::is_cause_name(cause.c_str())) {
    return "field /" + std::string(key::top::kCause) + " is '" + cause + "', not a known cause";
  }
  const json& frames = j[key::top::kFrames];
  for (size_t i = 0; i < frames.size(); ++i) {
    const std::string at = "/" + std::string(key::top::kFrames) + "/" + std::to_string(i);
    if (std::string e = check_fields(frames[i], kFrameFields, at); !e.empty()) return e;
  }
  const json& in_flight = j[key::top::kDetails][key::details::kInFlight];
  const std::string in_flight_at =
      "/" + std::string(key::top::kDetails) + "/" + key::details::kInFlight + "/";
  for (size_t i = 0; i < in_flight.size(); ++i) {
    const std::string at = in_flight_at + std::to_string(i);
    if (std::string e = check_fields(in_flight[i], kBatchFields, at); !e.empty()) return e;
    for (const json& index : in_flight[i][key::batch::kIndices]) {
      if (!index.is_number_integer()) {
        return "field " + at + "/" + key::batch::kIndices + " holds a non-integer";
      }
    }
  }
  return "";
}

// ---- Printing a report ---------------------------------------------------------------------

// "24-31, 40, 7 (10 samples)": ascending runs joined, at most `max_runs` of them.
std::string abbreviate(const json& indices, size_t max_runs = 6) {
  std::vector<int64_t> v = indices.get<std::vector<int64_t>>();
  std::string s;
  size_t runs = 0;
  for (size_t i = 0; i < v.size(); ++runs) {
    size_t end = i + 1;
    while (end < v.size() && v[end - 1] < INT64_MAX && v[end] == v[end - 1] + 1) ++end;
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
                static_cast<unsigned long long>(f[key::frame::kAddress].get<uint64_t>()));
  const std::string function = f[key::frame::kFunction];
  const std::string file = f[key::frame::kFile];
  const std::string module = f[key::frame::kModule];
  std::string s = "  #" + std::to_string(n) + " " + address + " in " +
                  (function.empty() ? "??" : function);
  if (!file.empty()) s += " at " + file + ":" + std::to_string(f[key::frame::kLine].get<int64_t>());
  if (!module.empty()) s += " (" + module.substr(module.find_last_of('/') + 1) + ")";
  return s;
}

}  // namespace

// Reads and checks one file; false with `error` set when it is not a good report.
bool load_report(const std::string& path, Report& report, std::string& error) {
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  const std::string text(std::istreambuf_iterator<char>(in), {});
  if (!in.is_open() || in.bad()) error = std::string("cannot read it: ") + std::strerror(errno);
  else if (text.empty()) error = "the file is empty (the writer may have run out of disk)";
  if (!error.empty()) return false;
  return parse_report(path, text, report, error);
}

bool parse_report(const std::string& path, const std::string& text, Report& report,
                  std::string& error) {
  try {
    report.body = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for a number like 1E400
    std::string what = e.what();
    what.erase(0, what.find("] ") == std::string::npos ? 0 : what.find("] ") + 2);
    error = "not valid JSON (" + what + ")";
    return false;
  }
  report.path = path;
  error = check_report(report.body);
  return error.empty();
}

// The integer at `name` in `o`, or nullopt when absent or of another type (reports before the
// memory section lack it; a damaged one must still print).
std::optional<int64_t> integer_at(const json& o, const char* name) {
  if (!o.is_object() || !o.contains(name) || !o[name].is_number_integer()) return std::nullopt;
  return o[name].get<int64_t>();
}

// "Memory:" lines: the worker's private and shared memory over the epoch, and up to 16 of its
// private samples; nothing when the report has no memory samples.
void print_memory(std::ostream& out, const json& details) {
  namespace m = key::memory;
  if (!details.is_object() || !details.contains(key::details::kMemory)) return;
  const json& memory = details[key::details::kMemory];
  const auto epoch = integer_at(memory, m::kEpoch);
  const auto p0 = integer_at(memory, m::kPrivateStartBytes);
  const auto p1 = integer_at(memory, m::kPrivateBytes);
  const auto s0 = integer_at(memory, m::kSharedStartBytes);
  const auto s1 = integer_at(memory, m::kSharedBytes);
  if (!epoch || !p0 || !p1 || !s0 || !s1 || *p0 < 0) return;
  const auto peak = integer_at(memory, m::kPrivatePeakBytes);
  const bool warned = memory.contains(m::kGrowthWarned) && memory[m::kGrowthWarned] == true;
  out << "Memory:        epoch " << *epoch << ": private " << mebibytes(*p0) << " -> "
      << mebibytes(*p1) << (peak ? " (peak " + mebibytes(*peak) + ")" : "") << ", shared "
      << mebibytes(*s0) << " -> " << mebibytes(*s1)
      << (warned ? "; the loader warned that it kept growing" : "") << "\n";
  const json& series = memory.contains(m::kSeries) ? memory[m::kSeries] : json();
  if (!series.is_array() || series.size() < 2) return;
  std::string values;
  const size_t shown = std::min<size_t>(series.size(), 16);
  for (size_t i = 0; i < shown; ++i) {
    const json& point = series[i * (series.size() - 1) / (shown - 1)];
    const auto bytes = integer_at(point, key::sample::kPrivateBytes);
    values += (i ? " " : "") + (bytes ? std::to_string(*bytes >> 20) : std::string("?"));
  }
  const auto ms = integer_at(series.back(), key::sample::kMs);
  const auto batches = integer_at(series.back(), key::sample::kBatches);
  out << "Private (MiB): " << values << " (" << series.size() << " samples"
      << (ms ? ", to " + std::to_string(*ms / 1000) + " s" : "")
      << (batches ? " and " + std::to_string(*batches) + " batches" : "") << ")\n";
}

// The text at `name` in `o`, or "" when absent or of another type.
std::string text_at(const json& o, const char* name) {
  if (!o.is_object() || !o.contains(name) || !o[name].is_string()) return "";
  return o[name].get<std::string>();
}

// "Quarantine:" lines: what this death meant for the sample it was in, and every sample
// quarantined so far; nothing in a report without the section (quarantine off, older reports).
void print_quarantine(std::ostream& out, const json& details) {
  if (!details.is_object() || !details.contains(key::details::kQuarantine)) return;
  const json& q = details[key::details::kQuarantine];
  const std::string note = text_at(q, key::quarantine::kNote);
  if (!note.empty()) out << "Quarantine:    " << note << "\n";
  const json samples =
      q.is_object() && q.contains(key::quarantine::kSamples) ? q[key::quarantine::kSamples] : json();
  if (!samples.is_array() || samples.empty()) return;
  std::string listed;
  for (const json& s : samples) {
    const auto index = integer_at(s, key::quarantined::kIndex);
    const auto epoch = integer_at(s, key::quarantined::kEpoch);
    const auto deaths = integer_at(s, key::quarantined::kDeaths);
    if (!index) continue;
    listed += (listed.empty() ? "" : ", ") + std::to_string(*index);
    std::string facts;
    if (epoch) facts += "epoch " + std::to_string(*epoch);
    if (deaths) facts += (facts.empty() ? "" : ", ") + std::to_string(*deaths) + " deaths";
    const std::string cause = text_at(s, key::quarantined::kCause);
    if (!cause.empty()) facts += (facts.empty() ? "" : ", ") + cause;
    if (!facts.empty()) listed += " (" + facts + ")";
  }
  if (!listed.empty()) out << "Quarantined:   " << listed << "\n";
}

void print_report(std::ostream& out, const Report& r) {
  namespace top = key::top;
  const json& j = r.body;
  const json& worker = j[top::kWorker];
  out << "== " << j[top::kTime].get<std::string>() << "  worker " << worker[key::worker::kId]
      << " (pid " << worker[key::worker::kPid] << ")  " << j[top::kCause].get<std::string>()
      << " ==\n"
      << "Report:        " << r.path << "\n"
      << "What happened: " << j[top::kWhatHappened].get<std::string>() << "\n"
      << "Evidence:      " << j[top::kEvidence].get<std::string>() << "\n";
  const json& in_flight = j[top::kDetails][key::details::kInFlight];
  if (in_flight.empty()) out << "In flight:     no batch\n";
  for (const json& b : in_flight) {
    out << "In flight:     batch " << b[key::batch::kSequence] << " of epoch "
        << b[key::batch::kEpoch] << ", indices " << abbreviate(b[key::batch::kIndices]) << "\n";
  }
  print_memory(out, j[top::kDetails]);
  print_quarantine(out, j[top::kDetails]);
  const json& frames = j[top::kFrames];
  if (frames.empty()) out << "Frames:        none recorded\n";
  else out << "Frames:\n";
  for (size_t i = 0; i < frames.size(); ++i) out << describe_frame(i, frames[i]) << "\n";
  out << "Remedy:        " << j[top::kRemedy].get<std::string>() << "\n\n";
}

}  // namespace mploader::report_tool
