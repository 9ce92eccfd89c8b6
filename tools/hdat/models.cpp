// Every model the command line knows. Each register_* function lives with its model (in
// validation/<model>/, where theory and simulator meet) and is declared in commands.hpp.
#include "commands.hpp"
#include "hdat/core/registry.hpp"

namespace hdat {

void register_models() {
  static bool done = false;
  if (done) return;
  done = true;
  Registry& r = registry();
  register_polarization(r);
  register_sinks(r);
  register_specialization(r);
  register_geometry(r);
  register_tied_attention(r);
}

}  // namespace hdat
