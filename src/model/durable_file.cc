#include "model/durable_file.h"

#include <openssl/evp.h>

#include <utility>

namespace pw {
namespace {

std::string Hex(const unsigned char* digest, unsigned int length) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += kDigits[digest[i] >> 4];
    out += kDigits[digest[i] & 15];
  }
  return out;
}

}  // namespace

std::string Sha256Hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  PW_CHECK(EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) == 1,
           "OpenSSL SHA-256 failed");
  return Hex(digest, length);
}

DurableFileWriter::DurableFileWriter(std::string path) : file_(std::move(path), /*durable=*/true) {}

DurableFileWriter::~DurableFileWriter() { FreeDigest(); }  // file_ removes its .tmp

void DurableFileWriter::FreeDigest() {
  if (sha_ != nullptr) EVP_MD_CTX_free(sha_);
  sha_ = nullptr;
}

Status DurableFileWriter::Open() {
  PW_RETURN_IF_ERROR(file_.Open());
  FreeDigest();  // of an earlier attempt whose Write failed
  sha_ = EVP_MD_CTX_new();
  PW_CHECK(sha_ != nullptr && EVP_DigestInit_ex(sha_, EVP_sha256(), nullptr) == 1, "OpenSSL SHA-256 init failed");
  return Status::Ok();
}

Status DurableFileWriter::Write(std::string_view bytes) {
  PW_CHECK(sha_ != nullptr, "DurableFileWriter::Write before Open");
  PW_CHECK(EVP_DigestUpdate(sha_, bytes.data(), bytes.size()) == 1, "OpenSSL SHA-256 update failed");
  Status written = file_.Write(bytes);
  if (!written.ok()) FreeDigest();  // the file is abandoned
  return written;
}

Result<FileDigest> DurableFileWriter::Commit() {
  PW_CHECK(sha_ != nullptr, "DurableFileWriter::Commit without a successful Open");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  PW_CHECK(EVP_DigestFinal_ex(sha_, digest, &length) == 1, "OpenSSL SHA-256 final failed");
  FreeDigest();
  PW_RETURN_IF_ERROR(file_.Commit());
  return FileDigest{file_.bytes_written(), Hex(digest, length)};
}

Result<FileDigest> WriteFileDurably(const std::string& path, std::string_view contents) {
  DurableFileWriter writer(path);
  PW_RETURN_IF_ERROR(writer.Open());
  PW_RETURN_IF_ERROR(writer.Write(contents));
  return writer.Commit();
}

}  // namespace pw
