/// @file
/// StartMethod: how a Loader starts its worker processes (LoaderOptions::start_method). The
/// trade-offs, and the recipes spawn needs, are in docs/start-methods.md.
#pragma once

namespace mploader {

/// How a Loader starts its worker processes (LoaderOptions::start_method).
enum class StartMethod {
  /// fork(2): workers are copies of this process, dataset and all. Fast; but a lock another
  /// thread held, or a CUDA context, comes along broken.
  kFork,
  /// Workers are this program executed afresh (call mploader::init(argc, argv) first thing in
  /// main); they rebuild the dataset from Dataset::recipe(). Slower to start, inherits nothing.
  kSpawn,
  /// A clean server process (started once, like a spawned worker) forks the workers; they
  /// rebuild the dataset as spawned ones do. Inherits nothing from the training program and
  /// starts faster than spawn.
  kForkserver,
};

}  // namespace mploader
