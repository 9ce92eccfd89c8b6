// The bundled model travels with the project and is the verified copy: SHA-256 against the standard's
// test vectors, the recorded sums against a damaged or incomplete copy, and the data-folder lookup.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "hdat/core/error.hpp"
#include "hdat/llama/sha256.hpp"
#include "model_path.hpp"
#include "../input_error_message.hpp"

using namespace hdat;
using namespace hdat::llama;
namespace fs = std::filesystem;

namespace {

std::string sha256_of(const std::string& text) {
  return sha256_hex({reinterpret_cast<const unsigned char*>(text.data()), text.size()});
}

// A scratch copy of the bundled model folder, removed at the end of the scope.
struct ScratchCopy {
  fs::path root = fs::temp_directory_path() / ("hdat_test_bundled_" + std::to_string(::getpid()));
  fs::path folder = root / "models" / "stories260K";
  ScratchCopy() {
    fs::remove_all(root);
    fs::create_directories(folder);
    for (const char* f : {"stories260K.bin", "tok512.bin", "vocab.txt"}) fs::copy_file(stories260k_path().parent_path() / f, folder / f);
  }
  ~ScratchCopy() { fs::remove_all(root); }
};

// Sets an environment variable for the scope (tests run on one thread).
struct ScopedEnv {
  std::string name;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) { ::setenv(name.c_str(), value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

}  // namespace

TEST_CASE("SHA-256 gives the FIPS 180-2 / NIST test vectors") {
  CHECK(sha256_of("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_of("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_of(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // A file is hashed in pieces: the million a's through a file give the same sum.
  const fs::path tmp = fs::temp_directory_path() / ("hdat_test_sha_" + std::to_string(::getpid()));
  std::ofstream(tmp, std::ios::binary) << std::string(1000000, 'a');
  CHECK(file_sha256_hex(tmp, "f") == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  fs::remove(tmp);
  CHECK_THROWS_AS(file_sha256_hex(tmp, "f"), InputError);
}

TEST_CASE("the bundled model is found in the project and is the verified copy") {
  const fs::path path = default_model_file();
  CHECK(path.filename() == "stories260K.bin");
  CHECK(fs::file_size(path) == 1056540);
  CHECK(fs::exists(path.parent_path() / "LICENSE"));  // the MIT licence travels with it
  CHECK_NOTHROW(verify_bundled_model(path.parent_path()));
}

TEST_CASE("a damaged or incomplete copy of the bundled model is refused with an input error") {
  ScratchCopy copy;
  CHECK_NOTHROW(verify_bundled_model(copy.folder));
  {
    ScopedEnv env("HDAT_DATA_DIR", copy.root.string());
    CHECK(default_model_file() == copy.folder / "stories260K.bin");  // HDAT_DATA_DIR is used alone
  }
  SUBCASE("one flipped byte in the checkpoint") {
    std::fstream f(copy.folder / "stories260K.bin", std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(500000);
    char c = 0;
    f.get(c);
    f.seekp(500000);
    f.put(static_cast<char>(c ^ 1));
  }
  SUBCASE("a changed vocabulary") { std::ofstream(copy.folder / "vocab.txt", std::ios::app) << "extra\n"; }
  SUBCASE("a missing tokenizer") { fs::remove(copy.folder / "tok512.bin"); }
  const std::string message = message_of([&] { verify_bundled_model(copy.folder); });
  CHECK(message.find("--model-file") != std::string::npos);
  ScopedEnv env("HDAT_DATA_DIR", copy.root.string());
  CHECK(message_of([] { default_model_file(); }) == message);
}

TEST_CASE("no bundled model where HDAT_DATA_DIR points: an input error saying where it looked") {
  ScopedEnv env("HDAT_DATA_DIR", "/nonexistent/hdat-data");
  const std::string message = message_of([] { default_model_file(); });
  CHECK(message.find("/nonexistent/hdat-data/models/stories260K") != std::string::npos);
}
