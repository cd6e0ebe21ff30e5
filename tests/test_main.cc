// The Catch2 main, in its own file so the test files recompile without it. mploader::init comes
// first: the spawn tests run this binary again as their workers, and init is where such a run
// becomes a worker instead of a test session.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <mploader/registry.h>

int main(int argc, char** argv) {
  mploader::init(argc, argv);
  return Catch::Session().run(argc, argv);
}
