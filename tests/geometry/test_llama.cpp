// The forward pass of stories260K, verified by identities and by the figures of the model's README
// (computed there by an independent NumPy implementation): greedy text from BOS, the NLL of the
// model's own samples, and key/value-cache decoding = full causal pass.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "hdat/core/error.hpp"
#include "hdat/llama/sampling.hpp"
#include "model_path.hpp"

using namespace hdat;
using namespace hdat::llama;

namespace {

const Checkpoint& model() {
  static const Checkpoint ck = load_checkpoint(stories260k_path());
  return ck;
}

// README: greedy decoding from BOS, first 60 tokens.
const char* kReadmeStory =
    "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a "
    "big, red ball. She wanted to play with it, but it was too high";
const std::vector<int> kReadmeIds = {403, 407, 261, 378, 432, 383, 286, 261, 376, 298, 315, 421, 395, 317, 426, 338, 401, 396, 267, 337};

template <class Scalar>
std::vector<int> greedy(const Transformer<Scalar>& m, int length) {
  rng::Engine e = rng::engine(0);
  return sample(m, length, 0.0, e).tokens;
}

}  // namespace

TEST_CASE("checkpoint header, size and RoPE table are those of the README") {
  const Checkpoint& ck = model();
  const Config& c = ck.config;
  CHECK(c.dim == 64);
  CHECK(c.hidden_dim == 172);
  CHECK(c.n_layers == 5);
  CHECK(c.n_heads == 8);
  CHECK(c.n_kv_heads == 4);
  CHECK(c.vocab_size == 512);
  CHECK(c.seq_len == 512);
  CHECK(c.shared_classifier);
  CHECK(ck.file_bytes == 1056540u);
  // The table sits at the very end of the file: if any array before it were misread, these would
  // not be cos/sin of p θ_i. README: the float32 table differs from float64 by at most 2.3e-6.
  double worst = 0;
  for (int p = 0; p < c.seq_len; ++p)
    for (int i = 0; i < c.head_size() / 2; ++i) {
      const double theta = std::pow(10000.0, -2.0 * i / c.head_size());
      worst = std::max({worst, std::fabs(ck.rope_cos(p, i) - std::cos(p * theta)), std::fabs(ck.rope_sin(p, i) - std::sin(p * theta))});
    }
  CHECK(worst < 3e-6);
  CHECK(worst > 0);  // float32 rounding is visible: the table really was read from the file
}

TEST_CASE("greedy decoding from BOS reproduces the README's story") {
  const Transformer<double> m(model());
  const Vocabulary vocab = Vocabulary::load(Vocabulary::beside(stories260k_path()), 512);
  const std::vector<int> ids = greedy(m, 201);
  for (std::size_t i = 0; i < kReadmeIds.size(); ++i) CHECK(ids[i + 1] == kReadmeIds[i]);
  CHECK(vocab.decode(std::span(ids).first(61)) == kReadmeStory);
  const std::string long_text = vocab.decode(ids);
  CHECK(long_text.find("Lily's mom said, \"Lily, let's go to the park.\" Lily was sad and didn't know what to do.") != std::string::npos);

  SUBCASE("the file's float32 RoPE table gives the same text") {
    ForwardOptions o;
    o.rope_table = ForwardOptions::RopeTable::file;
    CHECK(greedy(Transformer<double>(model(), o), 61) == std::vector<int>(ids.begin(), ids.begin() + 61));
  }
  SUBCASE("float precision gives the same text") {
    CHECK(greedy(Transformer<float>(model()), 61) == std::vector<int>(ids.begin(), ids.begin() + 61));
  }
}

TEST_CASE("the check fails with a wrong convention: NEOX RoPE pairing, or interleaved key/value heads") {
  const Vocabulary vocab = Vocabulary::load(Vocabulary::beside(stories260k_path()), 512);
  ForwardOptions neox;
  neox.rope_pairing = ForwardOptions::RopePairing::half_split;
  const std::vector<int> a = greedy(Transformer<double>(model(), neox), 61);
  CHECK(vocab.decode(a) != kReadmeStory);
  ForwardOptions inter;
  inter.kv_mapping = ForwardOptions::KvMapping::interleaved;
  const std::vector<int> b = greedy(Transformer<double>(model(), inter), 61);
  CHECK(vocab.decode(b) != kReadmeStory);
}

TEST_CASE("key/value-cache decoding gives the logits of the full causal pass") {
  const Transformer<double> m(model());
  rng::Engine e = rng::engine(7);
  const Sample s = sample(m, 200, 1.0, e);
  const Eigen::MatrixXd full = m.forward(s.tokens);
  Transformer<double>::Session session(m);
  double worst = 0;
  for (std::size_t t = 0; t < s.tokens.size(); ++t) worst = std::max(worst, (session.step(s.tokens[t]) - full.col(t)).cwiseAbs().maxCoeff());
  CHECK(worst < 1e-11);
  // The NLLs recorded while sampling (cache) equal those of the full pass.
  CHECK((token_nll(full, s.tokens) - s.nll).cwiseAbs().maxCoeff() < 1e-11);
  // Float pass: same logits to float accuracy.
  const Eigen::MatrixXd lf = Transformer<float>(model()).forward(s.tokens);
  CHECK((lf - full).cwiseAbs().maxCoeff() < 1e-3 * full.cwiseAbs().maxCoeff());
  // Past the context: a clear error.
  Transformer<double>::Session s2(m);
  for (int t = 0; t < m.config().seq_len; ++t) s2.step(kBos);
  CHECK_THROWS_AS(s2.step(kBos), InputError);
}

TEST_CASE("the NLL of the model's own temperature-1 samples matches the README (1.238 nats/token)") {
  // README: 30 sequences × 255 tokens, mean 1.238, per-sequence sd 0.115. Ours are other draws of the
  // same distribution: the means must agree within sampling error (4 standard errors of the mean).
  const Transformer<double> m(model());
  const int n = 30;
  std::vector<double> per_seq;
  for (int d = 0; d < n; ++d) {
    rng::Engine e = rng::engine(1234, d, rng::user);
    per_seq.push_back(sample(m, 256, 1.0, e).nll.mean());
  }
  double mean = 0, var = 0;
  for (double x : per_seq) mean += x / n;
  for (double x : per_seq) var += (x - mean) * (x - mean) / (n - 1);
  const double se = std::sqrt((var + 0.115 * 0.115) / 2 / n);
  MESSAGE("sampled NLL " << mean << " nats/token, per-sequence sd " << std::sqrt(var));
  CHECK(std::fabs(mean - 1.238) < 4 * se);
  CHECK(std::sqrt(var) > 0.05);
  CHECK(std::sqrt(var) < 0.25);
  // The sampler draws from the model: along the same trajectories, the mean NLL of the drawn tokens
  // equals the mean entropy of the predictive distributions (E[−log p(x)] = H(p)), within error.
  std::vector<double> gap;
  for (int d = 0; d < n; ++d) {
    rng::Engine e = rng::engine(1234, d, rng::user);
    const Sample s = sample(m, 256, 1.0, e);
    const Eigen::MatrixXd logits = m.forward(s.tokens);
    double entropy = 0;
    for (int t = 0; t + 1 < 256; ++t) {
      const Eigen::ArrayXd lp = log_softmax(logits.col(t)).array();
      entropy -= (lp.exp() * lp).sum() / 255;
    }
    gap.push_back(s.nll.mean() - entropy);
  }
  double gm = 0, gv = 0;
  for (double x : gap) gm += x / n;
  for (double x : gap) gv += (x - gm) * (x - gm) / (n - 1);
  MESSAGE("sampled NLL − entropy " << gm << " ± " << std::sqrt(gv / n));
  CHECK(std::fabs(gm) < 4 * std::sqrt(gv / n));
  // Broken RoPE pairing: README reports 2.19 nats/token; far outside the band.
  ForwardOptions neox;
  neox.rope_pairing = ForwardOptions::RopePairing::half_split;
  const Transformer<double> broken(model(), neox);
  double bad = 0;
  for (int d = 0; d < 4; ++d) {
    rng::Engine e = rng::engine(1234, d, rng::user);
    bad += sample(broken, 256, 1.0, e).nll.mean() / 4;
  }
  MESSAGE("sampled NLL with NEOX pairing " << bad);
  CHECK(bad > 1.238 + 8 * se);
}

TEST_CASE("capture: α is a causal distribution, and the captured α and v rebuild each head's write") {
  const Checkpoint& ck = model();
  const Transformer<double> m(ck);
  rng::Engine e = rng::engine(3);
  const Sample s = sample(m, 64, 1.0, e);
  Capture cap;
  const Eigen::MatrixXd logits = m.forward(s.tokens, &cap);
  CHECK((logits - m.forward(s.tokens)).cwiseAbs().maxCoeff() == 0.0);
  const int T = 64, hs = ck.config.head_size();
  for (int l = 0; l < ck.config.n_layers; ++l)
    for (int h = 0; h < ck.config.n_heads; ++h) {
      const Eigen::MatrixXd& A = cap.layers[l].alpha[h];
      const Eigen::MatrixXd& V = cap.layers[l].values[cap.kv_head[h]];
      CHECK(cap.kv_head[h] == h / 2);
      for (int t = 0; t < T; ++t) {
        CHECK(std::fabs(A.col(t).head(t + 1).sum() - 1.0) < 1e-12);
        CHECK(A.col(t).tail(T - t - 1).cwiseAbs().sum() == 0.0);
        CHECK(A.col(t).minCoeff() >= 0.0);
        const Eigen::VectorXd o = V.leftCols(t + 1) * A.col(t).head(t + 1);
        const double w = (ck.layers[l].wo.middleCols(h * hs, hs) * o).norm();
        CHECK(std::fabs(w - cap.layers[l].head_write_norm(h, t)) < 1e-12 * (1 + w));
      }
    }
  // Query 0 sees only BOS.
  CHECK(cap.layers[0].alpha[0](0, 0) == 1.0);
}

TEST_CASE("head gates: a zero gate equals zeroing the head's columns of W_o") {
  Checkpoint ck = model();
  const Transformer<double> m(ck);
  rng::Engine e = rng::engine(5);
  const Sample s = sample(m, 48, 1.0, e);
  HeadGates gates = HeadGates::Ones(5, 8);
  CHECK((m.forward(s.tokens, nullptr, &gates) - m.forward(s.tokens)).cwiseAbs().maxCoeff() < 1e-12);
  gates(2, 5) = 0;
  const Eigen::MatrixXd gated = m.forward(s.tokens, nullptr, &gates);
  ck.layers[2].wo.middleCols(5 * 8, 8).setZero();
  const Eigen::MatrixXd edited = Transformer<double>(ck).forward(s.tokens);
  CHECK((gated - edited).cwiseAbs().maxCoeff() < 1e-12);
  CHECK((gated - m.forward(s.tokens)).cwiseAbs().maxCoeff() > 1e-6);
  HeadGates wrong = HeadGates::Ones(4, 8);
  CHECK_THROWS_AS(m.forward(s.tokens, nullptr, &wrong), InputError);
}

TEST_CASE("sampling is reproducible per seed; decoding handles bytes, spaces and BOS") {
  const Transformer<double> m(model());
  rng::Engine a = rng::engine(11), b = rng::engine(11), c = rng::engine(12);
  const auto sa = sample(m, 40, 1.0, a), sb = sample(m, 40, 1.0, b), sc = sample(m, 40, 1.0, c);
  CHECK(sa.tokens == sb.tokens);
  CHECK(sa.tokens != sc.tokens);
  const Vocabulary v = Vocabulary::load(Vocabulary::beside(stories260k_path()), 512);
  CHECK(v.piece(1) == "<s>");
  CHECK(v.piece(2) == "</s>");
  const std::vector<int> ids = {kBos, 403, 3 + '\n', 403, kBos, 403};
  CHECK(v.decode(ids) == "Once\n Once\n\nOnce");
  CHECK_THROWS_AS(v.decode(std::vector<int>{600}), InputError);
}

TEST_CASE("bad model files get clear input errors") {
  CHECK_THROWS_AS(load_checkpoint("/nonexistent/model.bin"), InputError);
  const auto tmp = std::filesystem::temp_directory_path() / "hdat_test_truncated.bin";
  {
    std::ifstream in(stories260k_path(), std::ios::binary);
    std::vector<char> head(1000);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    std::ofstream out(tmp, std::ios::binary);
    out.write(head.data(), static_cast<std::streamsize>(head.size()));
  }
  try {
    load_checkpoint(tmp);
    FAIL("a truncated checkpoint was accepted");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("1056540") != std::string::npos);  // says the size it expects
  }
  std::filesystem::remove(tmp);
  CHECK_THROWS_AS(Vocabulary::load(stories260k_path().parent_path() / "vocab.txt", 300), InputError);
}

TEST_CASE("attention mass on BOS, the previous token and the query itself matches the README's table") {
  // README (an independent NumPy pass, 10 sampled sequences of 256 tokens, mean over all heads):
  // mass on position 0 at queries 1–3 and 128–255, on the previous token and on the query itself
  // at queries 128–255. The README's numbers are 10-document means, so they agree with the model's
  // expectation only within 10-document sampling error.
  const double bos_early[5] = {0.339, 0.350, 0.399, 0.422, 0.521};
  const double bos_late[5] = {0.000, 0.001, 0.001, 0.000, 0.000};
  const double prev_late[5] = {0.25, 0.40, 0.20, 0.25, 0.09};
  const double self_late[5] = {0.17, 0.13, 0.10, 0.11, 0.05};
  const Transformer<double> m(model());

  SUBCASE("queries 1-3: exact expectation over the first three tokens") {
    // q_l = mean over heads and t = 1..3 of α_0(t) depends on tokens 1..3 only: enumerate their
    // distribution (prefixes of probability > 1e-6), giving E[q] and sd[q]; the mass left out can
    // move E by at most its size (0 ≤ q ≤ 1).
    double E[5] = {0}, E2[5] = {0}, covered = 0;
    std::function<void(std::vector<int>, double)> walk = [&](std::vector<int> tokens, double p) {
      if (tokens.size() == 4) {
        Capture cap;
        m.forward(tokens, &cap);
        for (int l = 0; l < 5; ++l) {
          double q = 0;
          for (int h = 0; h < 8; ++h)
            for (int t = 1; t <= 3; ++t) q += cap.layers[l].alpha[h](0, t) / 24;
          E[l] += p * q;
          E2[l] += p * q * q;
        }
        covered += p;
        return;
      }
      const Eigen::VectorXd lp = log_softmax(m.forward(tokens).col(static_cast<Eigen::Index>(tokens.size()) - 1));
      for (int i = 0; i < 512; ++i)
        if (const double pi = p * std::exp(lp(i)); pi > 1e-6) {
          std::vector<int> next = tokens;
          next.push_back(i);
          walk(next, pi);
        }
    };
    walk({kBos}, 1.0);
    CHECK(covered > 0.99);
    for (int l = 0; l < 5; ++l) {
      const double mean = E[l] / covered, sd = std::sqrt(E2[l] / covered - mean * mean);
      const double tol = 0.0005 + (1 - covered) + 4 * sd / std::sqrt(10.0);
      CHECK_MESSAGE(std::fabs(mean - bos_early[l]) < tol, "layer " << l << ": E " << mean << " vs README " << bos_early[l] << " (tolerance "
                                                                    << tol << ")");
    }
  }

  SUBCASE("queries 128-255: sampled documents") {
    // Ours: 10 other samples; the tolerance is the README's rounding plus 4 standard errors of the
    // difference of two 10-document means (each estimated from ours).
    const int docs = 10, T = 256;
    std::vector<std::vector<std::vector<double>>> per_doc(3, std::vector<std::vector<double>>(5));  // [quantity][layer][doc]
    for (int d = 0; d < docs; ++d) {
      rng::Engine e = rng::engine(2024, d, rng::user);
      const Sample s = sample(m, T, 1.0, e);
      Capture cap;
      m.forward(s.tokens, &cap);
      for (int l = 0; l < 5; ++l) {
        double q[3] = {0, 0, 0};
        for (int h = 0; h < 8; ++h) {
          const Eigen::MatrixXd& A = cap.layers[l].alpha[h];
          for (int t = 128; t < T; ++t) {
            q[0] += A(0, t) / (8 * 128);
            q[1] += A(t - 1, t) / (8 * 128);
            q[2] += A(t, t) / (8 * 128);
          }
        }
        for (int k = 0; k < 3; ++k) per_doc[k][l].push_back(q[k]);
      }
    }
    auto check = [&](int k, const double* readme, double rounding) {
      for (int l = 0; l < 5; ++l) {
        double mean = 0, var = 0;
        for (double x : per_doc[k][l]) mean += x / docs;
        for (double x : per_doc[k][l]) var += (x - mean) * (x - mean) / (docs - 1);
        const double tol = rounding + 4 * std::sqrt(2 * var / docs);
        CHECK_MESSAGE(std::fabs(mean - readme[l]) < tol, "quantity " << k << " layer " << l << ": " << mean << " vs README " << readme[l]
                                                                      << " (tolerance " << tol << ")");
      }
    };
    check(0, bos_late, 0.0005);
    check(1, prev_late, 0.005);
    check(2, self_late, 0.005);
  }
}
