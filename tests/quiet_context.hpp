#pragma once
// A command context for tests that call a model's commands directly: no progress lines, two threads
// (the CI machine's cores; results do not depend on the count).
#include "hdat/core/registry.hpp"

inline hdat::RunContext quiet_context(int threads = 2) {
  hdat::RunContext ctx;
  ctx.quiet = true;
  ctx.threads = threads;
  return ctx;
}
