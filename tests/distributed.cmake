# Tests of the distributed samplers (issue 5): sources added to mploader_tests, and any extra
# ctest entries.
