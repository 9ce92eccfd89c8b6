#pragma once
// The figures of a `validate` folder, drawn from what the harness writes, for every model:
//
//   dynamics, mode=trajectory (validate.json, validate_curves.csv, validate.csv, escape.csv)
//     validate_<size><value>   per size: theory (line, with the band the criterion allows where it
//                              compares) against the simulation (points, ± standard error over seeds),
//                              a panel per observable and per block;
//     validate_scaling         the gap against size on log-log axes with the fitted exponent, the
//                              largest deviation / allowed per size, the plateau escape time;
//   dynamics, mode=drift (validate.json, drift.csv)
//     validate                 per term, the theory's drift against the measured mean increment
//                              (± standard error, on the diagonal when they agree), and every
//                              entry's z-score;
//   state evolution (run.json's verdict, validate.csv)
//     validate_extrapolation   per compared observable: the theory curve against the fit means at
//                              each d (± SE), the mean difference against 1/d with its fitted line
//                              a + b/d, and the intercept a (± SE) with the band it must stay in.
// Every title carries the verdict and its criterion.
#include <filesystem>

namespace hdat::plot {

/// Does DIR hold a validation drawn here (a dynamics model's validate.json or a state-evolution
/// model's validate.csv with its extrapolation)?
bool is_validation_folder(const std::filesystem::path& dir);

/// Draw DIR's validation figures (through hdat::plot::render). InputError (key DIR) naming the file
/// when the folder's files are missing or malformed.
void plot_validation(const std::filesystem::path& dir);

}  // namespace hdat::plot
