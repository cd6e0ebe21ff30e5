// decode_sample(): members to tensors. Bytes are copied once, into a tensor of their own; an
// image is decoded (only the region its crop needs) and rendered into its output tensor.
#include "shards/sample_decode.h"
#include "shards/text.h"

#include <mploader/stage_timer.h>
#include <mploader/vision/image.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace mploader::shards::detail {
namespace {


at::Tensor bytes_tensor(const Member& m) {
  at::Tensor t = at::empty({static_cast<int64_t>(m.bytes.size())}, at::kByte);
  if (!m.bytes.empty()) std::memcpy(t.data_ptr(), m.bytes.data(), m.bytes.size());
  return t;
}

}  // namespace

at::Tensor int_member_tensor(const uint8_t* data, size_t size, const std::string& name) {
  const char* begin = reinterpret_cast<const char*>(data);
  const char* end = begin + size;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (begin != end && space(*begin)) ++begin;
  while (end != begin && space(end[-1])) --end;
  if (begin != end && *begin == '+') ++begin;  // from_chars takes no '+'
  int64_t value = 0;
  const auto [stop, error] = std::from_chars(begin, end, value);
  if (begin == end || error != std::errc() || stop != end) {
    const std::string text(reinterpret_cast<const char*>(data), std::min<size_t>(size, 40));
    throw BadSample("member " + in_quotes(name) + " should hold an integer but holds " +
                    in_quotes(printable(text)) + (size > 40 ? "..." : "") + " (" +
                    std::to_string(size) + " bytes)");
  }
  return at::scalar_tensor(value, at::kLong);
}

at::Tensor image_member_tensor(const uint8_t* data, size_t size, const std::string& name,
                               const vision::Compose& transform, uint64_t seed,
                               ImageDecoding& d) {
  try {
    std::optional<ScopedStageTimer> stage(std::in_place, DatasetStage::kDecode);
    const vision::ImageInfo info = d.decoder.info(data, size);
    const vision::ImagePlan plan = transform.plan(info.width, info.height, seed);
    d.decoder.decode(data, size,
                     transform.needed_region(plan, info.width, info.height),
                     transform.min_scale(plan), d.image);
    const bool floats = transform.layout() == vision::PixelLayout::kFloat32CHW;
    at::Tensor out = at::empty(transform.output_shape(), floats ? at::kFloat : at::kByte);
    stage.emplace(DatasetStage::kTransform);
    transform.render(d.image, plan, out.data_ptr(), d.scratch);
    return out;
  } catch (const vision::DecodeError& e) {
    throw BadSample("image member " + in_quotes(name) + " does not decode: " + e.what());
  } catch (const vision::TransformError& e) {
    throw BadSample("image member " + in_quotes(name) + " does not fit the transform " +
                    transform.describe() + ": " + e.what());
  }
}

namespace {

at::Tensor member_tensor(const Member& m, const TarShardsOptions& o, uint64_t seed,
                         ImageDecoding& d) {
  if (auto it = o.image_keys.find(m.ext); it != o.image_keys.end()) {
    return image_member_tensor(m.bytes.data(), m.bytes.size(), m.name, it->second, seed, d);
  }
  if (std::find(o.int_keys.begin(), o.int_keys.end(), m.ext) != o.int_keys.end()) {
    try {
      return int_member_tensor(m.bytes.data(), m.bytes.size(), m.name);
    } catch (const BadSample& e) {
      throw BadSample(std::string(e.what()) + "; it is listed in TarShardsOptions::int_keys");
    }
  }
  return bytes_tensor(m);
}

std::string member_list(const RawSample& raw) {
  std::string out;
  for (const Member& m : raw.members) out += (out.empty() ? "" : ", ") + m.ext;
  return out.empty() ? "none" : out;
}

}  // namespace

Sample decode_sample(const RawSample& raw, const TarShardsOptions& options, uint64_t seed,
                     ImageDecoding& decoding) {
  Sample out;
  if (options.keys.empty()) {
    // Sorted by extension, so that every sample's tensors come in one order for collation.
    std::vector<const Member*> members;
    for (const Member& m : raw.members) members.push_back(&m);
    std::sort(members.begin(), members.end(),
              [](const Member* a, const Member* b) { return a->ext < b->ext; });
    for (const Member* m : members) out.set(m->ext, member_tensor(*m, options, seed, decoding));
    return out;
  }
  for (const std::string& key : options.keys) {
    auto it = std::find_if(raw.members.begin(), raw.members.end(),
                           [&](const Member& m) { return m.ext == key; });
    if (it == raw.members.end()) {
      throw BadSample("sample " + in_quotes(raw.key) + " has no member of extension " +
                      in_quotes(key) + " (TarShardsOptions::keys); its members are: " +
                      member_list(raw));
    }
    out.set(key, member_tensor(*it, options, seed, decoding));
  }
  return out;
}

}  // namespace mploader::shards::detail
