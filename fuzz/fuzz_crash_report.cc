// Fuzzes mploader-report's reader (tools/report_reader.cc): any bytes as a report file's text.
// A report it accepts is printed too, as mploader-report would, so that printing must survive
// every value the check lets through. Rejecting is fine; a crash, UB or an exception is not.
#include "tools/report_reader.h"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  mploader::report_tool::Report report;
  std::string error;
  if (mploader::report_tool::parse_report("fuzz.json", text, report, error)) {
    std::ostringstream out;
    mploader::report_tool::print_report(out, report);
  }
  return 0;
}
