// The crash-report reader of mploader-report: checks a report's JSON against the format
// (supervise/crash_report_format.h) and prints it for a person. Apart from main() so that the
// fuzz target (fuzz/fuzz_crash_report.cc) links it.
//
// Contract: plain functions over values, thread-safe; a report that is not a good one is
// `false` with the reason in `error`, never an exception, and print_report() prints only a
// report that load_report() or parse_report() accepted.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

namespace mploader::report_tool {

// One report file: where it was read from and its JSON.
struct Report {
  std::string path;
  nlohmann::json body;
};

// Reads and checks one file; false with `error` set when it is not a good report.
bool load_report(const std::string& path, Report& report, std::string& error);
// Checks the text of one report file (`path` only names it); false with `error` set.
bool parse_report(const std::string& path, const std::string& text, Report& report,
                  std::string& error);
// Prints an accepted report for a person.
void print_report(std::ostream& out, const Report& r);

}  // namespace mploader::report_tool
