# The ThreadSanitizer build (-DMPLOADER_TSAN=ON, scripts/test): the tests that exercise the main
# process's own threads, which is where a data race would be ours. The dispatcher and the
# receiving of batches (loader, failures, overflow, resume), the supervisor (crashes, hangs,
# restarts, quarantine, the memory trend it samples), the launcher and reaping (spawn, lifecycle, the slot-size probe), the device
# prefetcher's copy thread (device), and the free-slot stack across threads and its pool,
# whose release runs on whichever thread drops a batch (slot stack, slot reuse). Worker
# processes are single-threaded and run the same instrumented code, so they are checked along
# the way.
#
# tsan.supp holds the suppressions, one reason each: reports from inside libtorch, which is not
# instrumented, are not ours to fix. halt_on_error: a race fails the test it happened in.
add_executable(mploader_tsan_tests
  test_loader.cc
  test_loader_failures.cc
  test_crashes.cc
  test_restart.cc
  test_autotune.cc
  test_quarantine.cc
  test_lifecycle.cc
  test_spawn.cc
  test_resume.cc
  test_device.cc
  test_slot_probe.cc
  test_overflow.cc
  test_slot_stack.cc
  test_slot_reuse.cc
  test_memory_growth.cc
  faulty_dataset.cc
  memory_cgroup.cc
)
mploader_test_binary(mploader_tsan_tests)
# The workers' own crash handlers must see SIGSEGV/SIGBUS/SIGFPE (the crash tests check them).
set(tsan_options "suppressions=${CMAKE_CURRENT_SOURCE_DIR}/tsan.supp:halt_on_error=1:\
second_deadlock_stack=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:report_signal_unsafe=1")
catch_discover_tests(mploader_tsan_tests
  TEST_PREFIX "tsan: "
  EXTRA_ARGS --warn NoTests
  PROPERTIES TIMEOUT 600
             SKIP_REGULAR_EXPRESSION "skipped: "
             FAIL_REGULAR_EXPRESSION "WARNING: ThreadSanitizer"
             ENVIRONMENT "TSAN_OPTIONS=${tsan_options}"
  DISCOVERY_TIMEOUT 120)

# The shard prefetcher's download thread beside the reader that takes its leases
# (remote/shard_prefetcher.h), through nginx on 127.0.0.1. In one process only: TSan stops a
# forked child of a threaded process that starts a thread, as a worker's prefetcher does.
if(TARGET mploader_shards)
  find_package(LibArchive REQUIRED)
  add_executable(mploader_tsan_remote_tests
    ${PROJECT_SOURCE_DIR}/components/remote/tests/test_remote_prefetch.cc)
  mploader_test_binary(mploader_tsan_remote_tests)
  target_link_libraries(mploader_tsan_remote_tests PRIVATE mploader_shards LibArchive::LibArchive)
  catch_discover_tests(mploader_tsan_remote_tests
    TEST_SPEC "~[process]"
    TEST_PREFIX "tsan: "
    EXTRA_ARGS --warn NoTests
    PROPERTIES TIMEOUT 300
               SKIP_REGULAR_EXPRESSION "skipped: "
               FAIL_REGULAR_EXPRESSION "WARNING: ThreadSanitizer"
               ENVIRONMENT "TSAN_OPTIONS=${tsan_options}"
    DISCOVERY_TIMEOUT 120)
endif()
