#pragma once
// run_on_two_threads: independent jobs of uneven cost (a call tree's passes,
// a report's sheet groups) on this thread and, with a second core, one more.

#include <functional>
#include <vector>

namespace jarvis {

// Runs every task once: this thread and a helper (when there is a second
// core and more than one task) each take the next task not yet taken, so
// uneven costs even out; give the costliest first. A failing task stops both
// threads from taking more; its error is rethrown once both have stopped.
void run_on_two_threads(const std::vector<std::function<void()>>& tasks);

}  // namespace jarvis
