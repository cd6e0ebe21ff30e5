# mploader-bench --workload hdf5: H5Dataset against PyTorch's DataLoader over h5py (h5_bench.h).
# Included by bench/CMakeLists.txt when mploader_hdf5 is built; h5_cli.cc registers the workload.
target_sources(mploader-bench PRIVATE
  ${CMAKE_CURRENT_LIST_DIR}/h5_cli.cc
  ${CMAKE_CURRENT_LIST_DIR}/run_h5.cc)
target_link_libraries(mploader-bench PRIVATE mploader_hdf5)
# The peer script: found here by a bench in its build tree, installed beside the bench's own.
set_property(GLOBAL APPEND PROPERTY MPLOADER_BENCH_SCRIPTS ${CMAKE_CURRENT_LIST_DIR}/h5_peers.py)
