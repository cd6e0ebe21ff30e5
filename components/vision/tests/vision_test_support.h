// What the vision tests share: a scratch folder, PIL's reference answers through
// MPLOADER_PYTHON, and whole files as bytes.
#pragma once

#include <catch2/catch.hpp>

#include <mploader/vision/encode.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

namespace vision_test {

// A fresh folder, removed with the object.
struct ScratchDir {
  ScratchDir() {
    static int count = 0;
    path = (std::filesystem::temp_directory_path() /
            ("mploader-vision-" + std::to_string(getpid()) + "-" + std::to_string(++count)))
               .string();
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  std::string path;
};

// Runs components/vision/tests/pil_reference.py with `args`; false when Python or PIL is missing.
inline bool pil(const std::string& args) {
  const std::string command = std::string(MPLOADER_PYTHON) + " " MPLOADER_COMPONENT_TEST_DIR
                              "/pil_reference.py " + args + " > /dev/null 2>&1";
  return std::system(command.c_str()) == 0;
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

inline void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// A smooth width x height RGB JPEG at `path`: a real image, made without Python.
inline void write_jpeg(const std::string& path, int width, int height, int quality = 90) {
  std::vector<uint8_t> pixels(static_cast<size_t>(width) * static_cast<size_t>(height) * 3);
  for (size_t i = 0; i < pixels.size(); ++i) {
    const size_t x = i / 3 % static_cast<size_t>(width), y = i / 3 / static_cast<size_t>(width);
    pixels[i] = static_cast<uint8_t>((x * 3 + y * 5 + (i % 3) * 60) % 256);
  }
  write_bytes(path, mploader::vision::encode_jpeg(pixels.data(), width, height, 3, quality));
}

// The largest difference between two byte strings of one length.
inline int max_difference(const uint8_t* a, const uint8_t* b, size_t n) {
  int worst = 0;
  for (size_t i = 0; i < n; ++i) worst = std::max(worst, std::abs(int{a[i]} - int{b[i]}));
  return worst;
}

}  // namespace vision_test

#define REQUIRE_PIL(ok)                                                                     \
  if (!(ok)) {                                                                              \
    WARN("skipped: " MPLOADER_PYTHON " cannot run PIL (pillow and numpy, scripts/install-deps)"); \
    return;                                                                                 \
  }
