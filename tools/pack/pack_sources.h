// mploader-pack's inputs as Datasets whose samples are the pack's members, ready to write: each
// sample's text fields are named "<kind>:<field>" (kind image, int, npy or text) and hold the
// member's bytes. The workers do the encoding (images decoded, resized and encoded again;
// tensors as .npy), so the Loader spreads it over the cores and explains a worker that dies.
#pragma once

#include <mploader/dataset.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace mploader::pack {

// How images are written: copied as they are, or decoded, shrunk to a longer side of at most
// max_side and encoded again as JPEG at `quality` (every image, so that all are alike).
struct ImageEncoding {
  bool copy = false;
  int max_side = 512;
  int quality = 90;
};

// An image folder (ImageFolder's layout) or list file: fields "image" and "label".
std::shared_ptr<Dataset> image_source(const std::string& input, const ImageEncoding& encoding);

// Any dataset's samples: integer scalars as "int", other tensors as "npy", text fields as text.
std::shared_ptr<Dataset> generic_source(std::shared_ptr<Dataset> inner);

// The pack's field of a text field's name "<kind>:<field>"; false for another name.
bool split_member_field(const std::string& text_name, std::string& kind, std::string& field);

}  // namespace mploader::pack
