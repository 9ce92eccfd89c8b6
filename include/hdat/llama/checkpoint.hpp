#pragma once
// A llama2.c checkpoint ("legacy", version 0):
// header of 7 int32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a negative
// vocab_size means a separate classifier follows the RoPE tables), then float32 arrays, row-major,
// every matrix stored [out, in] (y = W x): token embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1
// (gate), w2 (down), w3 (up), rms_final, freq_cis_real/imag [seq_len, head_size/2] (, wcls).
// Format and verification figures of the bundled model: data/models/stories260K/README.md.
#include <Eigen/Dense>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace hdat::llama {

/// The bundled model (stories260K, MIT) in the source tree, relative to the project root: for messages.
/// Programs find it, wherever hdat is installed, with default_model_file().
inline constexpr const char* kDefaultModelFile = "data/models/stories260K/stories260K.bin";

/// The bundled model's checkpoint, found in the data folders (data_folders()) and verified: the sha256
/// sums of stories260K.bin, tok512.bin and vocab.txt must be the recorded ones. InputError(`key`, ...)
/// when it is not found or a file differs (the message says which, and where it looked).
std::filesystem::path default_model_file(const std::string& key = "--model-file");

/// Where hdat's data (the folder data/ of the source tree) is looked for, in order: $HDAT_DATA_DIR alone
/// when it is set; otherwise share/hdat beside the running program's bin/ (an installed hdat), the source
/// tree's data/ (a build tree), and the configured install prefix's share/hdat.
std::vector<std::filesystem::path> data_folders();

/// Check the bundled model's files in `model_folder` (…/models/stories260K) against the recorded sha256
/// sums; InputError(`key`, ...) naming the first file that is missing or differs.
void verify_bundled_model(const std::filesystem::path& model_folder, const std::string& key = "--model-file");

struct Config {
  int dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0, seq_len = 0;
  bool shared_classifier = true;  ///< classifier = token embedding (vocab_size > 0 in the header)
  int head_size() const { return dim / n_heads; }
  int kv_dim() const { return n_kv_heads * head_size(); }
  int group() const { return n_heads / n_kv_heads; }  ///< query heads per key/value head
  int kv_head(int h) const { return h / group(); }     ///< grouped-query attention: query head h -> h // group
};

struct LayerWeights {
  Eigen::VectorXd rms_att, rms_ffn;  ///< [dim]
  Eigen::MatrixXd wq;                ///< [dim, dim]
  Eigen::MatrixXd wk, wv;            ///< [kv_dim, dim]
  Eigen::MatrixXd wo;                ///< [dim, dim]
  Eigen::MatrixXd w1, w3;            ///< [hidden, dim]: gate and up
  Eigen::MatrixXd w2;                ///< [dim, hidden]: down
};

/// The weights as stored (float32 values held in double, exactly).
struct Checkpoint {
  Config config;
  std::filesystem::path path;
  std::uintmax_t file_bytes = 0;
  Eigen::MatrixXd token_embedding;  ///< [vocab, dim]
  std::vector<LayerWeights> layers;
  Eigen::VectorXd rms_final;        ///< [dim]
  Eigen::MatrixXd classifier;       ///< [vocab, dim] (a copy of the embedding when shared)
  Eigen::MatrixXd rope_cos, rope_sin;  ///< the file's table [seq_len, head_size/2]
};

/// Read a checkpoint. InputError(`key`, ...) on a missing file, a bad header or a size that does not
/// match the header (the message gives the expected and actual byte counts).
Checkpoint load_checkpoint(const std::filesystem::path& path, const std::string& key = "--model-file");

}  // namespace hdat::llama
