# Sources of the samplers beyond the sequential and random ones, added to the mploader library:
# distributed and bucketed samplers with the launcher's variables, a StreamingDataset's epoch
# plan, and weighted, subset and mixture sampling. Kept apart from the top-level list so that
# changes to samplers and to the core do not collide.
target_sources(mploader PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/rank_agreement.cc
  ${CMAKE_CURRENT_LIST_DIR}/distributed_sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/bucket_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/bucket_sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/bucket_state.cc
  ${CMAKE_CURRENT_LIST_DIR}/launch_env.cc
  # StreamingDataset epochs: shards to ranks and workers
  ${CMAKE_CURRENT_LIST_DIR}/stream_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/stream_sampler.cc
  # Weighted, subset and mixture sampling
  ${CMAKE_CURRENT_LIST_DIR}/weights.cc
  ${CMAKE_CURRENT_LIST_DIR}/subset_sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/weighted_sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/distributed_weighted.cc
  ${CMAKE_CURRENT_LIST_DIR}/mixture_sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/epoch_limit.cc
  # c10d (ProcessGroup) only here: a heavy include, and optional (see the file).
  ${CMAKE_CURRENT_LIST_DIR}/c10d_agreement.cc
)
