# Sourced by the configure tests (check_bad_torch.sh, check_torch_choice.sh).
# make_fake_libtorch GOOD_TORCH_DIR DEST: a libtorch in the zip's layout at DEST (include, lib,
# share/cmake/{Torch,Caffe2}), made from the good one's: headers and libraries linked, configs
# copied so that a test may edit them. Sets good_root to the good libtorch's root.
make_fake_libtorch() {
  good_root=$(cd "$1/../../.." && pwd)
  mkdir -p "$2/lib" "$2/share/cmake"
  ln -s "$good_root/include" "$2/include"
  cp -r "$good_root/share/cmake/Torch" "$good_root/share/cmake/Caffe2" "$2/share/cmake/"
  for lib in "$good_root"/lib/*.so*; do ln -s "$lib" "$2/lib/"; done
}
