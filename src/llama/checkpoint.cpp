#include "hdat/llama/checkpoint.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>

#include "hdat/core/error.hpp"

namespace hdat::llama {

namespace {

// Reads consecutive float32 arrays from the file's bytes (little-endian, as llama2.c writes them).
class Reader {
 public:
  Reader(const std::vector<char>& bytes, std::size_t offset) : bytes_(bytes), at_(offset) {}
  Eigen::MatrixXd matrix(int rows, int cols) {  // row-major [rows, cols] in the file
    Eigen::MatrixXd m(rows, cols);
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) m(r, c) = next();
    return m;
  }
  Eigen::VectorXd vector(int n) {
    Eigen::VectorXd v(n);
    for (int i = 0; i < n; ++i) v(i) = next();
    return v;
  }
  std::size_t offset() const { return at_; }

 private:
  double next() {
    float f;
    std::memcpy(&f, bytes_.data() + at_, sizeof f);
    at_ += sizeof f;
    return static_cast<double>(f);
  }
  const std::vector<char>& bytes_;
  std::size_t at_;
};

}  // namespace

Checkpoint load_checkpoint(const std::filesystem::path& path, const std::string& key) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(key, fmt::format("cannot read '{}' (a llama2.c checkpoint, e.g. {})", path.string(), kDefaultModelFile));
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() < 7 * sizeof(std::int32_t))
    throw InputError(key, fmt::format("'{}' is too short ({} bytes) for a llama2.c header", path.string(), bytes.size()));
  std::int32_t h[7];
  std::memcpy(h, bytes.data(), sizeof h);
  Checkpoint ck;
  ck.path = path;
  ck.file_bytes = bytes.size();
  Config& c = ck.config;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.shared_classifier = h[5] > 0;
  // A negative vocabulary size flags an unshared classifier; INT32_MIN has no positive counterpart.
  c.vocab_size = h[5] > 0 ? h[5] : h[5] == std::numeric_limits<std::int32_t>::min() ? 0 : -h[5];
  c.seq_len = h[6];
  const bool sane = c.dim > 0 && c.hidden_dim > 0 && c.n_layers > 0 && c.n_heads > 0 && c.n_kv_heads > 0 &&
                    c.vocab_size > 0 && c.seq_len > 0 && c.dim % c.n_heads == 0 && c.n_heads % c.n_kv_heads == 0 &&
                    c.head_size() % 2 == 0 && c.dim <= 1 << 16 && c.hidden_dim <= 1 << 18 && c.n_layers <= 1024 &&
                    c.vocab_size <= 1 << 22 && c.seq_len <= 1 << 20;
  if (!sane)
    throw InputError(key, fmt::format("'{}' does not have a valid llama2.c header (dim {}, hidden {}, layers {}, heads {}, kv heads {}, "
                                      "vocab {}, seq_len {})", path.string(), h[0], h[1], h[2], h[3], h[4], h[5], h[6]));
  const std::size_t L = c.n_layers, D = c.dim, Hd = c.hidden_dim, KV = c.kv_dim(), V = c.vocab_size;
  const std::size_t half = c.head_size() / 2;
  std::size_t floats = V * D + L * D + L * D * D + 2 * L * KV * D + L * D * D + L * D + 3 * L * Hd * D + D +
                       2 * static_cast<std::size_t>(c.seq_len) * half;
  if (!c.shared_classifier) floats += V * D;
  const std::size_t expected = 7 * sizeof(std::int32_t) + floats * sizeof(float);
  if (bytes.size() != expected)
    throw InputError(key, fmt::format("'{}' has {} bytes, but its header (dim {}, {} layers, vocab {}) implies {}", path.string(),
                                      bytes.size(), c.dim, c.n_layers, c.vocab_size, expected));

  Reader r(bytes, 7 * sizeof(std::int32_t));
  ck.token_embedding = r.matrix(c.vocab_size, c.dim);
  ck.layers.resize(L);
  // The file groups each array over all layers (all rms_att, then all wq, ...).
  for (auto& l : ck.layers) l.rms_att = r.vector(c.dim);
  for (auto& l : ck.layers) l.wq = r.matrix(c.dim, c.dim);
  for (auto& l : ck.layers) l.wk = r.matrix(c.kv_dim(), c.dim);
  for (auto& l : ck.layers) l.wv = r.matrix(c.kv_dim(), c.dim);
  for (auto& l : ck.layers) l.wo = r.matrix(c.dim, c.dim);
  for (auto& l : ck.layers) l.rms_ffn = r.vector(c.dim);
  for (auto& l : ck.layers) l.w1 = r.matrix(c.hidden_dim, c.dim);
  for (auto& l : ck.layers) l.w2 = r.matrix(c.dim, c.hidden_dim);
  for (auto& l : ck.layers) l.w3 = r.matrix(c.hidden_dim, c.dim);
  ck.rms_final = r.vector(c.dim);
  ck.rope_cos = r.matrix(c.seq_len, static_cast<int>(half));
  ck.rope_sin = r.matrix(c.seq_len, static_cast<int>(half));
  ck.classifier = c.shared_classifier ? ck.token_embedding : r.matrix(c.vocab_size, c.dim);
  if (r.offset() != bytes.size()) throw std::logic_error("internal: checkpoint reader did not consume the file");
  return ck;
}

}  // namespace hdat::llama
