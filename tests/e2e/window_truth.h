// RestrictTruthToWindow: the simulator's truth (DESIGN §5) cut down to what one capture window's
// report covers (docs/attach.md §What a window's report covers), so that scenario_check.h's
// CheckAgainstTruth compares a window report with it unchanged.
//
// The window keeps the activities launched inside it and the ranges wholly inside it. A graph
// activity the truth attributes `captured` whose capture happened before the window is
// re-attributed as the collector must (its creation was never seen): to the launching thread's
// innermost range open at its launch (`direct`), else the main thread's (`inherited`, the main
// thread being the first that pushed a range), else `none` — docs/attribution.md rules 2-4.
//
// The truth carries no capture time. It is bounded by the graph's first launch (the earliest
// launch_ns of its graph_id) and by the instances of the capture path on the capturing thread:
// the capture happened while one of those that started before the first launch was open. Before
// the window when each such interval ends (or the first launch comes) by begin_ns, inside when
// each starts at or after it; otherwise the activity stays `captured` and is counted in the
// process's `ambiguous_captures` (a test should require 0: choose scenarios that decide it).
// Test-only.
#ifndef GPUATTR_TESTS_E2E_WINDOW_TRUTH_H_
#define GPUATTR_TESTS_E2E_WINDOW_TRUTH_H_

#include <cstdint>
#include <nlohmann/json.hpp>

namespace gpuattr::e2e {

// A truth document holding only the process `pid`, restricted to the window [begin_ns, end_ns]
// (both inclusive): activities whose launch_ns lies in it (re-attributed as above), push/pop and
// start/end ranges that start and end in it, marks in it, and `ambiguous_captures`. Its other
// fields are copied. No process `pid`: no processes. For several windows (attach --all), put the
// processes of one call per pid side by side.
nlohmann::json RestrictTruthToWindow(const nlohmann::json& truth, int64_t pid, uint64_t begin_ns,
                                     uint64_t end_ns);

}  // namespace gpuattr::e2e

#endif  // GPUATTR_TESTS_E2E_WINDOW_TRUTH_H_
