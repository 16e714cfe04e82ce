// A JSON parser specialised for one trajectory line of a trace. The general reader in
// sim/parse/json.h builds a tree with positions for every value, which is right for hand-written
// specs but allocates per value; traces have millions of lines of one fixed schema, so this parser
// reads the fields straight into a TrajectoryInfo and a vector of Turns. It accepts exactly
// RFC 8259 JSON (no comments) and reports every problem of a line with its JSON pointer; after a
// syntax error the rest of the line is not read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/trace/trace.h"

namespace arlsim::trace {

struct LineProblem {
  bool syntax = false;  // a syntax error: reported with the column of `offset`
  size_t offset = 0;    // byte offset in the line
  std::string pointer;  // JSON pointer of the field ("" for the line as a whole)
  std::string message;
  std::string hint;
};

// Tool-kind names in order of first use.
class ToolTable {
 public:
  // The index of `name`, added when new; kNoTool when the table is full.
  int16_t intern(std::string_view name);
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
  int16_t last_ = kNoTool;  // traces use few kinds, often the same one turn after turn
};

class LineParser {
 public:
  struct KeySet;

  explicit LineParser(ToolTable& tools) : tools_(tools) {}

  // Parses `line` (without its line break). Returns true when it is a valid trajectory; otherwise
  // appends at least one problem. Tool names are interned into the table as they are read.
  bool parse(std::string_view line, TrajectoryInfo& info, std::vector<Turn>& turns,
             std::vector<LineProblem>& problems);
  // True when the last parse failed because the line ended inside the JSON value, which is what a
  // file cut off in the middle of a write looks like.
  bool ended_early() const { return ended_early_; }

 private:
  struct KeysSeen {
    uint32_t read = 0;       // keys read (bits in the order of the key list)
    uint32_t suggested = 0;  // keys an unknown key was taken for (not reported missing too)
    uint32_t invalid = 0;    // keys whose value was reported (no cross-checks on them)
  };

  struct Number {
    std::string_view text;
    bool integer = true;
    bool negative = false;
  };

  bool at_end() const { return p_ >= end_; }
  void skip_space();
  size_t offset() const { return static_cast<size_t>(p_ - begin_); }
  std::string describe_char() const;
  void syntax_error(std::string message, std::string hint = {});
  void syntax_error_at(size_t offset, std::string message, std::string hint = {});
  void value_error(int turn, std::string_view key, std::string message, std::string hint = {});
  static std::string pointer(int turn, std::string_view key);

  bool read_string(std::string_view& out);
  bool read_hex4(uint32_t& cp);
  bool read_escape(std::string& out);
  bool scan_number(Number& n);
  bool skip_value(int depth);
  std::string describe_and_skip();
  bool expect_colon(std::string_view key);
  // After a member: consumes ',' (returns true, more members follow) or the closing `close`.
  bool next_member(char close, bool& more);

  bool read_count(int turn, std::string_view key, int64_t max, int64_t& out);
  bool read_seconds(int turn, std::string_view key, SimTime& out);
  bool read_bool(std::string_view key, bool& out);
  bool read_tool(int turn, int16_t& out);
  bool read_turns(std::vector<Turn>& turns);
  bool read_turn(int index, Turn& turn);
  bool read_key(const KeySet& keys, size_t guess, std::string_view& key, size_t& index);
  template <typename F>
  bool read_members(const KeySet& keys, F&& member);
  bool read_turn_member(int index, size_t k, std::string_view key, Turn& turn, KeysSeen& seen);
  bool read_trajectory_member(size_t k, std::string_view key, TrajectoryInfo& info, std::vector<Turn>& turns,
                              KeysSeen& seen);
  // Returns the index of the suggested key (the list's size when none).
  size_t report_unknown_key(int turn, std::string_view key, const std::vector<std::string>& valid);

  ToolTable& tools_;
  const char* begin_ = nullptr;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  std::vector<LineProblem>* problems_ = nullptr;
  bool failed_ = false;        // a syntax error: stop reading the line
  bool value_errors_ = false;  // a field had a bad value: the line is invalid but still read
  bool ended_early_ = false;
  std::string scratch_;        // decoded strings that had escapes
  std::string key_buffer_;     // a key that had escapes, kept while its value is read
};

}  // namespace arlsim::trace
