// Output of mploader-bench: JSON lines (--json) or an aligned table followed by the ratios of
// mploader's throughput to each other loader's.
#pragma once

#include "bench/run_config.h"

#include <ostream>
#include <string>
#include <vector>

namespace bench {

// One line of JSON, without the newline. Fields: loader, workload, workers, batch_size,
// prefetch, samples_per_s, mb_per_s, first_batch_s, batches, wall_s, then samples,
// teardown_s, dataset_size, sample_shape (synthetic only), context and tokens_per_s (stream
// only).
std::string json_line(const RunResult& result);

// Reads a json_line() back into `config` overlaid with the line's measurements and workers.
// Throws std::runtime_error when a field is missing or mistyped.
RunResult parse_json_line(const RunConfig& config, const std::string& line);

// The table header, and one row of it; widths match.
void print_table_header(std::ostream& out);
void print_table_row(std::ostream& out, const RunResult& result);

// The stream workload's rows as tokens/s (samples/s x context), each with its ratio to the
// pytorch row of the same workers, batch size, prefetch and context. Nothing without stream rows.
void print_token_rates(std::ostream& out, const std::vector<RunResult>& results);

// For each mploader row: the workers' busy time per batch by stage, and its share on a CPU.
// Nothing without such rows.
void print_stage_split(std::ostream& out, const std::vector<RunResult>& results);

// For each workload and workers value with an mploader row: "mploader/<other> 3.40x" by
// samples_per_s. Prints nothing when mploader was not measured.
void print_ratios(std::ostream& out, const std::vector<RunResult>& results);

// For each mploader-auto row: the autotuned rate once settled, the batches it took to settle,
// the workers and prefetch it chose, and the best fixed mploader rows of the same workload
// and batch size (within `cpus` workers, and of any count) with its ratio to each. Nothing
// without such rows.
void print_autotune(std::ostream& out, const std::vector<RunResult>& results, int64_t cpus);

}  // namespace bench
