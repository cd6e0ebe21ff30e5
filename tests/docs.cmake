# The API reference (docs/Doxyfile over include/mploader and the docs pages, and each listed
# component's public headers: tests/docs/run_doxygen.sh) builds with no warning: every public
# class, function and field documented, no broken Doxygen markup, no link to a page doxygen
# does not know. Skipped without doxygen.
find_program(DOXYGEN_PROGRAM doxygen)
if(DOXYGEN_PROGRAM)
  add_test(NAME "docs: doxygen documents every public declaration without a warning"
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/docs/run_doxygen.sh ${DOXYGEN_PROGRAM}
            ${CMAKE_CURRENT_BINARY_DIR}/docs
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties("docs: doxygen documents every public declaration without a warning"
    PROPERTIES PASS_REGULAR_EXPRESSION "^exit status 0" FAIL_REGULAR_EXPRESSION "warning|error")
else()
  message(STATUS "doxygen not found (apt-get install doxygen): the API documentation test is skipped")
endif()

# The user documentation's relative links and anchors resolve (tests/docs/check_links.py), with
# the system Python: it needs nothing beyond the standard library.
find_program(MPLOADER_DOCS_PYTHON python3 HINTS /usr/bin)
if(MPLOADER_DOCS_PYTHON)
  add_test(NAME "docs: every relative link and anchor in README.md and docs/ resolves"
    COMMAND ${MPLOADER_DOCS_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/docs/check_links.py
            ${PROJECT_SOURCE_DIR})
  set_tests_properties("docs: every relative link and anchor in README.md and docs/ resolves"
    PROPERTIES PASS_REGULAR_EXPRESSION "docs links ok")
endif()

# The documentation's complete programs (blocks marked "cpp program") compile and link against a
# `cmake --install` of this build (tests/docs/check_programs.sh). Each program costs a compile
# of mploader's headers, so only the normal build against libtorch 2.x runs it, and it takes the
# lock the consumer tests take so the two never compile at the same time.
if(MPLOADER_DOCS_PYTHON AND MPLOADER_INSTALL AND NOT MPLOADER_SANITIZE AND NOT MPLOADER_TSAN
   AND Torch_VERSION VERSION_GREATER_EQUAL 2)
  set(name "docs: the documentation's complete programs compile and link against the installed package")
  add_test(NAME "${name}"
    COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/docs/check_programs.sh ${PROJECT_SOURCE_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/docs-programs ${PROJECT_BINARY_DIR} ${CMAKE_BUILD_TYPE}
            ${CMAKE_CXX_COMPILER} ${MPLOADER_DOCS_PYTHON})
  set_tests_properties("${name}" PROPERTIES
    TIMEOUT 900
    RESOURCE_LOCK mploader_consumer_build
    PASS_REGULAR_EXPRESSION "docs programs ok: [1-9][0-9]* programs compile and link")
endif()
