// Crash reports: the complete evidence of one worker death as a JSON file, one file per death,
// never overwritten. mploader-report reads them back for a person; the format both use is
// supervise/crash_report_format.h.
#pragma once

#include "supervise/diagnosis.h"

#include <string>

namespace mploader::detail {

// The directory reports go to: `configured`, else $MPLOADER_CRASH_DIR, else
// ./mploader-crashes.
std::string crash_directory(const std::string& configured);

// Writes the report and returns its path, or "" (with `error` set) when it could not be
// written; a failed write never hides the crash itself.
std::string write_crash_report(const DeathEvidence& evidence, const Diagnosis& diagnosis,
                               const std::string& directory, std::string& error);

}  // namespace mploader::detail
