// check_file_list (core/file_list.h): each file of a reader's list is one or more shards, read
// once an epoch, so one listed twice would be read twice.
#include "core/file_list.h"

#include "core/remote_files.h"
#include "util/errors.h"
#include "util/file_stat.h"
#include "util/folder_files.h"

#include <mploader/errors.h>

#include <sys/stat.h>

#include <filesystem>
#include <map>
#include <system_error>

namespace mploader::detail {
namespace {

// Local paths canonicalised; a URL, or a path that cannot be, as written.
std::string spelling_key(const std::string& path) {
  if (names_url(path)) return path;
  std::error_code error;
  const std::filesystem::path canonical = std::filesystem::weakly_canonical(path, error);
  return error ? path : canonical.string();
}

[[noreturn]] void refuse_twice(const std::string& who, const std::string& option,
                               const std::string& first, const std::string& again,
                               const std::string& how) {
  const std::string what = first == again ? in_quotes(again) + " is listed twice"
                                          : in_quotes(first) + " and " + in_quotes(again) +
                                                " are the same file, listed twice" + how;
  throw OptionError(option,
                    message(who, what, "List each file once: each is read once an epoch"));
}

}  // namespace

void check_file_list(const std::string& who, const std::string& option,
                     const std::vector<std::string>& paths, bool from_directory) {
  if (paths.empty()) {
    throw OptionError(option, message(who, "the list of files is empty",
                                      "Give at least one file" +
                                          (from_directory ? ", or use " + who +
                                                                "::from_directory(<folder>)"
                                                          : std::string())));
  }
  std::map<std::string, const std::string*> spellings;
  std::map<FileKey, const std::string*> inodes;
  for (const std::string& p : paths) {
    const auto [at, fresh] = spellings.emplace(spelling_key(p), &p);
    if (!fresh) refuse_twice(who, option, *at->second, p, "");
    struct stat st {};
    if (names_url(p) || ::stat(p.c_str(), &st) != 0) continue;
    const auto [same, new_inode] = inodes.emplace(file_key(st), &p);
    if (!new_inode) {
      refuse_twice(who, option, *same->second, p,
                   " (device " + std::to_string(st.st_dev) + ", inode " +
                       std::to_string(st.st_ino) + ")");
    }
  }
}

std::vector<std::string> folder_files(const std::string& who, const std::string& dir,
                                      const std::string& suffix) {
  std::string error;
  std::vector<std::string> paths = files_ending_in(dir, suffix, error);
  if (!error.empty()) {
    throw OptionError("dir", message(who, "cannot list " + in_quotes(dir) + ": " + error,
                                     "Give a readable folder of " + suffix + " files"));
  }
  if (paths.empty()) {
    throw OptionError("dir", message(who, in_quotes(dir) + " holds no file ending in " + suffix +
                                              " (subfolders are not searched)",
                                     "Give the folder of the files, or list them"));
  }
  return paths;
}

}  // namespace mploader::detail
