// Text fields in a batch (core/text_fields.h), and the public TextColumn.
#include "core/text_fields.h"

#include "core/exception_text.h"
#include "util/errors.h"

#include <mploader/collate.h>
#include <mploader/errors.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace mploader {
namespace {

// "uint8 [5] (CPU, contiguous)", or "undefined": what a TextColumn was given.
std::string tensor_text(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  return std::string(c10::toString(t.scalar_type())) + " " + detail::shape_text(t.sizes()) +
         " (" + t.device().str() + (t.is_contiguous() ? ", contiguous)" : ", not contiguous)");
}

}  // namespace

TextColumn::TextColumn(at::Tensor bytes, at::Tensor offsets)
    : bytes_(std::move(bytes)), offsets_(std::move(offsets)) {
  if (bytes_.scalar_type() != at::kByte || bytes_.dim() != 1 || !bytes_.is_contiguous() ||
      offsets_.scalar_type() != at::kLong || offsets_.dim() != 1 || offsets_.numel() < 1 ||
      !offsets_.is_contiguous() || !bytes_.device().is_cpu() || !offsets_.device().is_cpu()) {
    throw OptionError("offsets",
                      detail::message("TextColumn",
                                      "bytes are " + tensor_text(bytes_) + " and offsets " +
                                          tensor_text(offsets_),
                                      "Give contiguous CPU tensors: uint8 [total] bytes and "
                                      "int64 [rows + 1] offsets"));
  }
  starts_ = offsets_.data_ptr<int64_t>();
  data_ = reinterpret_cast<const char*>(bytes_.data_ptr<uint8_t>());
  rows_ = static_cast<size_t>(offsets_.numel() - 1);
  bool ok = starts_[0] == 0 && starts_[rows_] == bytes_.numel();
  for (size_t i = 0; ok && i < rows_; ++i) ok = starts_[i] <= starts_[i + 1];
  if (!ok) {
    throw OptionError("offsets", detail::message("TextColumn",
                                                 "the offsets do not rise from 0 to the number "
                                                 "of bytes (" + std::to_string(bytes_.numel()) +
                                                     ")",
                                                 "Give offsets that rise from 0 to the bytes' "
                                                 "length, one more than the rows"));
  }
}

std::string_view TextColumn::operator[](size_t row) const {
  if (row >= rows_) {
    throw OptionError("row", detail::message("TextColumn", "no text row " + std::to_string(row) +
                                                               " in a column of " +
                                                               std::to_string(rows_),
                                             "Give a row below size()"));
  }
  const int64_t begin = starts_[row];
  return std::string_view(data_ + begin, static_cast<size_t>(starts_[row + 1] - begin));
}

std::vector<std::string> TextColumn::to_strings() const {
  std::vector<std::string> out;
  out.reserve(rows_);
  for (size_t i = 0; i < rows_; ++i) out.emplace_back((*this)[i]);
  return out;
}

}  // namespace mploader

namespace mploader::detail {
namespace {

bool same_text_names(const Sample& a, const Sample& b) {
  if (a.texts().size() != b.texts().size()) return false;
  for (size_t k = 0; k < a.texts().size(); ++k) {
    if (a.texts()[k].first != b.texts()[k].first) return false;
  }
  return true;
}

std::vector<std::string> text_names(const Sample& s) {
  std::vector<std::string> out;
  for (const auto& item : s.texts()) out.push_back(item.first);
  return out;
}

// Field `name` is text in sample `text_row` and a tensor in sample `tensor_row`.
[[noreturn]] void throw_kind_mismatch(const std::string& name, size_t text_row,
                                      size_t tensor_row) {
  const size_t at_fault = std::max(text_row, tensor_row);
  throw SampleError(at_fault, [=](const SampleError::NameOf& sample) {
    return "field '" + name + "' is a text field in " + sample(text_row) + " but a tensor in " +
           sample(tensor_row) + "; Dataset::get must give a field one kind in every sample " +
           "(Sample::set_text for text and bytes, Sample::set for tensors)";
  });
}

// Sample `row` has other text fields than sample 0 (none of them a tensor in the other).
[[noreturn]] void throw_text_names_differ(size_t row, std::vector<std::string> names,
                                          std::vector<std::string> first_names) {
  throw SampleError(row, [=](const SampleError::NameOf& sample) {
    return sample(row) + " has text fields " + quoted_names(names) + " but " + sample(0) +
           " has " + quoted_names(first_names) +
           "; Dataset::get must set the same text fields, in one order, for every sample";
  });
}

}  // namespace

void check_text_fields(const std::vector<Sample>& samples) {
  if (samples.empty()) return;
  const Sample& first = samples[0];
  for (size_t row = 1; row < samples.size(); ++row) {
    const Sample& s = samples[row];
    if (same_text_names(s, first)) continue;
    for (const auto& item : s.texts()) {
      if (first.find(item.first) != nullptr) throw_kind_mismatch(item.first, row, 0);
    }
    for (const auto& item : first.texts()) {
      if (s.find(item.first) != nullptr) throw_kind_mismatch(item.first, 0, row);
    }
    throw_text_names_differ(row, text_names(s), text_names(first));
  }
}

void check_no_text(size_t row, const Sample& sample, const std::vector<TensorLayout>& layout) {
  if (sample.texts().empty()) return;
  for (const auto& item : sample.texts()) {
    for (const TensorLayout& t : layout) {
      if (t.name == item.first) throw_kind_mismatch(item.first, row, 0);
    }
  }
  throw_text_names_differ(row, text_names(sample), {});
}

void append_text_layout(const std::vector<Sample>& samples, std::vector<TensorLayout>& layout,
                        std::vector<ipc::FieldKind>& kinds) {
  kinds.assign(layout.size(), ipc::FieldKind::kTensor);
  if (samples.empty()) return;
  const auto rows = static_cast<int64_t>(samples.size());
  for (size_t k = 0; k < samples[0].texts().size(); ++k) {
    int64_t total = 0;
    for (const Sample& s : samples) total += static_cast<int64_t>(s.texts()[k].second.size());
    const std::string& name = samples[0].texts()[k].first;
    layout.push_back({name, at::kLong, {rows + 1}});
    kinds.push_back(ipc::FieldKind::kTextOffsets);
    layout.push_back({name, at::kByte, {total}});
    kinds.push_back(ipc::FieldKind::kTextBytes);
  }
}

void fill_text_fields(const std::vector<Sample>& samples, const PlannedBatch& plan,
                      uint8_t* base) {
  size_t entry = 0;
  while (entry < plan.kinds.size() && plan.kinds[entry] == ipc::FieldKind::kTensor) ++entry;
  for (size_t k = 0; entry + 1 < plan.kinds.size(); ++k, entry += 2) {
    auto* offsets = reinterpret_cast<int64_t*>(base + plan.offsets[entry]);
    uint8_t* bytes = base + plan.offsets[entry + 1];
    int64_t at_byte = 0;
    offsets[0] = 0;
    for (size_t row = 0; row < samples.size(); ++row) {
      const std::string& value = samples[row].texts()[k].second;
      if (!value.empty()) std::memcpy(bytes + at_byte, value.data(), value.size());
      at_byte += static_cast<int64_t>(value.size());
      offsets[row + 1] = at_byte;
    }
  }
}

ProbedTexts probed_texts(const PlannedBatch& plan) {
  ProbedTexts texts;
  for (size_t i = 0; i + 1 < plan.kinds.size(); ++i) {
    if (plan.kinds[i] != ipc::FieldKind::kTextOffsets) continue;
    texts.rows = static_cast<uint64_t>(plan.layout[i].shape[0] - 1);
    texts.fields.emplace_back(plan.layout[i].name, plan.nbytes[i + 1]);
    ++i;
  }
  return texts;
}

ProbedTexts probed_texts(const ipc::TaskDescriptor& table) {
  ProbedTexts texts;
  const uint32_t count = std::min<uint32_t>(table.num_tensors, ipc::kMaxTensors);
  for (uint32_t i = 0; i + 1 < count; ++i) {
    const ipc::TensorMeta& offsets = table.tensors[i];
    if (offsets.kind != static_cast<uint32_t>(ipc::FieldKind::kTextOffsets)) continue;
    texts.rows = offsets.shape[0] > 0 ? static_cast<uint64_t>(offsets.shape[0] - 1) : 0;
    texts.fields.emplace_back(std::string(offsets.name, strnlen(offsets.name,
                                                                sizeof offsets.name)),
                              table.tensors[i + 1].nbytes);
    ++i;
  }
  return texts;
}

TextSlotBytes estimate_text_bytes(const ProbedTexts& texts, uint64_t batch_size) {
  TextSlotBytes out;
  if (texts.rows == 0) return out;
  // In 128 bits: a probed length times a batch size may pass 2^64.
  unsigned __int128 wanted = 0;
  for (const auto& field : texts.fields) {
    const uint64_t per_row = (field.second + texts.rows - 1) / texts.rows;
    wanted += ipc::align_up(8 * (batch_size + 1), ipc::kPayloadAlign);
    wanted += (static_cast<unsigned __int128>(2 * per_row + 32) * batch_size +
               ipc::kPayloadAlign - 1) / ipc::kPayloadAlign * ipc::kPayloadAlign;
  }
  const auto most = static_cast<unsigned __int128>(std::numeric_limits<uint64_t>::max());
  out.wanted = static_cast<uint64_t>(std::min(wanted, most));
  out.bytes = std::min(out.wanted, kMaxTextSlotBytes);
  return out;
}

std::vector<std::pair<std::string, TextColumn>> text_columns(
    const PlannedBatch& plan, uint8_t* base, const std::shared_ptr<void>& keep_alive) {
  std::vector<std::pair<std::string, TextColumn>> out;
  for (size_t i = 0; i + 1 < plan.kinds.size(); ++i) {
    if (plan.kinds[i] != ipc::FieldKind::kTextOffsets) continue;
    const TensorLayout& offsets = plan.layout[i];
    const TensorLayout& bytes = plan.layout[i + 1];
    auto view = [&](size_t entry, const TensorLayout& t) {
      return at::from_blob(base + plan.offsets[entry], t.shape, [keep_alive](void*) {},
                           at::TensorOptions().dtype(t.dtype));
    };
    out.emplace_back(offsets.name, TextColumn(view(i + 1, bytes), view(i, offsets)));
    ++i;
  }
  return out;
}

}  // namespace mploader::detail
