// A dataset that reads its samples out of a file through a read-only memory map, as a token
// corpus is read (window i of the file), and the helpers to make such a file.
#pragma once

#include <ATen/ATen.h>
#include <mploader/mploader.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace testing_datasets {

// Sample i: "window", `window` bytes of the file from offset i * stride (the windows spread over
// the whole file), and "index". The file is mapped whole, at its size then, on the first sample.
class MappedFileDataset : public mploader::Dataset {
 public:
  MappedFileDataset(std::string path, size_t n, size_t window)
      : path_(std::move(path)), n_(n), window_(window) {}
  ~MappedFileDataset() override {
    if (map_ != nullptr) munmap(const_cast<unsigned char*>(map_), bytes_);
  }
  size_t size() const override { return n_; }
  mploader::Sample get(int64_t index) override {
    if (map_ == nullptr) map_file();
    const size_t stride = (bytes_ - window_) / n_;
    at::Tensor window = at::empty({static_cast<int64_t>(window_)}, at::kByte);
    // SIGBUS here once the file has been cut short under the mapping.
    std::memcpy(window.data_ptr(), map_ + static_cast<size_t>(index) * stride, window_);
    return {{"window", window}, {"index", at::full({1}, index, at::kLong)}};
  }

 private:
  void map_file() {
    const int fd = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) throw std::runtime_error("cannot open " + path_);
    bytes_ = static_cast<size_t>(st.st_size);
    void* map = mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED || bytes_ < window_) throw std::runtime_error("cannot map " + path_);
    map_ = static_cast<const unsigned char*>(map);
  }

  std::string path_;
  size_t n_;
  size_t window_;
  const unsigned char* map_ = nullptr;
  size_t bytes_ = 0;
};

// Writes `bytes` bytes to `path` with write(2), so that a tmpfs gives the file its pages now.
inline void write_file(const std::string& path, size_t bytes) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error("cannot create " + path);
  std::vector<char> chunk(1 << 20);
  for (size_t i = 0; i < chunk.size(); ++i) chunk[i] = static_cast<char>(i * 31);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(chunk.size(), bytes - done);
    const ssize_t w = write(fd, chunk.data(), n);
    if (w <= 0) {
      close(fd);
      throw std::runtime_error("cannot write " + path);
    }
    done += static_cast<size_t>(w);
  }
  close(fd);
}

}  // namespace testing_datasets
