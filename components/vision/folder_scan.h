// Finding the images of an ImageFolder: a root of class folders, a list file, and the cache of
// a scan. Plain POSIX calls (readdir with d_type): 100k files are listed in well under a second.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mploader::vision::detail {

struct ImageList {
  std::vector<std::string> classes;  // sorted
  std::vector<std::string> paths;    // sorted by class, then by path within it
  std::vector<int64_t> labels;
};

// Every file under root/<class>/ (any depth) whose name ends in one of `extensions` (no case).
// Throws OptionError("root", ...) for a missing root, one without class folders, and a class
// folder without images.
ImageList scan_class_folders(const std::string& root, const std::vector<std::string>& extensions);

// scan_class_folders, kept in `cache_file` and read back while every folder scanned still has
// the modification time recorded. A cache that cannot be written is only a warning.
ImageList scan_class_folders_cached(const std::string& root,
                                    const std::vector<std::string>& extensions,
                                    const std::string& cache_file);

// "<path> <label>" lines; throws OptionError("list_file", ...) naming the line at fault.
ImageList read_image_list(const std::string& list_file);

}  // namespace mploader::vision::detail
