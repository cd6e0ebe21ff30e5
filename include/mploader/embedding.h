/// @file
/// For a runtime that embeds mploader, such as the Python package: code that must run around
/// every fork of a worker process, on the thread that forks, and a check that runs while the
/// caller's thread waits for workers.
#pragma once

namespace mploader {

/// Functions called on the thread that forks a worker (mploader's launcher thread, or the
/// forkserver's only thread, in that process, with start_method forkserver): `before`
/// just before fork(), then `in_parent` in this process and `in_child` in the new process, at
/// once after it. Any may be null; none may throw. Python needs them: a child forked while
/// another thread holds the GIL deadlocks on its first Python call, so the Python package takes
/// the GIL in `before` and reinitialises the interpreter's state in `in_child`, as os.fork does.
/// `in_child` runs before the worker closes what it does not need, so it must not rely on any
/// descriptor of the parent's.
struct ForkHooks {
  void (*before)() = nullptr;     ///< In this process, before fork().
  void (*in_parent)() = nullptr;  ///< In this process, after fork() (also when it failed).
  void (*in_child)() = nullptr;   ///< In the new process, first thing.
};

/// Sets the hooks for every later fork of a worker, by every Loader. Thread-safe; a fork in
/// progress finishes with the hooks it started with.
void set_fork_hooks(const ForkHooks& hooks);

/// Sets a function that a thread waiting for workers in Loader::next() or in the Loader's
/// constructor (the slot probe) calls at least every 100 ms; whatever it throws ends the wait
/// and leaves that call. Python needs it: its signal handlers (Ctrl-C's KeyboardInterrupt, an
/// alarm) run only when the main thread runs Python code, which it does not while it waits
/// here. Null (the default) removes it. Thread-safe.
void set_wait_check(void (*check)());

}  // namespace mploader
