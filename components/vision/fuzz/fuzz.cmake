# mploader::vision: the libFuzzer target, included by fuzz/CMakeLists.txt (its function
# mploader_fuzz_target; sources named from the project's root).
find_package(JPEG REQUIRED)
find_package(PNG REQUIRED)
mploader_fuzz_target(image "image headers and decode"
                     SOURCES components/vision/decode.cc components/vision/decode_jpeg.cc components/vision/decode_png.cc
                             components/vision/decode_png_whole.cc components/vision/image.cc
                     LIBS JPEG::JPEG PNG::PNG deflate)
