# An outside project built against mploader and run: from a `cmake --install` of this
# build, through add_subdirectory and through FetchContent (tests/consumer/check.sh). They
# compile (the package one only its own file; the other two the library again, from ccache
# when it has it), so they take a lock that keeps them from running at the same time.
set(modes package)
# Under sanitizers only the installed package is tried: how add_subdirectory and FetchContent
# wire the targets does not change with the flags, and the sanitized link is the same one.
# MPLOADER_TEST_SUBPROJECTS=OFF leaves them out too (scripts/test's compatibility build): each
# compiles the library once more.
option(MPLOADER_TEST_SUBPROJECTS "Test add_subdirectory and FetchContent consumers" ON)
if(NOT MPLOADER_SANITIZE AND MPLOADER_TEST_SUBPROJECTS)
  list(APPEND modes subdir fetch)
endif()
foreach(mode ${modes})
  set(name "consumer: an outside project builds and runs against mploader (${mode})")
  set(work ${CMAKE_CURRENT_BINARY_DIR}/consumer-${mode})
  add_test(NAME "${name}"
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/consumer/check.sh ${mode} ${PROJECT_SOURCE_DIR}
            ${work} ${PROJECT_BINARY_DIR} ${CMAKE_BUILD_TYPE} ${MPLOADER_SANITIZE}
            ${CMAKE_CXX_COMPILER} ${Torch_DIR} ${MPLOADER_LEAN_DEBUG_INFO})
  set_tests_properties("${name}" PROPERTIES
    # A cold build of the library on 2 cores: under 4 minutes on an idle machine, 23 beside
    # the load of scripts/test --under-load. The limit is for a hang, with room for that.
    TIMEOUT 3600
    RESOURCE_LOCK mploader_consumer_build
    PASS_REGULAR_EXPRESSION "consumer ok: fork and spawn each delivered all 203 samples once")
endforeach()

# A dataset library built out of tree against the installed package and tuned by the installed
# mploader-bench, and the libraries it must refuse (tests/consumer/plugin_check.sh).
if(TARGET mploader-bench AND NOT MPLOADER_SANITIZE)
  set(name "plugin: the installed bench tunes a dataset library built against the package")
  add_test(NAME "${name}"
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/consumer/plugin_check.sh ${PROJECT_SOURCE_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/plugin ${PROJECT_BINARY_DIR} ${CMAKE_BUILD_TYPE}
            ${CMAKE_CXX_COMPILER})
  set_tests_properties("${name}" PROPERTIES
    TIMEOUT 900
    RESOURCE_LOCK mploader_consumer_build
    PASS_REGULAR_EXPRESSION "plugin ok: tuned out of tree")
endif()
