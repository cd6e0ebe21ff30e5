#include "ipc/region_layout.h"

#include <cstring>
#include <new>

namespace mploader::ipc {

static_assert(std::is_standard_layout_v<TaskDescriptor>);
static_assert(std::is_standard_layout_v<RegionHeader>);
static_assert(std::is_standard_layout_v<TaskRing>);
static_assert(std::is_standard_layout_v<SharedSlotStack>);

RegionGeometry RegionGeometry::compute(uint32_t num_descriptors, uint32_t num_slots,
                                       uint32_t max_indices, uint64_t slot_bytes) {
  RegionGeometry g;
  g.num_descriptors = num_descriptors;
  g.num_slots = num_slots;
  g.max_indices = max_indices;
  g.slot_bytes = align_up(slot_bytes, kPageBytes);
  g.descriptor_stride = align_up(sizeof(TaskDescriptor) + sizeof(int64_t) * max_indices, 64);
  g.task_ring_offset = align_up(sizeof(RegionHeader), 64);
  g.done_ring_offset = align_up(g.task_ring_offset + sizeof(TaskRing), 64);
  g.descriptors_offset = align_up(g.done_ring_offset + sizeof(TaskRing), 64);
  g.slots_offset = align_up(g.descriptors_offset + g.descriptor_stride * num_descriptors,
                            kPageBytes);
  g.total_bytes = g.slots_offset + g.slot_bytes * num_slots;
  return g;
}

void RegionView::initialize(void* base, const RegionGeometry& g, int worker_id) {
  auto* h = new (base) RegionHeader();
  h->magic = kRegionMagic;
  h->version = kLayoutVersion;
  h->worker_id = worker_id;
  h->region_bytes = g.total_bytes;
  h->num_descriptors = g.num_descriptors;
  h->num_slots = g.num_slots;
  h->max_indices = g.max_indices;
  h->slot_bytes = g.slot_bytes;
  h->descriptor_stride = g.descriptor_stride;
  h->descriptors_offset = g.descriptors_offset;
  h->slots_offset = g.slots_offset;
  h->stop.store(0);
  h->cancel_generation.store(0);
  h->tasks_done.store(0);
  h->busy_ns.store(0);
  for (std::atomic<uint64_t>& stage : h->stage_ns) stage.store(0);
  h->cpu_ns.store(0);
  h->current_index.store(-1);
  h->current_sequence.store(0);
  h->phase.store(static_cast<uint32_t>(WorkerPhase::kStarting));
  h->crash.state.store(CrashRecord::kEmpty);
  h->stack_dump.state.store(CrashRecord::kEmpty);
  h->init_error[0] = '\0';
  h->foreign_wait_status.store(-1);
  h->maps_bytes = 0;
  h->skips_total.store(0);
  h->skips_written.store(0);
  h->skips_read.store(0);
  h->skips_counted.store(0);
  // Slot 0 on top: a fresh region hands out slots 0, 1, 2, ... in that order.
  h->free_slots.reset();
  for (uint32_t s = g.num_slots; s > 0; --s) h->free_slots.push(s - 1);
  auto* bytes = static_cast<uint8_t*>(base);
  new (bytes + g.task_ring_offset) TaskRing();
  new (bytes + g.done_ring_offset) TaskRing();
  reinterpret_cast<TaskRing*>(bytes + g.task_ring_offset)->init();
  reinterpret_cast<TaskRing*>(bytes + g.done_ring_offset)->init();
}

TaskRing& RegionView::task_ring() const {
  return *reinterpret_cast<TaskRing*>(base_ + align_up(sizeof(RegionHeader), 64));
}

TaskRing& RegionView::done_ring() const {
  const uint64_t task = align_up(sizeof(RegionHeader), 64);
  return *reinterpret_cast<TaskRing*>(base_ + align_up(task + sizeof(TaskRing), 64));
}

TaskDescriptor& RegionView::descriptor(uint32_t id) const {
  const RegionHeader& h = header();
  return *reinterpret_cast<TaskDescriptor*>(base_ + h.descriptors_offset +
                                            h.descriptor_stride * id);
}

int64_t* RegionView::indices(uint32_t id) const {
  return reinterpret_cast<int64_t*>(&descriptor(id) + 1);
}

uint8_t* RegionView::slot(uint32_t index) const {
  const RegionHeader& h = header();
  return base_ + h.slots_offset + h.slot_bytes * index;
}

void copy_text(char* dst, size_t size, const char* src) {
  size_t i = 0;
  for (; src != nullptr && src[i] != '\0' && i + 1 < size; ++i) dst[i] = src[i];
  dst[i] = '\0';
}

}  // namespace mploader::ipc
