// The Catch2 main, in its own file so the test files recompile without it.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
