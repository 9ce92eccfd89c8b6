// Where the time of `hdat geometry` goes (CPU time per call, single thread): the metrics kernel per (head, query), the forward pass
// with capture, sampling with the KV cache, and the whole analysis (32 documents × 256 tokens).
//   bench_geometry [--whole] [--threads N]
#include <fmt/format.h>

#include <boost/random/normal_distribution.hpp>
#include <chrono>
#include <cstring>
#include <ctime>

#include "hdat/geometry/metrics.hpp"
#include "hdat/llama/sampling.hpp"
#include "hdat/geometry/analysis.hpp"

using namespace hdat;
using Clock = std::chrono::steady_clock;

// CPU time of this thread per call: the machine is shared, wall time would measure the neighbours.
double thread_cpu() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
template <class F>
double per_call(F&& f, int reps) {
  const double t0 = thread_cpu();
  for (int r = 0; r < reps; ++r) f();
  return (thread_cpu() - t0) / reps;
}

int main(int argc, char** argv) {
  bool whole = false;
  int threads = 1;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--whole")) whole = true;
    if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
  }
  // 1. Metrics of one (head, query): n visible sources, width 8, N grid up to n, 16 random repeats.
  rng::Engine e = rng::engine(1);
  boost::random::normal_distribution<double> g;
  for (int n : {16, 64, 256}) {
    Eigen::VectorXd alpha(n);
    Eigen::MatrixXd v(8, n);
    for (int i = 0; i < n; ++i) {
      alpha(i) = std::exp(2 * g(e));
      for (int c = 0; c < 8; ++c) v(c, i) = g(e);
    }
    alpha /= alpha.sum();
    geometry::SelectionGeometry geo;
    geometry::QueryCurves out;
    geometry::CurveOptions o;
    rng::Engine r = rng::engine(2);
    const double top = per_call([&] { o.random_repeats = 0; geo.evaluate(alpha, v, o, nullptr, out); }, 2000);
    const double full = per_call([&] { o.random_repeats = 16; geo.evaluate(alpha, v, o, &r, out); }, 200);
    fmt::print("metrics n={:3d}: top-N only {:7.1f} us, top + 16 random {:7.1f} us ({} grid points, 2 distances)\n", n, top * 1e6,
               full * 1e6, out.N.size());
  }
  // 2. Forward pass with capture and sampling.
  const llama::Checkpoint ck = llama::load_checkpoint(llama::kDefaultModelFile);
  const llama::Transformer<double> md(ck);
  const llama::Transformer<float> mf(ck);
  rng::Engine s = rng::engine(3);
  const std::vector<int> tokens = llama::sample(md, 256, 1.0, s).tokens;
  llama::Capture cap;
  fmt::print("forward 256 tokens (double): {:.2f} ms, with capture {:.2f} ms; float {:.2f} ms\n",
             1e3 * per_call([&] { md.forward(tokens); }, 50), 1e3 * per_call([&] { md.forward(tokens, &cap); }, 50),
             1e3 * per_call([&] { mf.forward(tokens); }, 50));
  fmt::print("sampling 256 tokens with the KV cache (double): {:.2f} ms\n",
             1e3 * per_call([&] { llama::sample(md, 256, 1.0, s); }, 10));
  // 3. The whole analysis.
  if (whole) {
    const Params p = resolve(geometry::analysis_params(), nullptr, {});
    RunContext ctx;
    ctx.threads = threads;
    ctx.quiet = true;
    const auto t0 = Clock::now();
    const RunOutput out = geometry::analyze_model(llama::kDefaultModelFile, p, ctx);
    fmt::print("whole analysis (32 × 256, {} threads): {:.1f} s\n{}\n", threads,
               std::chrono::duration<double>(Clock::now() - t0).count(), out.info["timing_seconds"].dump(1));
  }
  return 0;
}
