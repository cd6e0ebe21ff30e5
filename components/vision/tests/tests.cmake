# The mploader::vision component's tests. The reference images and the PIL comparisons use
# MPLOADER_PYTHON (cmake/python.cmake), with pillow from scripts/install-deps.
mploader_component_tests(vision
  SOURCES test_image.cc test_image_folder.cc test_decode.cc test_transforms.cc
          test_folder_scan.cc test_bad_files.cc test_full_decode.cc)
