// decode_sample(): a tar sample's members to named tensors, as TarShardsOptions says.
#pragma once

#include "shards/tar_reader.h"

#include <mploader/errors.h>
#include <mploader/tensor_dict.h>
#include <mploader/vision/decode.h>
#include <mploader/vision/transforms.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <stdexcept>

namespace mploader::shards::detail {

/// A sample that cannot become tensors (a missing member, an int member that is no integer,
/// an image that does not decode): what() says which member and why, without the tar's name,
/// which the caller adds. OnBadSample::kSkip skips these, and only these.
class BadSample : public Error {
 public:
  using Error::Error;
};

/// An image decoder and its buffers, reused from one image member to the next.
struct ImageDecoding {
  explicit ImageDecoding(int64_t max_pixels) : decoder(max_pixels) {}
  vision::ImageDecoder decoder;
  vision::RgbImage image;
  vision::RenderScratch scratch;
};

/// A member's decimal integer (spaces around it allowed) as an int64 scalar; `name` is for the
/// message. Throws BadSample.
at::Tensor int_member_tensor(const uint8_t* data, size_t size, const std::string& name);
/// An image member decoded (only the region the transform needs) and rendered by `transform`.
/// Throws BadSample naming `name` for a file that does not decode or does not fit.
at::Tensor image_member_tensor(const uint8_t* data, size_t size, const std::string& name,
                               const vision::Compose& transform, uint64_t seed,
                               ImageDecoding& decoding);

/// The tensors of `raw`: the members of options.keys in that order (all members sorted by
/// extension when it is empty), each one decoded by its kind. `seed` seeds random image
/// transforms. Throws BadSample.
Sample decode_sample(const RawSample& raw, const TarShardsOptions& options, uint64_t seed,
                     ImageDecoding& decoding);

}  // namespace mploader::shards::detail
