// Text fields (Sample::set_text) in a batch, whatever the collator: every sample names the same
// text fields in one order; in the batch each is two tensor-table entries of its name, int64
// offsets [B+1] then the rows' bytes concatenated (uint8 [total]), after the collator's
// tensors. Assembly adds and fills them around the collator, so stack, pad and custom
// collators carry text alike; the main process reads them back as TextColumns.
#pragma once

#include "core/batch_plan.h"

#include <mploader/batch.h>
#include <mploader/tensor_dict.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace mploader::detail {

// Every sample's text fields must be samples[0]'s, by name and in order, and no field may be
// text in one sample and a tensor in another. Throws SampleError naming both samples.
void check_text_fields(const std::vector<Sample>& samples);

// For a batch whose sample 0 has no text field (the streaming path): throws SampleError when
// the sample in `row` has one; `layout` is the batch's tensors, to name a field that is a
// tensor in sample 0.
void check_no_text(size_t row, const Sample& sample, const std::vector<TensorLayout>& layout);

// Appends the two entries of each of samples[0]'s text fields to `layout`, and the kind of
// every entry of `layout` (its tensors first) to `kinds`.
void append_text_layout(const std::vector<Sample>& samples, std::vector<TensorLayout>& layout,
                        std::vector<ipc::FieldKind>& kinds);

// Writes the samples' text fields where `plan` put them in the memory at `base`.
void fill_text_fields(const std::vector<Sample>& samples, const PlannedBatch& plan,
                      uint8_t* base);

// The most bytes the slot-size probe sets aside for a batch's text fields. The probe reads one
// sample (or the first batch), and one long string there (a whole book as the first
// "transcript") would otherwise size every slot of every worker for batch_size copies of it,
// twice over; batches with more text than this take an overflow segment instead.
constexpr uint64_t kMaxTextSlotBytes = uint64_t{64} << 20;

// The text fields the probe read: each field's bytes over `rows` samples (0 rows: none).
struct ProbedTexts {
  uint64_t rows = 0;
  std::vector<std::pair<std::string, uint64_t>> fields;  // name, bytes in all `rows`
};
// Of a planned batch (in the worker) and of the tensor table it wrote (in the main process).
ProbedTexts probed_texts(const PlannedBatch& plan);
ProbedTexts probed_texts(const ipc::TaskDescriptor& table);

struct TextSlotBytes {
  uint64_t wanted = 0;  // room for texts twice as long as probed, and 32 bytes more, per row
  uint64_t bytes = 0;   // what the slot sets aside: `wanted`, at most kMaxTextSlotBytes
};
// Bytes a batch of `batch_size` samples like the probed ones needs for its text fields.
TextSlotBytes estimate_text_bytes(const ProbedTexts& texts, uint64_t batch_size);

// The text columns of `plan`'s entries over `base`; their tensors hold `keep_alive`. Each
// column's offsets are checked against its bytes (TextColumn's constructor throws
// std::invalid_argument): memory a worker wrote must not make us read outside it.
std::vector<std::pair<std::string, TextColumn>> text_columns(
    const PlannedBatch& plan, uint8_t* base, const std::shared_ptr<void>& keep_alive);

}  // namespace mploader::detail
