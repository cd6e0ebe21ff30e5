// What the ImageFolder tests of hostile folders and files share: tiny class folders made without
// Python, and one sample loaded straight through Dataset::write, as a worker loads it.
#pragma once

#include "vision_test_support.h"

#include <mploader/sample_writer.h>
#include <mploader/vision/image_folder.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace vision_test {

// root/<class>/<i>.jpg for each class, `per_class` 24 x 16 JPEGs each.
inline void make_classes(const std::string& root, const std::vector<std::string>& classes,
                         int per_class) {
  for (const std::string& c : classes) {
    std::filesystem::create_directories(root + "/" + c);
    for (int i = 0; i < per_class; ++i) {
      write_jpeg(root + "/" + c + "/" + std::to_string(i) + ".jpg", 24, 16);
    }
  }
}

// Sample `index` of `data`, written into buffers of its own; returns its label and, when `image`
// is given, puts the image's bytes there. Throws what write() throws.
inline int64_t write_sample(mploader::vision::ImageFolder& data, int64_t index,
                            std::vector<uint8_t>* image = nullptr) {
  const mploader::SampleLayout layout = *data.sample_layout();
  std::vector<std::vector<uint8_t>> memory;
  std::vector<uint8_t*> bases;
  std::vector<size_t> sizes;
  for (const mploader::FieldLayout& field : layout) {
    memory.emplace_back(field.nbytes());
    bases.push_back(memory.back().data());
    sizes.push_back(field.nbytes());
  }
  mploader::SampleWriter writer(layout, bases.data(), sizes.data(), 0);
  data.write(index, writer);
  if (image != nullptr) *image = memory[0];
  int64_t label;
  std::memcpy(&label, bases[1], sizeof label);
  return label;
}

}  // namespace vision_test
