#include "vision/folder_scan.h"

#include "util/file_stat.h"
#include "util/log.h"

#include <mploader/errors.h>

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <unistd.h>

namespace mploader::vision::detail {
namespace {

constexpr int kMaxDepth = 64;  // folders below a class folder
// A list file's labels may skip numbers (a subset of the classes), but classes() holds a name
// for every number up to the largest: labels are bounded by this or the number of images,
// whichever is larger, so that a typo'd label is an error and not billions of class names.
constexpr int64_t kLabelsWithoutImages = 100000;
constexpr const char* kCacheMagic = "mploader-image-folder-cache 1";

struct Entry {
  std::string name;
  bool is_dir;
};

bool ends_with_any(const std::string& name, const std::vector<std::string>& extensions) {
  for (const std::string& ext : extensions) {
    if (name.size() < ext.size()) continue;
    if (std::equal(ext.rbegin(), ext.rend(), name.rbegin(), [](char a, char b) {
          return std::tolower(static_cast<unsigned char>(a)) ==
                 std::tolower(static_cast<unsigned char>(b));
        })) {
      return true;
    }
  }
  return false;
}


// The folders and files of `dir`, sorted by name; symlinks are followed (as torchvision).
std::vector<Entry> list_folder(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    throw OptionError("root", "ImageFolder: cannot list the folder " + dir + ": opendir: " +
                                  std::strerror(errno) + "; check that it exists and is readable");
  }
  std::vector<Entry> entries;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    bool is_dir = e->d_type == DT_DIR;
    if (e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) {
      struct stat st;
      if (stat((dir + "/" + name).c_str(), &st) != 0) continue;  // a dangling link
      is_dir = S_ISDIR(st.st_mode);
      if (!is_dir && !S_ISREG(st.st_mode)) continue;
    } else if (!is_dir && e->d_type != DT_REG) {
      continue;
    }
    entries.push_back({name, is_dir});
  }
  closedir(d);
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.name < b.name; });
  return entries;
}

struct ScanState {
  const std::vector<std::string>& extensions;
  std::vector<std::pair<std::string, int64_t>> folders;  // scanned, with their mtimes
  // Every folder listed, by (device, inode), with the path it was listed by: a symbolic link
  // back to a folder already listed (a loop, or another class's folder) is not followed again.
  std::map<mploader::detail::FileKey, std::string> listed;
};

// Records `dir` as listed; "" when it is new, else the path it was listed by before.
std::string enter_folder(const std::string& dir, ScanState& state) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    state.folders.emplace_back(dir, -1);  // opendir will name the problem
    return "";
  }
  const auto [at, added] = state.listed.emplace(mploader::detail::file_key(st), dir);
  if (!added) return at->second;
  state.folders.emplace_back(dir, mploader::detail::mtime_ns(st));
  return "";
}

// Appends the images under `dir` (any depth, sorted) to `paths`; each folder once.
void collect_images(const std::string& dir, int depth, ScanState& state,
                    std::vector<std::string>& paths) {
  for (const Entry& e : list_folder(dir)) {
    const std::string path = dir + "/" + e.name;
    if (!e.is_dir) {
      if (ends_with_any(e.name, state.extensions)) paths.push_back(path);
      continue;
    }
    if (const std::string before = enter_folder(path, state); !before.empty()) {
      mploader::detail::log().warn(
          "mploader: ImageFolder does not follow {}: it is the folder {} again (a symbolic "
          "link), whose images are listed once",
          path, before);
      continue;
    }
    if (depth >= kMaxDepth) {
      throw OptionError("root", "ImageFolder: " + path + " is more than " +
                                    std::to_string(kMaxDepth) +
                                    " folders deep; give a shallower tree");
    }
    collect_images(path, depth + 1, state, paths);
  }
}

std::string joined(const std::vector<std::string>& words) {
  std::string text;
  for (const std::string& w : words) text += (text.empty() ? "" : ", ") + w;
  return text;
}

ImageList scan(const std::string& root, ScanState& state) {
  struct stat st;
  const bool found = stat(root.c_str(), &st) == 0;
  if (!found || !S_ISDIR(st.st_mode)) {
    throw OptionError("root", "ImageFolder: the root " + root +
                                  (found ? " is not a folder"
                                         : std::string(" cannot be read: stat: ") +
                                               std::strerror(errno)) +
                                  "; give a folder with one subfolder of images per class");
  }
  enter_folder(root, state);
  // Every class folder is claimed before any is walked, so that a link into another class's
  // folder is skipped whichever class sorts first.
  std::vector<std::string> class_names;
  for (const Entry& e : list_folder(root)) {
    if (!e.is_dir) continue;
    const std::string folder = root + "/" + e.name;
    if (const std::string before = enter_folder(folder, state); !before.empty()) {
      throw OptionError("root", "ImageFolder: the class folder " + folder +
                                    " is the same folder as " + before +
                                    " (a symbolic link): its images would have two labels; "
                                    "remove one of them");
    }
    class_names.push_back(e.name);
  }
  ImageList list;
  for (const std::string& name : class_names) {
    std::vector<std::string> paths;
    collect_images(root + "/" + name, 0, state, paths);
    if (paths.empty()) {
      throw OptionError("root", "ImageFolder: the class folder " + root + "/" + name +
                                    " holds no image (files ending in " +
                                    joined(state.extensions) + "); add images or remove it");
    }
    const auto label = static_cast<int64_t>(list.classes.size());
    list.classes.push_back(name);
    for (std::string& p : paths) {
      list.paths.push_back(std::move(p));
      list.labels.push_back(label);
    }
  }
  if (list.classes.empty()) {
    throw OptionError("root", "ImageFolder: the root " + root +
                                  " holds no class folder; put each class's images in a "
                                  "subfolder named after the class");
  }
  return list;
}

bool read_cache(const std::string& cache_file, const std::string& root,
                const std::vector<std::string>& extensions, ImageList& list) {
  std::ifstream in(cache_file);
  std::string line;
  if (!std::getline(in, line) || line != kCacheMagic) return false;
  if (!std::getline(in, line) || line != "root " + root) return false;
  if (!std::getline(in, line) || line != "ext " + joined(extensions)) return false;
  while (std::getline(in, line)) {
    const size_t space = line.find(' ');
    const std::string kind = line.substr(0, space);
    std::istringstream fields(line.substr(space + 1));
    if (kind == "dir") {
      int64_t mtime;
      std::string dir;
      fields >> mtime;
      std::getline(fields >> std::ws, dir);
      struct stat st;
      if (stat(dir.c_str(), &st) != 0 || mploader::detail::mtime_ns(st) != mtime) return false;
    } else if (kind == "class") {
      list.classes.push_back(line.substr(space + 1));
    } else if (kind == "file") {
      int64_t label;
      std::string path;
      fields >> label;
      std::getline(fields >> std::ws, path);
      list.paths.push_back(path);
      list.labels.push_back(label);
    } else {
      return false;
    }
  }
  return !list.paths.empty() && list.paths.size() == list.labels.size();
}

bool write_cache(const std::string& cache_file, const std::string& root,
                 const std::vector<std::string>& extensions, const ImageList& list,
                 const ScanState& state) {
  const std::string temporary = cache_file + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << kCacheMagic << "\nroot " << root << "\next " << joined(extensions) << "\n";
    for (const auto& [dir, mtime] : state.folders) out << "dir " << mtime << " " << dir << "\n";
    for (const std::string& c : list.classes) out << "class " << c << "\n";
    for (size_t i = 0; i < list.paths.size(); ++i) {
      out << "file " << list.labels[i] << " " << list.paths[i] << "\n";
    }
    if (!out.flush()) return false;
  }
  return std::rename(temporary.c_str(), cache_file.c_str()) == 0;
}

bool has_newline(const ImageList& list) {
  auto nl = [](const std::string& s) { return s.find('\n') != std::string::npos; };
  return std::any_of(list.paths.begin(), list.paths.end(), nl) ||
         std::any_of(list.classes.begin(), list.classes.end(), nl);
}

// Throws OptionError naming the line of the largest label when it is beyond the bound.
void check_label_bound(const std::string& list_file, size_t images, int64_t max_label,
                       int line) {
  const int64_t label_bound =
      std::max(static_cast<int64_t>(images), kLabelsWithoutImages);
  if (max_label >= label_bound) {
    throw OptionError("list_file", "ImageFolder: line " + std::to_string(line) +
                                       " of " + list_file + " has the label " +
                                       std::to_string(max_label) + ", but the file lists " +
                                       std::to_string(images) +
                                       " images: labels must be below " +
                                       std::to_string(label_bound) +
                                       " (the number of images, or 100000 if larger), since "
                                       "classes() names every label up to the largest; is it "
                                       "a typo?");
  }
}

}  // namespace

ImageList scan_class_folders(const std::string& root, const std::vector<std::string>& extensions) {
  ScanState state{extensions, {}, {}};
  return scan(root, state);
}

ImageList scan_class_folders_cached(const std::string& root,
                                    const std::vector<std::string>& extensions,
                                    const std::string& cache_file) {
  ImageList cached;
  if (read_cache(cache_file, root, extensions, cached)) return cached;
  ScanState state{extensions, {}, {}};
  ImageList list = scan(root, state);
  if (has_newline(list) || !write_cache(cache_file, root, extensions, list, state)) {
    mploader::detail::log().warn("mploader: ImageFolder could not write its scan cache {} ({}); the folder "
               "will be scanned again next time",
               cache_file, has_newline(list) ? "a path holds a newline" : std::strerror(errno));
  }
  return list;
}

ImageList read_image_list(const std::string& list_file) {
  std::ifstream in(list_file);
  if (!in) {
    throw OptionError("list_file", "ImageFolder: cannot read the list file " + list_file + ": " +
                                       std::strerror(errno));
  }
  const size_t slash = list_file.rfind('/');
  const std::string base = slash == std::string::npos ? "" : list_file.substr(0, slash + 1);
  ImageList list;
  int64_t max_label = -1;
  int max_label_line = 0;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const size_t last = line.find_last_not_of(" \t\r");
    if (last == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
    line.resize(last + 1);
    const size_t split = line.find_last_of(" \t");
    char* end = nullptr;
    const std::string label_text = split == std::string::npos ? "" : line.substr(split + 1);
    const long long label = std::strtoll(label_text.c_str(), &end, 10);
    if (split == std::string::npos || label_text.empty() || *end != '\0' || label < 0) {
      throw OptionError("list_file", "ImageFolder: line " + std::to_string(number) + " of " +
                                         list_file + " is \"" + line +
                                         "\"; each line must be \"<path> <label>\", the label "
                                         "a non-negative integer");
    }
    std::string path = line.substr(0, line.find_last_not_of(" \t", split) + 1);
    if (path[0] != '/') path = base + path;
    list.paths.push_back(std::move(path));
    list.labels.push_back(label);
    if (label > max_label) {
      max_label = label;
      max_label_line = number;
    }
  }
  if (list.paths.empty()) {
    throw OptionError("list_file", "ImageFolder: the list file " + list_file +
                                       " names no image; write one \"<path> <label>\" per line");
  }
  check_label_bound(list_file, list.paths.size(), max_label, max_label_line);
  for (int64_t c = 0; c <= max_label; ++c) list.classes.push_back(std::to_string(c));
  return list;
}

}  // namespace mploader::vision::detail
