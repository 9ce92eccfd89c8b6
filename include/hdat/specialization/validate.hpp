#pragma once
// Theory against simulation for the specialization model (docs/specialization.md, "Validation").
//
// mode=trajectory: for each D, an ensemble of online-SGD runs; the ODE started from that D's
//   seed-averaged initial overlaps; every order parameter and the risk compared at every observed
//   time up to t_compare (by default the first plateau escape among the seeds, because finite-D SGD
//   leaves the unstable symmetric plateau at a random, D-dependent time that the D = ∞ flow from
//   averaged overlaps does not have). A point agrees when
//       |theory − simulation| ≤ tolerance · SE + rel_tolerance · scale(block),
//   SE the seed standard error (and the theory's Monte-Carlo error for the risk), scale the largest
//   |value| of that block (M, R, or risk) in the window. The gap (RMS deviation) is fitted as
//   gap ∝ D^p across the dims; escape times are reported against log D.
// mode=drift: at weight configurations along a simulation, the mean of D × one-step increments over
//   many fresh samples against the ODE's right-hand side at the measured (M, R), term by term
//   (dM, the η-linear part of dR, the η² part of dR), with confidence intervals.
#include "hdat/core/registry.hpp"

namespace hdat::specialization {

RunOutput validate_command(const Params& p, RunContext& ctx);

}  // namespace hdat::specialization
