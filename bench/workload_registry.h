// The workloads with a command line of their own (--workload tokens, remote, hdf5, ...). Each
// registers itself from its own file, so that main() names none of them and a component's
// workload is compiled into the bench only where the component is built (its bench.cmake).
#pragma once

#include <string>
#include <vector>

namespace bench {

struct OwnWorkload {
  const char* name;                      // its --workload value
  bool (*asked)(int argc, char** argv);  // whether a command line asks for it
  int (*main)(int argc, char** argv);    // parses, runs, prints; main()'s exit status
};

// Adds `workload`; returns true, so that a file registers with a namespace-scope constant
// whose name no other bench file uses (they are compiled several to a unit):
//   [[maybe_unused]] const bool kTokensRegistered = register_workload({"tokens", ...});
// Throws std::logic_error when the name is taken.
bool register_workload(const OwnWorkload& workload);

// The first registered workload, by name, that the command line asks for; nullptr when none
// does (the default driver then parses it).
const OwnWorkload* asked_workload(int argc, char** argv);

// The registered workloads' names, sorted ("hdf5", "parquet", "remote", "tar-mix", "tokens").
std::vector<std::string> own_workload_names();

}  // namespace bench
