#pragma once
// SHA-256 (FIPS 180-4) through OpenSSL's libcrypto: the check that the bundled model is the verified one.
#include <filesystem>
#include <span>
#include <string>

namespace hdat::llama {

/// Lower-case hexadecimal SHA-256 of `bytes`.
std::string sha256_hex(std::span<const unsigned char> bytes);
/// Lower-case hexadecimal SHA-256 of a file's content; InputError(`key`, ...) if it cannot be read.
std::string file_sha256_hex(const std::filesystem::path& file, const std::string& key);

}  // namespace hdat::llama
