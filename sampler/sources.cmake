# Sources of the distributed samplers (issue 5), added to the mploader library. Kept apart from
# the top-level list so that work on samplers and on the core does not collide.
target_sources(mploader PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/distributed_sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/bucket_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/bucket_sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/bucket_state.cc
  ${CMAKE_CURRENT_LIST_DIR}/launch_env.cc
  # StreamingDataset epochs (issue 16)
  ${CMAKE_CURRENT_LIST_DIR}/stream_plan.cc
  ${CMAKE_CURRENT_LIST_DIR}/stream_sampler.cc
  # Weighted, subset and mixture sampling (issue 17)
  ${CMAKE_CURRENT_LIST_DIR}/weights.cc
  ${CMAKE_CURRENT_LIST_DIR}/subset_sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/weighted_sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/distributed_weighted.cc
  ${CMAKE_CURRENT_LIST_DIR}/mixture_sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/epoch_limit.cc
  # c10d (ProcessGroup) only here: a heavy include, and optional (see the file).
  ${CMAKE_CURRENT_LIST_DIR}/c10d_agreement.cc
)
