# The mploader::vision component's tests: a binary of their own, so that the core library's
# tests neither link the image libraries nor wait for them. The reference images and the PIL
# comparisons use MPLOADER_PYTHON (cmake/python.cmake), with pillow from scripts/install-deps.
if(NOT TARGET mploader_vision)
  return()
endif()
add_executable(mploader_vision_tests
  ${CMAKE_CURRENT_LIST_DIR}/test_image.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_image_folder.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_decode.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_transforms.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_folder_scan.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_bad_files.cc
  ${CMAKE_CURRENT_LIST_DIR}/test_full_decode.cc
)
mploader_test_binary(mploader_vision_tests)
target_link_libraries(mploader_vision_tests PRIVATE mploader_vision)
target_compile_definitions(mploader_vision_tests PRIVATE
  MPLOADER_PYTHON="${MPLOADER_PYTHON}"
  MPLOADER_VISION_TEST_DIR="${CMAKE_CURRENT_LIST_DIR}")
catch_discover_tests(mploader_vision_tests
  EXTRA_ARGS --warn NoTests
  PROPERTIES TIMEOUT 300 SKIP_REGULAR_EXPRESSION "skipped: "
  DISCOVERY_TIMEOUT 60)
