#include "hdat/llama/sampling.hpp"

#include <fmt/format.h>

#include <boost/random/uniform_01.hpp>
#include <cmath>
#include <fstream>

#include "hdat/core/error.hpp"

namespace hdat::llama {

Vocabulary Vocabulary::load(const std::filesystem::path& path, int expected, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(key, fmt::format("cannot read the vocabulary '{}'", path.string()));
  Vocabulary v;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    v.pieces_.push_back(line);
  }
  if (expected > 0 && v.size() != expected)
    throw InputError(key, fmt::format("'{}' has {} pieces, the model has a vocabulary of {}", path.string(), v.size(), expected));
  return v;
}

std::string Vocabulary::decode(std::span<const int> ids) const {
  static const std::string kSpaceMark = "\xE2\x96\x81";  // U+2581 '▁'
  std::string text;
  int prev = -1;
  for (int id : ids) {
    if (id < 0 || id >= size()) throw InputError("tokens", fmt::format("token id {} is outside the vocabulary 0..{}", id, size() - 1));
    std::string piece = pieces_[id];
    if (id == kBos) {
      if (prev != -1) text += "\n\n";
      prev = id;
      continue;
    }
    if (id == kEos) {
      prev = id;
      continue;
    }
    unsigned byte = 0;
    if (piece.size() == 6 && piece.rfind("<0x", 0) == 0 && piece[5] == '>' && std::sscanf(piece.c_str(), "<0x%02X>", &byte) == 1) {
      piece = std::string(1, static_cast<char>(byte));
    } else {
      std::string p;
      for (std::size_t i = 0; i < piece.size();) {
        if (piece.compare(i, kSpaceMark.size(), kSpaceMark) == 0) {
          p += ' ';
          i += kSpaceMark.size();
        } else {
          p += piece[i++];
        }
      }
      piece = p;
    }
    if (prev == kBos && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);  // as llama2.c's decode
    text += piece;
    prev = id;
  }
  return text;
}

template <class Scalar>
Sample sample(const Transformer<Scalar>& model, int length, double temperature, rng::Engine& engine) {
  const Config& c = model.config();
  if (length < 1 || length > c.seq_len) throw InputError("tokens", fmt::format("must be in [1, {}] (the model's context), got {}", c.seq_len, length));
  if (!(temperature >= 0) || !std::isfinite(temperature)) throw InputError("temperature", "must be finite and >= 0");
  typename Transformer<Scalar>::Session session(model);
  Sample s;
  s.tokens.push_back(kBos);
  s.nll.resize(length - 1);
  boost::random::uniform_01<double> uniform;
  Eigen::VectorXd p(c.vocab_size);
  for (int t = 0; t + 1 < length; ++t) {
    const Eigen::VectorXd logits = session.step(s.tokens.back());
    const Eigen::VectorXd logp = log_softmax(logits);
    int next = 0;
    if (temperature == 0) {
      logits.maxCoeff(&next);  // first maximum: ties to the lower id
    } else {
      const Eigen::VectorXd lq = log_softmax(logits / temperature);
      const double u = uniform(engine);
      double cdf = 0;
      next = c.vocab_size - 1;  // if rounding leaves the sum just below u
      for (int i = 0; i < c.vocab_size; ++i) {
        cdf += std::exp(lq(i));
        if (u < cdf) {
          next = i;
          break;
        }
      }
    }
    s.nll(t) = -logp(next);
    s.tokens.push_back(next);
  }
  return s;
}

template Sample sample(const Transformer<double>&, int, double, rng::Engine&);
template Sample sample(const Transformer<float>&, int, double, rng::Engine&);

}  // namespace hdat::llama
