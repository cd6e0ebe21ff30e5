# The example training loops (examples/) run end to end on a short schedule: the MLP
# must reach 80 % test accuracy in one epoch; the data-parallel one trains 2 ranks over Gloo for
# 300 steps (75 % or more) and checks that their parameters end identical; bad data is a clear
# error naming the file.
set(fmnist_dir /usr/share/datasets/fashion-mnist)
# The limit of an example that writes its data and trains: a hang, not a slow machine. On 2
# cores they take 0.5 to 2.5 minutes, and over 5 beside the load of scripts/test --under-load
# and another test's compile.
set(example_timeout 900)
if(TARGET fashion_mnist_mlp)
  set(mlp $<TARGET_FILE:fashion_mnist_mlp>)
  add_test(NAME "example: MLP on Fashion-MNIST reaches 80 % test accuracy in one epoch"
    COMMAND ${mlp} --data-dir ${fmnist_dir} --epochs 1 --workers 2 --min-accuracy 0.80)
  set_tests_properties("example: MLP on Fashion-MNIST reaches 80 % test accuracy in one epoch"
    PROPERTIES PASS_REGULAR_EXPRESSION "epoch 1/1: train loss [0-9.]+, test accuracy (8|9)[0-9]\\.[0-9]+ %")
  add_test(NAME "example: MLP with spawned workers trains"
    COMMAND ${mlp} --data-dir ${fmnist_dir} --epochs 1 --workers 2 --start spawn --max-batches 100)
  set_tests_properties("example: MLP with spawned workers trains"
    PROPERTIES PASS_REGULAR_EXPRESSION "epoch 1/1: train loss [0-9.]+, test accuracy [0-9.]+ %, 6400 samples")
  # mploader's debug line about its rings shows with SPDLOG_LEVEL=debug, and --log-level
  # (mploader::set_log_level) overrides it.
  add_test(NAME "example: SPDLOG_LEVEL=debug shows mploader's debug lines"
    COMMAND sh -c "SPDLOG_LEVEL=debug \"$0\" --data-dir \"$1\" --max-batches 2 2>&1" ${mlp} ${fmnist_dir})
  set_tests_properties("example: SPDLOG_LEVEL=debug shows mploader's debug lines" PROPERTIES
    PASS_REGULAR_EXPRESSION "\\[debug\\] mploader: 2 workers, [0-9]+ slots of ")
  add_test(NAME "example: --log-level warn wins over SPDLOG_LEVEL=debug"
    COMMAND sh -c "SPDLOG_LEVEL=debug \"$0\" --data-dir \"$1\" --max-batches 2 --log-level warn 2>&1" ${mlp} ${fmnist_dir})
  set_tests_properties("example: --log-level warn wins over SPDLOG_LEVEL=debug" PROPERTIES
    PASS_REGULAR_EXPRESSION "epoch 1/1: train loss"
    FAIL_REGULAR_EXPRESSION "mploader: 2 workers")
  add_test(NAME "example: a missing data folder is a clear error"
    COMMAND sh -c "\"$0\" --data-dir /nonexistent/fmnist 2>&1; echo \"exit status $?\"" ${mlp})
  set_tests_properties("example: a missing data folder is a clear error" PROPERTIES
    PASS_REGULAR_EXPRESSION
    "/nonexistent/fmnist/train-images-idx3-ubyte\\(\\.gz\\): no such file\\. Fix: .*--data-dir.*exit status 2")
  # A training file cut short after 1,000 bytes (plain, not gzipped), the others intact.
  set(cut ${CMAKE_CURRENT_BINARY_DIR}/fmnist-truncated)
  add_test(NAME "example: a truncated data file is a clear error"
    COMMAND sh -c "rm -rf \"$1\" && mkdir -p \"$1\" && gzip -dc \"$2\"/train-images-idx3-ubyte.gz | head -c 1000 > \"$1\"/train-images-idx3-ubyte; cp \"$2\"/*labels* \"$2\"/t10k-* \"$1\"/ && \"$0\" --data-dir \"$1\" 2>&1; echo \"exit status $?\""
            ${mlp} ${cut} ${fmnist_dir})
  set_tests_properties("example: a truncated data file is a clear error" PROPERTIES
    PASS_REGULAR_EXPRESSION
    "fmnist-truncated/train-images-idx3-ubyte: truncated: the header announces 47040000 data bytes, the file holds 984\\. Fix: .*exit status 2")
endif()
if(TARGET fashion_mnist_ddp)
  add_test(NAME "example: data-parallel MLP on 2 Gloo ranks ends with identical parameters"
    COMMAND $<TARGET_FILE:fashion_mnist_ddp> --data-dir ${fmnist_dir} --world-size 2 --epochs 1
            --workers 2 --max-batches 300 --min-accuracy 0.75 --timeout 280)
  set_tests_properties("example: data-parallel MLP on 2 Gloo ranks ends with identical parameters"
    PROPERTIES PASS_REGULAR_EXPRESSION
    "epoch 1/1: train loss [0-9.]+, test accuracy [0-9.]+ %, 19200 samples over 2 ranks.*parameters identical on all 2 ranks")
endif()

# The language model from a token file through TokenStream: 2 Gloo ranks of 2
# workers each, 2 epochs; each epoch must take equal steps on both ranks and deliver every
# window, and the model must learn (2.6 bits per byte measured, 8 before training).
if(TARGET token_lm_ddp)
  set(lm_cache ${CMAKE_CURRENT_BINARY_DIR}/example-token-lm)
  add_test(NAME "example: a byte-level LM on 2 Gloo ranks streams every window in equal steps"
    COMMAND sh -c "rm -rf \"$1\" && \"$0\" --cache \"$1\" --world-size 2 --workers 2 --epochs 2 --max-val-bits 3.3 --timeout 250 2>&1; echo \"exit status $?\""
            $<TARGET_FILE:token_lm_ddp> ${lm_cache})
  set_tests_properties("example: a byte-level LM on 2 Gloo ranks streams every window in equal steps"
    PROPERTIES PASS_REGULAR_EXPRESSION
    "epoch 2/2: train loss [0-9.]+, validation [0-9.]+ bits per byte; [0-9]+ steps on every rank: yes; every window delivered: yes.*exit status 0"
               TIMEOUT 300)
endif()

# A job checkpointed on 4 Gloo ranks mid-epoch and resumed on 2: every sample of the epoch
# exactly once across the two runs, equal steps within each.
if(TARGET elastic_resume_ddp)
  add_test(NAME "example: a 4-rank checkpoint resumes on 2 Gloo ranks with every sample once"
    COMMAND sh -c "\"$0\" --dir \"$1\" --from 4 --to 2 --stop-after 6 --samples 1000 --workers 1 2>&1; echo \"exit status $?\""
            $<TARGET_FILE:elastic_resume_ddp> ${CMAKE_CURRENT_BINARY_DIR}/example-elastic)
  set_tests_properties("example: a 4-rank checkpoint resumes on 2 Gloo ranks with every sample once"
    PROPERTIES PASS_REGULAR_EXPRESSION
    "run 1 on 4 ranks: 6 to 6 steps per rank, last loss [0-9.]+; the job state says 384 of 1000 samples of epoch 3 delivered.*run 2 on 2 ranks: [0-9]+ to [0-9]+ steps.*[0-9]+ samples on 4 ranks, then [0-9]+ on 2 ranks: 1000 of 1000 samples exactly once, 0 more than once, 0 never.*exit status 0"
               TIMEOUT 250)
endif()

# The image classifier from a folder of JPEGs: the folder is made afresh from
# Fashion-MNIST (6,000 training and 1,000 test JPEGs), then one epoch with 2 workers must pass
# 60 % test accuracy (74 % measured; the full run, 3 epochs over 60,000, reaches 88.5 %).
if(TARGET image_folder_cnn)
  set(cnn_cache ${CMAKE_CURRENT_BINARY_DIR}/example-image-cache)
  add_test(NAME "example: a CNN trained from a folder of JPEGs through ImageFolder learns"
    COMMAND sh -c "rm -rf \"$1\" && MPLOADER_EXAMPLE_CACHE=\"$1\" \"$0\" --fmnist-dir \"$2\" --limit 6000 --epochs 1 --workers 2 --min-accuracy 0.6 2>&1; echo \"exit status $?\""
            $<TARGET_FILE:image_folder_cnn> ${cnn_cache} ${fmnist_dir})
  set_tests_properties("example: a CNN trained from a folder of JPEGs through ImageFolder learns"
    PROPERTIES PASS_REGULAR_EXPRESSION "epoch 1/1: train loss [0-9.]+, test accuracy [0-9.]+ %.*exit status 0"
               TIMEOUT ${example_timeout})
endif()

# The MLP from tar shards in an S3-compatible bucket (moto_server on 127.0.0.1), given only the
# bucket's URLs and credentials: every training sample once, and 70 % test accuracy after one
# epoch over 12,000 samples.
if(TARGET tar_shards_mlp AND TARGET mploader-manifest AND MPLOADER_PYTHON)
  set(name "example: an MLP trains from tar shards in an S3 bucket given only its URL")
  add_test(NAME "${name}"
    COMMAND ${MPLOADER_PYTHON} ${PROJECT_SOURCE_DIR}/components/remote/tests/s3_example.py
            $<TARGET_FILE:tar_shards_mlp> $<TARGET_FILE:mploader-manifest> ${fmnist_dir}
            ${CMAKE_CURRENT_BINARY_DIR}/example-s3)
  set_tests_properties("${name}" PROPERTIES
    PASS_REGULAR_EXPRESSION "epoch 1/1: train loss [0-9.]+, test accuracy [0-9.]+ %, every sample once: yes.*exit status 0"
    SKIP_REGULAR_EXPRESSION "skipped: " TIMEOUT ${example_timeout})
endif()

# The MLP from an HDF5 file that h5py writes from Fashion-MNIST (gzip-compressed chunks):
# 80 % test accuracy in one epoch with forked workers, and spawned workers train too.
if(TARGET h5_mlp AND MPLOADER_PYTHON)
  set(h5_file ${CMAKE_CURRENT_BINARY_DIR}/example-fmnist.h5)
  foreach(case "fork|reaches 80 % test accuracy in one epoch|0.80"
               "spawn|trains with spawned workers|0")
    string(REPLACE "|" ";" parts "${case}")
    list(GET parts 0 start)
    list(GET parts 1 what)
    list(GET parts 2 accuracy)
    set(name "example: an MLP from an HDF5 file h5py wrote ${what}")
    add_test(NAME "${name}"
      COMMAND sh -c "\"$0\" \"${CMAKE_SOURCE_DIR}/examples/fashion_mnist_to_h5.py\" --data-dir \"$1\" \"$2\" >/dev/null 2>&1 || { echo \"skipped: $0 could not write the HDF5 file with h5py (scripts/install-deps)\"; exit 0; }; \"$3\" --file \"$2\" --workers 2 --start $4 --min-accuracy $5 2>&1; echo \"exit status $?\""
              ${MPLOADER_PYTHON} ${fmnist_dir} ${h5_file}-${start} $<TARGET_FILE:h5_mlp> ${start}
              ${accuracy})
    set_tests_properties("${name}" PROPERTIES
      PASS_REGULAR_EXPRESSION "epoch 1/1: train loss [0-9.]+, test accuracy [0-9.]+ %, every sample once: yes.*exit status 0"
      SKIP_REGULAR_EXPRESSION "skipped: " TIMEOUT ${example_timeout})
  endforeach()
endif()

# The MLP from Parquet shards of PNG images that pyarrow writes from Fashion-MNIST in Hugging
# Face's image layout: 80 % test accuracy in one epoch with forked workers (spawned workers
# read these files in the parquet tests).
if(TARGET parquet_mlp AND MPLOADER_PYTHON)
  set(name "example: an MLP from Parquet shards of PNG images reaches 80 % test accuracy in one "
           "epoch")
  string(REPLACE ";" "" name "${name}")
  add_test(NAME "${name}"
    COMMAND sh -c "\"$0\" \"${CMAKE_SOURCE_DIR}/examples/fashion_mnist_to_parquet.py\" --data-dir \"$1\" \"$2\" >/dev/null 2>&1 || { echo \"skipped: $0 could not write the Parquet files with pyarrow and Pillow (scripts/install-deps)\"; exit 0; }; \"$3\" --dir \"$2\" --workers 2 --min-accuracy 0.80 2>&1; echo \"exit status $?\""
            ${MPLOADER_PYTHON} ${fmnist_dir} ${CMAKE_CURRENT_BINARY_DIR}/example-fmnist-parquet
            $<TARGET_FILE:parquet_mlp>)
  set_tests_properties("${name}" PROPERTIES
    PASS_REGULAR_EXPRESSION "epoch 1/1: train loss [0-9.]+, test accuracy [0-9.]+ %, every sample once: yes.*exit status 0"
    SKIP_REGULAR_EXPRESSION "skipped: " TIMEOUT ${example_timeout})
endif()
