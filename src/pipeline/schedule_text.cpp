// The text form of schedules: mnemonics such as "RA0 F0 SA0 RG0 B0 SG0 RED OPT",
// printed by to_string and read back by parse_schedule.
#include <cctype>     // std::isdigit, std::isspace, std::isupper
#include <stdexcept>  // std::invalid_argument
#include <string>     // std::string, std::to_string

#include "pipeline/schedule.h"

namespace trident::pipeline {
namespace {

struct Mnemonic {
  const char* text;
  Op op;
};

// A token's whole run of capital letters is compared, so "RA" never reads as "R" + "A".
constexpr Mnemonic kMnemonics[] = {
    {"RA", Op::kRecvActivation}, {"F", Op::kForward},        {"SA", Op::kSendActivation},
    {"RG", Op::kRecvGrad},       {"B", Op::kBackward},       {"SG", Op::kSendGrad},
    {"BI", Op::kBackwardInput},  {"W", Op::kBackwardWeight}, {"RED", Op::kReduceGrads},
    {"OPT", Op::kOptimizerStep},
};

bool takes_micro_batch(Op op) { return op != Op::kReduceGrads && op != Op::kOptimizerStep; }

const char* mnemonic(Op op) {
  for (const Mnemonic& m : kMnemonics) {
    if (m.op == op) return m.text;
  }
  return "?";
}

[[noreturn]] void bad_token(const std::string& token, int index, size_t position,
                            const std::string& why) {
  throw std::invalid_argument("parse_schedule: token " + std::to_string(index) + " '" + token +
                              "' at character " + std::to_string(position) + ": " + why);
}

// Reads a non-negative decimal number starting at `i`; advances `i` past it.
bool read_number(const std::string& token, size_t& i, int& value) {
  const size_t start = i;
  long long v = 0;
  while (i < token.size() && std::isdigit(static_cast<unsigned char>(token[i]))) {
    v = v * 10 + (token[i] - '0');
    if (v > 1000000000) return false;
    ++i;
  }
  value = static_cast<int>(v);
  return i > start;
}

Instruction parse_token(const std::string& token, int index, size_t position) {
  size_t i = 0;
  while (i < token.size() && std::isupper(static_cast<unsigned char>(token[i]))) ++i;
  const std::string letters = token.substr(0, i);
  const Mnemonic* found = nullptr;
  for (const Mnemonic& m : kMnemonics) {
    if (letters == m.text) found = &m;
  }
  if (found == nullptr) {
    bad_token(token, index, position,
              "unknown instruction '" + letters +
                  "' (expected F, B, BI, W, RA, SA, RG, SG with a micro-batch, or RED, OPT)");
  }
  Instruction in{found->op};
  if (!takes_micro_batch(in.op)) {
    if (i != token.size()) bad_token(token, index, position, letters + " takes no micro-batch");
    return in;
  }
  if (!read_number(token, i, in.micro_batch)) {
    bad_token(token, index, position,
              letters + " needs a micro-batch number, e.g. " + letters + "0");
  }
  if (i < token.size() && token[i] == 'c') {
    ++i;
    if (!read_number(token, i, in.chunk)) {
      bad_token(token, index, position, "'c' must be followed by a chunk number, e.g. F0c1");
    }
  }
  if (i != token.size()) {
    bad_token(token, index, position, "unexpected '" + token.substr(i) + "' after the number");
  }
  return in;
}

}  // namespace

std::string to_string(const Instruction& instruction) {
  std::string text = mnemonic(instruction.op);
  if (takes_micro_batch(instruction.op)) text += std::to_string(instruction.micro_batch);
  if (instruction.chunk != 0) text += "c" + std::to_string(instruction.chunk);
  return text;
}

std::string to_string(const Schedule& schedule, bool compute_only) {
  std::string text;
  for (const Instruction& in : schedule) {
    if (compute_only && !is_compute(in.op)) continue;
    if (!text.empty()) text += ' ';
    text += to_string(in);
  }
  return text;
}

Schedule parse_schedule(const std::string& text) {
  Schedule schedule;
  size_t i = 0;
  int index = 0;
  while (true) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i == text.size()) break;
    const size_t start = i;
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    schedule.push_back(parse_token(text.substr(start, i - start), index++, start));
  }
  return schedule;
}

}  // namespace trident::pipeline
