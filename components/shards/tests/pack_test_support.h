// What the pack tests share: an image folder of JPEGs and PNGs of several sizes, a pack of
// tensors and text written with PackWriter, and mploader-pack run as a user runs it.
#pragma once

#include <catch2/catch.hpp>
#include "components/shards/tests/shard_test_support.h"
#include "shards/pack_writer.h"
#include "shards/npy_member.h"

#include <mploader/vision/encode.h>

#include <ATen/ATen.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace shard_test {

/// The whole file's bytes (empty when it cannot be read).
inline std::string pack_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// Every file of `a` is in `b` with the same bytes, and the other way round.
inline void require_same_pack_files(const fs::path& a, const fs::path& b) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(a)) {
    INFO(e.path().filename().string());
    REQUIRE(pack_file_bytes(e.path().string()) == pack_file_bytes((b / e.path().filename()).string()));
    ++n;
  }
  REQUIRE(static_cast<size_t>(std::distance(fs::directory_iterator(b), {})) == n);
}

/// `classes` folders of `per_class` JPEGs (sizes vary; some larger than 512 px on a side) and
/// one PNG in the first folder.
inline void write_image_folder(const std::string& root, int classes, int per_class) {
  for (int c = 0; c < classes; ++c) {
    const std::string dir = root + "/class" + std::to_string(c);
    fs::create_directories(dir);
    for (int i = 0; i < per_class; ++i) {
      const int w = 96 + 173 * ((c * per_class + i) % 5), h = 80 + 131 * (i % 4);
      std::vector<uint8_t> px(static_cast<size_t>(w) * h * 3);
      for (size_t k = 0; k < px.size(); ++k) px[k] = static_cast<uint8_t>((k * 7 + c * 31 + i) % 251);
      const std::vector<uint8_t> jpeg = mploader::vision::encode_jpeg(px.data(), w, h, 3, 85);
      std::ofstream(dir + "/img" + std::to_string(i) + ".jpg", std::ios::binary)
          .write(reinterpret_cast<const char*>(jpeg.data()), static_cast<std::streamsize>(jpeg.size()));
    }
  }
  // A 2x2 RGB PNG, written out byte for byte.
  static const unsigned char png[] = {
      0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44,
      0x52, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00, 0xfd,
      0xd4, 0x9a, 0x73, 0x00, 0x00, 0x00, 0x16, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x60,
      0x60, 0x60, 0x88, 0x8a, 0x8a, 0x62, 0xd0, 0xd0, 0xd0, 0x68, 0x6a, 0x6a, 0x02, 0x00, 0x0e,
      0xf0, 0x03, 0x0d, 0xa8, 0xdf, 0x34, 0xa1, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44,
      0xae, 0x42, 0x60, 0x82};
  std::ofstream(root + "/class0/zz.png", std::ios::binary)
      .write(reinterpret_cast<const char*>(png), sizeof png);
}

#ifdef MPLOADER_PACK_BIN
/// Runs mploader-pack with `args`; its exit status. Output goes to `log`.
inline int run_pack(const std::string& args, const std::string& log) {
  const std::string command = std::string(MPLOADER_PACK_BIN) + " " + args + " >" + log + " 2>&1";
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/// Starts mploader-pack with `args` (split on spaces) in a child; its pid.
inline pid_t start_pack(const std::vector<std::string>& args, const std::string& log) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::freopen(log.c_str(), "w", stdout);
    std::freopen(log.c_str(), "a", stderr);
    std::vector<char*> argv{const_cast<char*>(MPLOADER_PACK_BIN)};
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(MPLOADER_PACK_BIN, argv.data());
    ::_exit(127);
  }
  return pid;
}
#endif

/// A pack of `samples` samples written with PackWriter: "x" float32 [3] = {i, i+0.5, -i},
/// "label" int i % 7, "half" float16 [2, 2] of i, "name" text "sample-<i>".
inline void write_tensor_pack(const std::string& dir, int64_t samples, int64_t shard_bytes) {
  namespace sd = mploader::shards::detail;
  sd::PackWriter writer({dir, shard_bytes, samples, "{\"test\": 1}", true});
  const std::vector<sd::PackedField> fields{{"x", sd::PackedKind::kNpy},
                                            {"label", sd::PackedKind::kInt},
                                            {"half", sd::PackedKind::kNpy},
                                            {"name", sd::PackedKind::kText}};
  for (int64_t i = 0; i < samples; ++i) {
    const float v = static_cast<float>(i);
    const std::string x = sd::npy_bytes(at::tensor({v, v + 0.5f, -v}), "x");
    const std::string label = std::to_string(i % 7);
    const std::string half = sd::npy_bytes(at::full({2, 2}, v, at::kHalf), "half");
    const std::string name = "sample-" + std::to_string(i);
    writer.add(fields, {x, label, half, name});
  }
  writer.finish();
}

}  // namespace shard_test
