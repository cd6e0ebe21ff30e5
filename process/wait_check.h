// The embedding runtime's wait check (set_wait_check in <mploader/embedding.h>): the loops
// that wait for workers on the caller's thread call it, so that a Python program's Ctrl-C or
// alarm handler runs while the training loop waits in C++.
#pragma once

namespace mploader::detail {

// How often a waiting thread calls the check, at the longest.
constexpr int kWaitCheckMs = 100;

// Calls the check, when one is set; what it throws ends the wait.
void check_while_waiting();

// `timeout_ms` for poll() (-1: none), shortened to kWaitCheckMs when a check is set.
int wait_slice_ms(int timeout_ms);

}  // namespace mploader::detail
