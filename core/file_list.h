// The one check of the list of files a reader over files is given (TarShards, ParquetShards,
// and the next one), and the one listing of a folder of them: every reader refuses the same
// lists and folders, in the same words.
#pragma once

#include <string>
#include <vector>

namespace mploader::detail {

// Throws OptionError(option, "mploader: <who>: ...") when `paths` is empty, or names one file
// twice: spelled alike, spelled apart ("x.tar", "./x.tar", through a link; compared
// canonicalised, as std::filesystem::weakly_canonical resolves them), or as two names of one
// inode. URLs are compared as written. A path that does not exist passes: the reader's own
// open says why it cannot be read. `from_directory`: the reader has <who>::from_directory.
void check_file_list(const std::string& who, const std::string& option,
                     const std::vector<std::string>& paths, bool from_directory);

// What <who>::from_directory(dir) reads: the regular files of `dir` whose names end in
// `suffix` (".tar"), sorted; subfolders are not searched. Throws OptionError("dir", ...) when
// the folder cannot be listed or holds none.
std::vector<std::string> folder_files(const std::string& who, const std::string& dir,
                                      const std::string& suffix);

}  // namespace mploader::detail
