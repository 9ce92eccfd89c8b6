// Fuzz target: the attention maps a user brings (`hdat geometry --maps FILE.json`): the file is read
// and parsed (geometry::read_maps) and, when accepted, analysed as the command does (small bootstrap
// and baseline so that one input takes milliseconds). Every rejection must be an InputError (exit
// code 2); anything else escaping, or a crash, is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "fuzz_support.hpp"
#include "hdat/core/error.hpp"
#include "hdat/geometry/analysis.hpp"
#include "hdat/geometry/maps.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const hdat_fuzz::ScratchFile maps_file("maps.json");
  static const hdat::Params settings =
      hdat::resolve(hdat::geometry::analysis_params(), nullptr,
                    {{"bootstrap", 20}, {"random_repeats", 2}, {"plots", false}, {"sparsify.enabled", false}});
  maps_file.write({reinterpret_cast<const char*>(data), size});
  try {
    const auto maps = hdat::geometry::read_maps(maps_file.path());
    hdat::RunContext ctx;
    ctx.threads = 1;
    ctx.quiet = true;
    (void)hdat::geometry::analyze_maps(maps, settings, ctx);
  } catch (const hdat::InputError&) {
    // a clear rejection: exit code 2
  }
  return 0;
}
