#pragma once
// Token sequences drawn from the model (from BOS, temperature, seeded stream) and decoding of token
// ids to text with the model's vocab.txt (one SentencePiece piece per line, id = line number).
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "hdat/core/random.hpp"
#include "hdat/llama/transformer.hpp"

namespace hdat::llama {

class Vocabulary {
 public:
  /// Read vocab.txt (InputError(key, ...) if unreadable or if the piece count differs from `expected`
  /// when `expected` > 0).
  static Vocabulary load(const std::filesystem::path& path, int expected = 0, const std::string& key = "vocab");
  /// vocab.txt beside a checkpoint file.
  static std::filesystem::path beside(const std::filesystem::path& checkpoint) { return checkpoint.parent_path() / "vocab.txt"; }

  int size() const { return static_cast<int>(pieces_.size()); }
  const std::string& piece(int id) const { return pieces_.at(id); }
  /// Text of the ids, as llama2.c prints it: `▁` is a space, `<0xHH>` the byte HH, the space that
  /// starts the first piece after BOS is dropped; a BOS inside the sequence (a new story) prints as a
  /// blank line, EOS as nothing.
  std::string decode(std::span<const int> ids) const;

 private:
  std::vector<std::string> pieces_;
};

/// One sampled sequence and its log-likelihood under the model at temperature 1.
struct Sample {
  std::vector<int> tokens;  ///< tokens[0] = BOS
  Eigen::VectorXd nll;      ///< −log p(tokens[t+1] | tokens[0..t]) at temperature 1, t = 0..T−2
};

/// Draw `length` − 1 tokens after BOS (length ≤ seq_len) with the key/value cache. temperature 0 is
/// greedy decoding (argmax, ties to the lower id); otherwise p ∝ exp(logits / temperature), drawn by
/// inverting the cumulative distribution with one uniform number from `engine` per token.
template <class Scalar>
Sample sample(const Transformer<Scalar>& model, int length, double temperature, rng::Engine& engine);

}  // namespace hdat::llama
