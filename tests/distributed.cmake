# Tests of the distributed samplers: sources added to mploader_tests, and any extra
# ctest entries.
target_sources(mploader_tests PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/test_distributed_sampler.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_distributed_bucket.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_distributed_properties.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_distributed_env.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_distributed_c10d.cc
)
# The multi-process test builds c10d's Gloo process group, whose declarations libtorch guards
# with USE_C10D_GLOO; its headers come with libgloo-dev. Without them the test says it skipped.
find_path(MPLOADER_GLOO_INCLUDE_DIR gloo/config.h)
if(MPLOADER_GLOO_INCLUDE_DIR)
  set_source_files_properties(${CMAKE_CURRENT_LIST_DIR}/test_distributed_c10d.cc
    PROPERTIES COMPILE_DEFINITIONS USE_C10D_GLOO)
else()
  message(STATUS "gloo/config.h not found (libgloo-dev): the c10d Gloo test will be skipped")
endif()

# mploader-bench --workload tokens end to end: the ranks' dumped batches cover the corpus with
# equal batch counts; bucketed padding stays under the bound bucket_ratio sets (1 - 1/1.05 is
# 4.8%); wrong options exit 2 naming the option.
if(TARGET mploader-bench)
  set(bench $<TARGET_FILE:mploader-bench>)
  add_test(NAME "bench: tokens distributed-bucket ranks cover the corpus with equal batch counts"
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/data/check_token_ranks.sh ${bench} 5
            ${CMAKE_CURRENT_BINARY_DIR}/token-ranks --seed 3 --epoch 2)
  set_tests_properties("bench: tokens distributed-bucket ranks cover the corpus with equal batch counts"
    PROPERTIES PASS_REGULAR_EXPRESSION "^ok: 5 ranks x [0-9]+ batches, [1-9][0-9]* samples covered")
  add_test(NAME "bench: tokens bucket padding stays under 1 - 1/bucket_ratio"
    COMMAND ${bench} --workload tokens --sampler bucket --bucket-ratio 1.05 --workers 1 --json)
  set_tests_properties("bench: tokens bucket padding stays under 1 - 1/bucket_ratio" PROPERTIES
    PASS_REGULAR_EXPRESSION "\"pad_fraction\":0\\.0[0-4][0-9]*[,}]")
  foreach(case
      "rank outside the world|--rank 4 --world-size 4|--rank: 4 is not below --world-size 4"
      "bucket sampler with ranks|--sampler bucket --world-size 2|use distributed-bucket"
      "sample over the token budget|--max-tokens 100|sample [0-9]+ has length [0-9]+, more than max_tokens = 100")
    string(REPLACE "|" ";" parts "${case}")
    list(GET parts 0 name)
    list(GET parts 1 args)
    list(GET parts 2 expected)
    separate_arguments(args)
    add_test(NAME "bench: tokens ${name} is a clear error"
      COMMAND sh -c "\"$0\" \"$@\" 2>&1; echo \"exit status $?\"" ${bench} --workload tokens
              ${args})
    set_tests_properties("bench: tokens ${name} is a clear error" PROPERTIES
      PASS_REGULAR_EXPRESSION "${expected}.*exit status 2")
  endforeach()
endif()
