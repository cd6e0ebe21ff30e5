# The API reference (docs/Doxyfile over include/mploader) builds with no warning: every public
# class, function and field documented, no broken Doxygen markup. Skipped without doxygen.
find_program(DOXYGEN_PROGRAM doxygen)
if(DOXYGEN_PROGRAM)
  add_test(NAME "docs: doxygen documents every public declaration without a warning"
    COMMAND sh -c "{ cat docs/Doxyfile; echo WARN_AS_ERROR=YES; echo \"OUTPUT_DIRECTORY=$1\"; } | \"$0\" - 2>&1; echo \"exit status $?\""
            ${DOXYGEN_PROGRAM} ${CMAKE_CURRENT_BINARY_DIR}/docs
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties("docs: doxygen documents every public declaration without a warning"
    PROPERTIES PASS_REGULAR_EXPRESSION "^exit status 0" FAIL_REGULAR_EXPRESSION "warning|error")
else()
  message(STATUS "doxygen not found (apt-get install doxygen): the API documentation test is skipped")
endif()
