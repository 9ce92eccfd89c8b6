// Fuzz target: a llama2.c checkpoint (`hdat geometry --model-file PATH`): the file is read
// (llama::load_checkpoint) and, when accepted, run through the forward pass on a few tokens and
// decoded with the key/value cache. Every rejection must be an InputError (exit code 2); anything
// else escaping, or a crash, is a finding. (Weights of any value are a valid checkpoint: non-finite
// logits are the model's, not a parser failure.)
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "hdat/core/error.hpp"
#include "hdat/llama/checkpoint.hpp"
#include "hdat/llama/transformer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const hdat_fuzz::ScratchFile model_file("model.bin");
  model_file.write({reinterpret_cast<const char*>(data), size});
  try {
    const hdat::llama::Checkpoint ck = hdat::llama::load_checkpoint(model_file.path());
    const hdat::llama::Transformer<double> model(ck);
    const int T = std::min(ck.config.seq_len, 4);
    std::vector<int> tokens(T);
    for (int t = 0; t < T; ++t) tokens[t] = t % ck.config.vocab_size;
    hdat::llama::Capture capture;
    (void)model.forward(tokens, &capture);
    hdat::llama::Transformer<double>::Session session(model);
    for (int t : tokens) (void)session.step(t);
  } catch (const hdat::InputError&) {
    // a clear rejection: exit code 2
  }
  return 0;
}
