# mploader-soak checks that nothing accumulates over many epochs with worker kills. CI runs the
# short soak, 30 epochs with random worker kills checked flat from epoch 10 (the 200-epoch one
# is run by hand, docs/contributing.md); each planted fault (--inject) makes it FAIL naming the
# epoch and what changed, so the checks can fail; wrong options exit 2 naming the option. Only
# in the normal build against libtorch 2.x: a sanitizer changes what RSS and threads do over a
# run, and the 1.13 build adds nothing here. mploader-soak (tools/soak/) is built with
# MPLOADER_BUILD_TOOLS; without it there are no soak tests.
if(NOT TARGET mploader-soak OR MPLOADER_SANITIZE OR Torch_VERSION VERSION_LESS 2.0)
  return()
endif()
set(soak $<TARGET_FILE:mploader-soak>)
add_test(NAME "soak: short"
  COMMAND sh -c "\"$0\" \"$@\" 2>&1; echo \"exit status $?\"" ${soak} --epochs 30
          --check-from 10 --seed 18)
set_tests_properties("soak: short" PROPERTIES
  TIMEOUT 120
  PASS_REGULAR_EXPRESSION "PASS: 30 epochs of 4096 samples, every index delivered exactly once in each; [0-9]+ workers killed: [1-9][0-9]* restarted.*from epoch 10 to 30 fds [0-9]+, threads [0-9]+, children 2, shm [0-9]+ named \\+ 2 mapped stayed equal.*exit status 0")
foreach(case
    "fd|open fds [0-9]+ \\(epoch 2 had [0-9]+\\)"
    "thread|threads [0-9]+ \\(epoch 2 had [0-9]+\\)"
    "child|child processes 3 \\(epoch 2 had 2\\)"
    "shm|mapped shared-memory files 3 \\(epoch 2 had 2\\)"
    "rss|RSS [0-9.]+ MiB is [0-9.]+ % from epoch 2.s"
    "lost-batch|indices never delivered: [0-9]+ \\("
    "duplicate-batch|indices delivered more than once: [0-9]+ \\(")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 fault)
  list(GET parts 1 expected)
  set(name "soak: a planted ${fault} fault fails the soak naming the epoch")
  add_test(NAME "${name}"
    COMMAND sh -c "\"$0\" \"$@\" 2>&1; echo \"exit status $?\"" ${soak} --epochs 4
            --check-from 2 --inject ${fault})
  set_tests_properties("${name}" PROPERTIES TIMEOUT 60
    PASS_REGULAR_EXPRESSION "FAIL: epoch 3: ${expected}.*exit status 1")
endforeach()
# "option|arguments|expected message"
foreach(case
    "epochs|--epochs 0|--epochs: 0 is too small; give a whole number from 1"
    "check-from|--epochs 10 --check-from 11|--check-from: epoch 11 is after the last one \\(--epochs 10\\)"
    "kill-probability|--kill-probability 1.5|--kill-probability: 1.5 is not a probability; give a number from 0 to 1"
    "inject|--inject nuke|--inject: unknown fault 'nuke'; give one of fd, thread")
  string(REPLACE "|" ";" parts "${case}")
  list(GET parts 0 option)
  list(GET parts 1 args)
  list(GET parts 2 expected)
  separate_arguments(args)
  add_test(NAME "soak: a wrong --${option} is a clear error"
    COMMAND sh -c "\"$0\" \"$@\" 2>&1; echo \"exit status $?\"" ${soak} ${args})
  set_tests_properties("soak: a wrong --${option} is a clear error" PROPERTIES
    PASS_REGULAR_EXPRESSION "mploader-soak: ${expected}.*exit status 2")
endforeach()
