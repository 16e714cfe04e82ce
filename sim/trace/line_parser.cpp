#include "sim/trace/line_parser.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "sim/parse/diagnostics.h"
#include "sim/parse/json.h"
#include "sim/parse/utf8.h"
#include "sim/trace/json_text.h"

namespace arlsim::trace {
using parse::append_utf8;
using parse::utf8_length;

namespace {

constexpr int kMaxDepth = 64;
constexpr int64_t kMaxTokens = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxStep = std::numeric_limits<int32_t>::max();
constexpr int64_t kMaxPromptId = std::numeric_limits<int64_t>::max();
// A tool call longer than about 115 days is a unit mistake, not a measurement.
constexpr int64_t kMaxLatencySeconds = kMaxToolLatencySeconds;

// Bits for "seen" masks; the order is the order of the key lists below.
enum TrajectoryKey : uint32_t { kStep = 1, kPromptId = 2, kSample = 4, kTurns = 8, kTruncated = 16 };
enum TurnKey : uint32_t { kPrefill = 1, kGen = 2, kTool = 4, kLatency = 8, kObs = 16 };

}  // namespace

// The keys of one object kind, also as they appear quoted in the text (for the fast path).
struct LineParser::KeySet {
  std::vector<std::string> names;
  std::vector<std::string> quoted;
  explicit KeySet(std::vector<std::string> n) : names(std::move(n)) {
    for (const auto& k : names) quoted.push_back('"' + k + '"');
  }
};

namespace {

const LineParser::KeySet& trajectory_keys() {
  static const LineParser::KeySet keys({"step", "prompt_id", "sample", "turns", "truncated"});
  return keys;
}
const LineParser::KeySet& turn_keys() {
  static const LineParser::KeySet keys({"prefill_tokens", "gen_tokens", "tool", "tool_latency_s", "obs_tokens"});
  return keys;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Bytes that stand for themselves inside a string: printable ASCII other than '"' and '\\'.
constexpr auto kPlainByte = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x7f; ++c) t[static_cast<size_t>(c)] = c != '"' && c != '\\';
  return t;
}();

// The value of a run of digits, or -1 when it does not fit in an int64.
int64_t integer_value(std::string_view digits) {
  if (digits.size() > 19) return -1;
  uint64_t v = 0;  // 19 digits fit in 64 unsigned bits
  for (char c : digits) v = v * 10 + static_cast<uint64_t>(c - '0');
  return v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ? -1 : static_cast<int64_t>(v);
}

// Seconds written as a plain decimal, converted to nanoseconds without going through a double so
// that what the writer prints reads back exactly; exponents take the floating-point path.
bool decimal_seconds_to_ns(std::string_view text, int64_t& ns) {
  if (text.find_first_of("eE") != std::string_view::npos) {
    const double s = std::strtod(std::string(text).c_str(), nullptr);
    if (!(s >= 0 && s <= static_cast<double>(kMaxLatencySeconds))) return false;
    ns = SimTime::from_seconds(s).ns();
    return true;
  }
  const size_t dot = text.find('.');
  const std::string_view whole = text.substr(0, dot);
  const int64_t seconds = integer_value(whole);
  if (seconds < 0 || seconds > kMaxLatencySeconds) return false;
  int64_t frac = 0;
  if (dot != std::string_view::npos) {
    const std::string_view digits = text.substr(dot + 1);
    int64_t scale = 100'000'000;
    for (size_t i = 0; i < digits.size() && i < 9; ++i, scale /= 10) frac += (digits[i] - '0') * scale;
    if (digits.size() > 9 && digits[9] >= '5') ++frac;  // round half up at the nanosecond
  }
  ns = seconds * 1'000'000'000 + frac;
  return ns <= kMaxLatencySeconds * 1'000'000'000;
}

}  // namespace

int16_t ToolTable::intern(std::string_view name) {
  if (last_ != kNoTool && names_[static_cast<size_t>(last_)] == name) return last_;
  for (size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] == name) return last_ = static_cast<int16_t>(i);
  }
  if (names_.size() >= kMaxToolKinds) return kNoTool;
  names_.emplace_back(name);
  return last_ = static_cast<int16_t>(names_.size() - 1);
}

void LineParser::skip_space() {
  while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r')) ++p_;
}

std::string LineParser::describe_char() const {
  if (at_end()) return "end of line";
  const unsigned char c = static_cast<unsigned char>(*p_);
  if (c >= 0x20 && c < 0x7f) return std::string("character '") + static_cast<char>(c) + "'";
  static const char* hex = "0123456789abcdef";
  return std::string("byte 0x") + hex[c >> 4] + hex[c & 15];
}

void LineParser::syntax_error(std::string message, std::string hint) {
  syntax_error_at(offset(), std::move(message), std::move(hint));
}

void LineParser::syntax_error_at(size_t at, std::string message, std::string hint) {
  if (failed_) return;
  failed_ = true;
  ended_early_ = at_end();
  problems_->push_back({true, at, {}, std::move(message), std::move(hint)});
}

std::string LineParser::pointer(int turn, std::string_view key) {
  std::string out;
  if (turn >= 0) out = "/turns/" + std::to_string(turn);
  if (!key.empty()) out = parse::pointer_append(out, key);
  return out;
}

void LineParser::value_error(int turn, std::string_view key, std::string message, std::string hint) {
  value_errors_ = true;
  problems_->push_back({false, 0, pointer(turn, key), std::move(message), std::move(hint)});
}

bool LineParser::read_hex4(uint32_t& cp) {
  if (end_ - p_ < 4) return false;
  cp = 0;
  for (int k = 0; k < 4; ++k) {
    const char h = *p_++;
    cp <<= 4;
    if (h >= '0' && h <= '9') cp |= static_cast<uint32_t>(h - '0');
    else if (h >= 'a' && h <= 'f') cp |= static_cast<uint32_t>(h - 'a' + 10);
    else if (h >= 'A' && h <= 'F') cp |= static_cast<uint32_t>(h - 'A' + 10);
    else return false;
  }
  return true;
}

// At the character after a backslash.
bool LineParser::read_escape(std::string& out) {
  const size_t esc = offset();
  if (at_end()) {
    syntax_error_at(esc, "unterminated string");
    return false;
  }
  const char e = *p_++;
  switch (e) {
    case '"': out += '"'; return true;
    case '\\': out += '\\'; return true;
    case '/': out += '/'; return true;
    case 'b': out += '\b'; return true;
    case 'f': out += '\f'; return true;
    case 'n': out += '\n'; return true;
    case 'r': out += '\r'; return true;
    case 't': out += '\t'; return true;
    case 'u': break;
    default:
      syntax_error_at(esc, std::string("invalid escape '\\") +
                               (e >= 0x20 && e < 0x7f ? std::string(1, e) : std::string("?")) + "'");
      return false;
  }
  uint32_t cp = 0;
  if (!read_hex4(cp)) {
    syntax_error_at(esc, "invalid \\u escape; expected four hexadecimal digits");
    return false;
  }
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    uint32_t lo = 0;
    if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u' || (p_ += 2, !read_hex4(lo)) || lo < 0xDC00 || lo > 0xDFFF) {
      syntax_error_at(esc, "unpaired UTF-16 surrogate in \\u escape");
      return false;
    }
    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
  } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
    syntax_error_at(esc, "unpaired UTF-16 surrogate in \\u escape");
    return false;
  }
  append_utf8(out, cp);
  return true;
}

// At the opening quote. Without escapes `out` views the line itself; with them, scratch_.
bool LineParser::read_string(std::string_view& out) {
  const size_t start = offset();
  ++p_;
  const char* run = p_;
  bool escaped = false;
  while (true) {
    const char* plain = p_;
    while (p_ < end_ && kPlainByte[static_cast<unsigned char>(*p_)]) ++p_;
    if (escaped) scratch_.append(plain, static_cast<size_t>(p_ - plain));
    if (at_end()) {
      syntax_error_at(start, "unterminated string");
      return false;
    }
    const unsigned char c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      if (!escaped) out = std::string_view(run, static_cast<size_t>(p_ - run));
      else out = scratch_;
      ++p_;
      return true;
    }
    if (c < 0x20) {
      syntax_error("control " + describe_char() + " inside a string", "escape it, e.g. \\t or \\u0009");
      return false;
    }
    if (c == '\\') {
      if (!escaped) scratch_.assign(run, static_cast<size_t>(p_ - run));
      escaped = true;
      ++p_;
      if (!read_escape(scratch_)) return false;
      continue;
    }
    size_t n = 1;
    if (c >= 0x80) {
      n = utf8_length(reinterpret_cast<const unsigned char*>(p_), static_cast<size_t>(end_ - p_));
      if (n == 0) {
        syntax_error("invalid UTF-8 " + describe_char() + " inside a string");
        return false;
      }
    }
    if (escaped) scratch_.append(p_, n);
    p_ += n;
  }
}

bool LineParser::scan_number(Number& n) {
  const char* start = p_;
  n = {};
  if (*p_ == '-') {
    n.negative = true;
    ++p_;
  }
  if (at_end() || !is_digit(*p_)) {
    if (end_ - p_ >= 8 && std::memcmp(p_, "Infinity", 8) == 0)
      syntax_error("NaN and Infinity are not valid JSON numbers", "write a finite number");
    else
      syntax_error("invalid number; expected a digit after '-'");
    return false;
  }
  if (*p_ == '0') {
    ++p_;
    if (!at_end() && is_digit(*p_)) {
      syntax_error_at(static_cast<size_t>(start - begin_), "invalid number: leading zeros are not allowed");
      return false;
    }
  } else {
    while (!at_end() && is_digit(*p_)) ++p_;
  }
  if (!at_end() && *p_ == '.') {
    n.integer = false;
    ++p_;
    if (at_end() || !is_digit(*p_)) {
      syntax_error("invalid number: expected a digit after '.'");
      return false;
    }
    while (!at_end() && is_digit(*p_)) ++p_;
  }
  if (!at_end() && (*p_ == 'e' || *p_ == 'E')) {
    n.integer = false;
    ++p_;
    if (!at_end() && (*p_ == '+' || *p_ == '-')) ++p_;
    if (at_end() || !is_digit(*p_)) {
      syntax_error("invalid number: expected a digit in the exponent");
      return false;
    }
    while (!at_end() && is_digit(*p_)) ++p_;
  }
  n.text = std::string_view(start, static_cast<size_t>(p_ - start));
  return true;
}

bool LineParser::next_member(char close, bool& more) {
  skip_space();
  if (at_end()) {
    syntax_error(close == '}' ? "unexpected end of line inside an object; expected ',' or '}'"
                              : "unexpected end of line inside an array; expected ',' or ']'");
    return false;
  }
  if (*p_ == ',') {
    ++p_;
    skip_space();
    if (!at_end() && *p_ == close) {
      syntax_error(std::string("trailing comma before '") + close + "'", "remove the last comma");
      return false;
    }
    more = true;
    return true;
  }
  if (*p_ == close) {
    ++p_;
    more = false;
    return true;
  }
  syntax_error("unexpected " + describe_char() + (close == '}' ? " in an object; expected ',' or '}'"
                                                               : " in an array; expected ',' or ']'"));
  return false;
}

bool LineParser::expect_colon(std::string_view key) {
  skip_space();
  if (at_end() || *p_ != ':') {
    syntax_error("expected ':' after the key " + parse::quote(key) + ", found " + describe_char());
    return false;
  }
  ++p_;
  skip_space();
  return true;
}

bool LineParser::skip_value(int depth) {
  if (depth > kMaxDepth) {
    syntax_error("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    return false;
  }
  if (at_end()) {
    syntax_error("unexpected end of line; expected a value");
    return false;
  }
  const char c = *p_;
  if (c == '"') {
    std::string_view s;
    return read_string(s);
  }
  if (c == '-' || is_digit(c)) {
    Number n;
    return scan_number(n);
  }
  if (c == '{' || c == '[') {
    const char close = c == '{' ? '}' : ']';
    ++p_;
    skip_space();
    if (!at_end() && *p_ == close) {
      ++p_;
      return true;
    }
    for (bool more = true; more;) {
      skip_space();
      if (c == '{') {
        if (at_end() || *p_ != '"') {
          syntax_error(at_end() ? "unexpected end of line inside an object; expected a key"
                                : "unexpected " + describe_char() + "; expected a key in double quotes");
          return false;
        }
        std::string_view key;
        if (!read_string(key) || !expect_colon(key)) return false;
      }
      if (!skip_value(depth + 1) || !next_member(close, more)) return false;
    }
    return true;
  }
  for (std::string_view word : {"true", "false", "null"}) {
    const size_t left = static_cast<size_t>(end_ - p_);
    if (std::memcmp(p_, word.data(), std::min(left, word.size())) != 0) continue;
    p_ += std::min(left, word.size());
    if (left >= word.size()) return true;
    syntax_error("unexpected end of line inside the literal " + std::string(word));  // a cut-off line
    return false;
  }
  if (end_ - p_ >= 3 && std::memcmp(p_, "NaN", 3) == 0)
    syntax_error("NaN and Infinity are not valid JSON numbers", "write a finite number");
  else if (end_ - p_ >= 8 && std::memcmp(p_, "Infinity", 8) == 0)
    syntax_error("NaN and Infinity are not valid JSON numbers", "write a finite number");
  else if (c == '\'')
    syntax_error("strings must be in double quotes, not single quotes");
  else
    syntax_error("unexpected " + describe_char() + "; expected a value");
  return false;
}

// Skips the value at the cursor and says what it was, for "expected X, got Y" messages. Numbers
// are shown as written; returns "" after a syntax error.
std::string LineParser::describe_and_skip() {
  const char* start = p_;
  if (!at_end() && *p_ == '"') {
    std::string_view s;
    if (!read_string(s)) return {};
    return "the string " + parse::quote(s.size() > 40 ? std::string(s.substr(0, 40)) + "..." : std::string(s));
  }
  if (!skip_value(0)) return {};
  const char c = *start;
  if (c == '{') return "an object";
  if (c == '[') return "an array";
  return std::string(start, static_cast<size_t>(p_ - start));
}

bool LineParser::read_count(int turn, std::string_view key, int64_t max, int64_t& out) {
  if (at_end() || !(*p_ == '-' || is_digit(*p_))) {
    const std::string got = describe_and_skip();
    if (!failed_) value_error(turn, key, "expected a non-negative integer, got " + got);
    return false;
  }
  Number n;
  if (!scan_number(n)) return false;
  if (!n.integer || n.negative) {
    // "-0" is an integer literal but still a sign the field was computed wrongly: refuse it too.
    value_error(turn, key, "expected a non-negative integer, got " + std::string(n.text));
    return false;
  }
  const int64_t v = integer_value(n.text);
  if (v < 0 || v > max) {
    value_error(turn, key, "expected a non-negative integer at most " + std::to_string(max) + ", got " +
                               std::string(n.text));
    return false;
  }
  out = v;
  return true;
}

bool LineParser::read_seconds(int turn, std::string_view key, SimTime& out) {
  if (at_end() || !(*p_ == '-' || is_digit(*p_))) {
    const std::string got = describe_and_skip();
    if (!failed_) value_error(turn, key, "expected a non-negative number of seconds, got " + got);
    return false;
  }
  Number n;
  if (!scan_number(n)) return false;
  int64_t ns = 0;
  if (n.negative) {
    value_error(turn, key, "expected a non-negative number of seconds, got " + std::string(n.text));
    return false;
  }
  if (!decimal_seconds_to_ns(n.text, ns)) {
    value_error(turn, key, "expected at most " + std::to_string(kMaxLatencySeconds) + " seconds, got " +
                               std::string(n.text));
    return false;
  }
  out = SimTime::from_ns(ns);
  return true;
}

bool LineParser::read_bool(std::string_view key, bool& out) {
  if (end_ - p_ >= 4 && std::memcmp(p_, "true", 4) == 0) {
    p_ += 4;
    out = true;
    return true;
  }
  if (end_ - p_ >= 5 && std::memcmp(p_, "false", 5) == 0) {
    p_ += 5;
    out = false;
    return true;
  }
  const std::string got = describe_and_skip();
  if (!failed_) value_error(-1, key, "expected true or false, got " + got);
  return false;
}

bool LineParser::read_tool(int turn, int16_t& out) {
  if (end_ - p_ >= 4 && std::memcmp(p_, "null", 4) == 0) {
    p_ += 4;
    out = kNoTool;
    return true;
  }
  if (at_end() || *p_ != '"') {
    const std::string got = describe_and_skip();
    if (!failed_) value_error(turn, "tool", "expected a tool name (a string) or null, got " + got);
    return false;
  }
  std::string_view name;
  if (!read_string(name)) return false;
  if (name.empty()) {
    value_error(turn, "tool", "expected a tool name, got an empty string", "write null for a turn without a tool");
    return false;
  }
  out = tools_.intern(name);
  if (out == kNoTool) {
    value_error(turn, "tool", "more than " + std::to_string(kMaxToolKinds) + " tool kinds in one trace");
    return false;
  }
  return true;
}

bool LineParser::read_key(const KeySet& keys, size_t guess, std::string_view& key, size_t& index) {
  // Fast path: writers put the keys in one order, so the next key is nearly always the predicted one.
  if (guess < keys.names.size()) {
    const std::string& q = keys.quoted[guess];
    if (static_cast<size_t>(end_ - p_) >= q.size() && std::memcmp(p_, q.data(), q.size()) == 0) {
      p_ += q.size();
      key = keys.names[guess];
      index = guess;
      return expect_colon(key);
    }
  }
  if (!read_string(key)) return false;
  if (key.data() == scratch_.data()) {  // a key with escapes: the value may reuse the scratch buffer
    key_buffer_.assign(key);
    key = key_buffer_;
  }
  index = keys.names.size();
  for (size_t k = 0; k < keys.names.size(); ++k)
    if (keys.names[k] == key) index = k;
  return expect_colon(key);
}

// At '{': reads each member with member(key index, key), which reads the value.
template <typename F>
bool LineParser::read_members(const KeySet& keys, F&& member) {
  ++p_;
  skip_space();
  if (!at_end() && *p_ == '}') {
    ++p_;
    return true;
  }
  size_t count = 0;
  for (bool more = true; more; ++count) {
    skip_space();
    if (at_end() || *p_ != '"') {
      syntax_error(at_end() ? "unexpected end of line inside an object; expected a key"
                            : "unexpected " + describe_char() + "; expected a key in double quotes");
      return false;
    }
    std::string_view key;
    size_t k = 0;
    if (!read_key(keys, count, key, k) || !member(k, key) || !next_member('}', more)) return false;
  }
  return true;
}

size_t LineParser::report_unknown_key(int turn, std::string_view key, const std::vector<std::string>& valid) {
  const std::string guess = parse::closest_match(key, valid);
  value_error(turn, key, "unknown key " + parse::quote(key),
              guess.empty() ? "valid keys here: " + parse::join_quoted(valid, ", ")
                            : "did you mean " + parse::quote(guess) + "?");
  return static_cast<size_t>(std::find(valid.begin(), valid.end(), guess) - valid.begin());
}

bool LineParser::read_turn_member(int index, size_t k, std::string_view key, Turn& turn, KeysSeen& seen) {
  static const uint32_t bits[] = {kPrefill, kGen, kTool, kLatency, kObs};
  const auto& keys = turn_keys().names;
  if (k == keys.size()) {
    const size_t guess = report_unknown_key(index, key, keys);
    if (guess < keys.size()) seen.suggested |= bits[guess];
    return skip_value(0);
  }
  if (seen.read & bits[k]) {
    value_error(index, key, "duplicate key " + parse::quote(key));
    return skip_value(0);
  }
  seen.read |= bits[k];
  int64_t v = 0;
  bool ok = false;
  switch (bits[k]) {
    case kPrefill:
      if ((ok = read_count(index, key, kMaxTokens, v))) turn.prefill_tokens = static_cast<int32_t>(v);
      break;
    case kGen:
      if ((ok = read_count(index, key, kMaxTokens, v))) turn.gen_tokens = static_cast<int32_t>(v);
      break;
    case kObs:
      if ((ok = read_count(index, key, kMaxTokens, v))) turn.obs_tokens = static_cast<int32_t>(v);
      break;
    case kTool:
      ok = read_tool(index, turn.tool);
      break;
    case kLatency:
      ok = read_seconds(index, key, turn.tool_latency);
      break;
  }
  if (!ok) seen.invalid |= bits[k];
  return !failed_;
}

bool LineParser::read_turn(int index, Turn& turn) {
  turn = Turn{};
  if (at_end() || *p_ != '{') {
    const std::string got = describe_and_skip();
    if (!failed_) value_error(index, "", "expected a turn object, got " + got);
    return !failed_;
  }
  KeysSeen seen;
  const bool ok = read_members(turn_keys(), [&](size_t k, std::string_view key) {
    return read_turn_member(index, k, key, turn, seen);
  });
  if (!ok) return false;
  // A misspelt key already reported as unknown is not reported again as missing.
  const uint32_t present = seen.read | seen.suggested;
  if (!(present & kPrefill)) value_error(index, "", "missing required key \"prefill_tokens\"");
  if (!(present & kGen)) value_error(index, "", "missing required key \"gen_tokens\"");
  // The first turn's prefill is the prompt: a trajectory without one is nothing a rollout runs.
  if (index == 0 && (seen.read & kPrefill) && !(seen.invalid & kPrefill) && turn.prefill_tokens == 0)
    value_error(index, "prefill_tokens", "the first turn's prefill is the prompt, so at least 1 token; got 0");
  if (turn.tool == kNoTool && turn.tool_latency > SimTime::zero() && !(seen.invalid & kTool))
    value_error(index, "tool_latency_s", "a turn without a tool has no tool latency, got " +
                                             format_seconds(turn.tool_latency) + " s",
                "name the tool in \"tool\", or set the latency to 0");
  return true;
}

bool LineParser::read_turns(std::vector<Turn>& turns) {
  if (at_end() || *p_ != '[') {
    const std::string got = describe_and_skip();
    if (!failed_) value_error(-1, "turns", "expected an array of turns, got " + got);
    return !failed_;
  }
  ++p_;
  skip_space();
  if (!at_end() && *p_ == ']') {
    ++p_;
    value_error(-1, "turns", "expected at least one turn, got an empty array");
    return true;
  }
  for (bool more = true; more;) {
    skip_space();
    Turn t;
    if (!read_turn(static_cast<int>(turns.size()), t)) return false;
    turns.push_back(t);
    if (!next_member(']', more)) return false;
  }
  return true;
}

bool LineParser::read_trajectory_member(size_t k, std::string_view key, TrajectoryInfo& info,
                                        std::vector<Turn>& turns, KeysSeen& seen) {
  static const uint32_t bits[] = {kStep, kPromptId, kSample, kTurns, kTruncated};
  const auto& keys = trajectory_keys().names;
  if (k == keys.size()) {
    const size_t guess = report_unknown_key(-1, key, keys);
    if (guess < keys.size()) seen.suggested |= bits[guess];
    return skip_value(0);
  }
  if (seen.read & bits[k]) {
    value_error(-1, key, "duplicate key " + parse::quote(key));
    return skip_value(0);
  }
  seen.read |= bits[k];
  int64_t v = 0;
  switch (bits[k]) {
    case kStep:
      if (read_count(-1, key, kMaxStep, v)) info.step = static_cast<int32_t>(v);
      break;
    case kPromptId:
      if (read_count(-1, key, kMaxPromptId, v)) info.prompt_id = v;
      break;
    case kSample:
      if (read_count(-1, key, kMaxStep, v)) info.sample = static_cast<int32_t>(v);
      break;
    case kTurns:
      read_turns(turns);
      break;
    case kTruncated:
      read_bool(key, info.truncated);
      break;
  }
  return !failed_;
}

bool LineParser::parse(std::string_view line, TrajectoryInfo& info, std::vector<Turn>& turns,
                       std::vector<LineProblem>& problems) {
  begin_ = p_ = line.data();
  end_ = begin_ + line.size();
  problems_ = &problems;
  failed_ = value_errors_ = ended_early_ = false;
  info = TrajectoryInfo{};
  turns.clear();
  skip_space();
  if (at_end() || *p_ != '{') {
    syntax_error("unexpected " + describe_char() + "; expected a trajectory object");
    return false;
  }
  KeysSeen seen;
  const bool ok = read_members(trajectory_keys(), [&](size_t k, std::string_view key) {
    return read_trajectory_member(k, key, info, turns, seen);
  });
  if (!ok) return false;
  skip_space();
  if (!at_end()) {
    syntax_error("unexpected " + describe_char() + " after the end of the trajectory object",
                 "put one trajectory per line");
    return false;
  }
  const auto& keys = trajectory_keys().names;
  static const uint32_t required[] = {kStep, kPromptId, kSample, kTurns};
  for (size_t k = 0; k < 4; ++k)
    if (!((seen.read | seen.suggested) & required[k]))
      value_error(-1, "", "missing required key " + parse::quote(keys[k]));
  return !value_errors_;
}

}  // namespace arlsim::trace
