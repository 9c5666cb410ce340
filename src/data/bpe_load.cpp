// Reading GPT-2's tokenizer files: vocab.json (token → id, tokens in the byte alphabet)
// and merges.txt (pairs in rank order), checked against each other.
#include <sys/stat.h>  // stat

#include <fstream>            // std::ifstream
#include <limits>             // std::numeric_limits
#include <nlohmann/json.hpp>  // nlohmann::json
#include <utility>            // std::move

#include "data/bpe.h"           // ByteLevelBpe
#include "data/bpe_alphabet.h"  // alphabet_to_bytes
#include "data/data_error.h"    // DataError
#include "data/token_file.h"    // format_count

namespace trident::data {
namespace {

/// Ids above this are refused: the tables are indexed by id.
constexpr int64_t kMaxTokenId = (int64_t{1} << 24) - 1;

constexpr const char* kVocabFix =
    "pass the vocab.json of GPT-2's tokenizer (from a Hugging Face download of gpt2) to --vocab";
constexpr const char* kMergesFix =
    "pass the merges.txt of GPT-2's tokenizer (from a Hugging Face download of gpt2) to --merges";

/// Opens `path` for reading or throws DataError saying that it is missing.
std::ifstream open_or_throw(const std::string& path, const char* what, const char* fix) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw DataError(std::string(what) + " " + path + " not found; " + fix);
  if (S_ISDIR(st.st_mode))
    throw DataError(std::string(what) + " " + path + " is a directory; " + fix);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(std::string("cannot read ") + what + " " + path + "; " + fix);
  return in;
}

}  // namespace

void ByteLevelBpe::read_vocab(const std::string& path) {
  std::ifstream in = open_or_throw(path, "vocab file", kVocabFix);
  nlohmann::json vocab;
  try {
    vocab = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw DataError("vocab file " + path + " is not valid JSON (" + e.what() + "); " + kVocabFix);
  }
  if (!vocab.is_object() || vocab.empty())
    throw DataError("vocab file " + path + " is not a JSON object of token → id (found " +
                    (vocab.is_object() ? std::string("an empty object") : vocab.type_name()) +
                    "); " + kVocabFix);
  for (const auto& [token, value] : vocab.items()) {
    const std::string quoted = "\"" + token + "\"";
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() > kMaxTokenId)
      throw DataError("vocab file " + path + ": token " + quoted + " has id " + value.dump() +
                      "; ids must be integers from 0 to " + format_count(kMaxTokenId) + "; " +
                      kVocabFix);
    const auto id = static_cast<int32_t>(value.get<int64_t>());
    const std::optional<std::string> bytes = alphabet_to_bytes(token);
    if (!bytes || bytes->empty())
      throw DataError("vocab file " + path + ": token " + quoted +
                      " is not written in GPT-2's byte-to-unicode alphabet; only byte-level "
                      "BPE vocabularies (GPT-2's) are supported");
    if (static_cast<size_t>(id) >= bytes_of_id_.size()) {
      bytes_of_id_.resize(id + 1);
      has_id_.resize(id + 1, false);
    }
    if (has_id_[id])
      throw DataError("vocab file " + path + ": id " + std::to_string(id) + " is given to " +
                      quoted + " and to \"" + bytes_to_alphabet(bytes_of_id_[id]) +
                      "\"; each id must name one token");
    has_id_[id] = true;
    bytes_of_id_[id] = *bytes;
    id_of_bytes_.emplace(*bytes, id);
    if (bytes->size() == 1) byte_id_[static_cast<unsigned char>((*bytes)[0])] = id;
    if (token == "<|endoftext|>") end_of_text_ = id;
  }
}

void ByteLevelBpe::read_merges(const std::string& path) {
  std::ifstream in = open_or_throw(path, "merges file", kMergesFix);
  const std::string mismatch =
      "; the vocab and merges files do not belong together (use the "
      "vocab.json and merges.txt of one tokenizer)";
  std::string line;
  for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    const std::string where = "merges file " + path + " line " + std::to_string(line_no);
    const size_t space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw DataError(where + ": expected two tokens separated by one space, got '" + line + "'; " +
                      kMergesFix);
    const std::string left = line.substr(0, space), right = line.substr(space + 1);
    int32_t ids[2];
    std::string merged;
    for (int side = 0; side < 2; ++side) {
      const std::string& token = side == 0 ? left : right;
      const std::optional<std::string> bytes = alphabet_to_bytes(token);
      const auto it = bytes ? id_of_bytes_.find(*bytes) : id_of_bytes_.end();
      if (it == id_of_bytes_.end())
        throw DataError(where + ": '" + line + "': '" + token + "' is not in vocab file " +
                        vocab_path_ + mismatch);
      ids[side] = it->second;
      merged += *bytes;
    }
    const auto result = id_of_bytes_.find(merged);
    if (result == id_of_bytes_.end())
      throw DataError(where + ": merge '" + line + "' gives '" + bytes_to_alphabet(merged) +
                      "', which is not in vocab file " + vocab_path_ + mismatch);
    if (merges_.size() >= static_cast<size_t>(std::numeric_limits<int32_t>::max()))
      throw DataError(where + ": too many merges");
    // A repeated pair keeps its first, lowest rank.
    merges_.emplace(pair_key(ids[0], ids[1]),
                    Merge{static_cast<int32_t>(merges_.size()), result->second});
  }
  if (in.bad()) throw DataError("cannot read merges file " + path + "; " + kMergesFix);
}

ByteLevelBpe ByteLevelBpe::load(const std::string& vocab_path, const std::string& merges_path) {
  ByteLevelBpe bpe;
  bpe.vocab_path_ = vocab_path;
  bpe.merges_path_ = merges_path;
  bpe.read_vocab(vocab_path);
  bpe.read_merges(merges_path);
  return bpe;
}

}  // namespace trident::data
