// Every model the command line knows. Each register_* function lives with its model.
#include "commands.hpp"
#include "hdat/core/registry.hpp"

namespace hdat {

void register_models() {
  static bool done = false;
  if (done) return;
  done = true;
}

}  // namespace hdat
