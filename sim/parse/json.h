// A JSON document tree that remembers where every value came from (file, line, column), so that
// each diagnostic can point at the offending text.
//
// Why not nlohmann::json for input: the Debian 12 version (3.11.2) does not report positions of
// values and silently keeps the last of duplicate keys; both are needed for diagnostics "to the
// letter". nlohmann::json is still used to write JSON output. The accepted syntax is RFC 8259 plus
// // and /* */ comments; NaN, Infinity, trailing commas and duplicate keys are reported.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace arlsim::parse {

class Diagnostics;

// Where a file came from: its name as shown in messages.
struct SourceFile {
  std::string display_name;  // path as the user wrote it, or "preset:<kind>/<name>"
  std::string directory;     // directory for resolving relative references ("" for presets)
  bool is_preset = false;
};

struct SourcePos {
  uint32_t line = 0;    // 1-based; 0 when unknown
  uint32_t column = 0;  // 1-based, in characters
};

class Value;

struct Member {
  std::string key;
  SourcePos key_pos;
  std::unique_ptr<Value> value;  // indirection keeps Value small and Member movable
  // The file that last wrote the key (a merge patch's, an override's): a reference a user's file
  // names ("gpu": "h200-sxm") is the user's although what it loads is a preset's.
  std::shared_ptr<const SourceFile> key_file;
};

class Value {
 public:
  enum class Kind { null, boolean, number, string, array, object };

  Value() = default;
  Value(const Value& other);
  Value& operator=(const Value& other);
  Value(Value&&) noexcept = default;
  Value& operator=(Value&&) noexcept = default;
  ~Value() = default;

  static Value make_null() { return Value(); }
  static Value make_bool(bool b);
  static Value make_string(std::string s);
  static Value make_object();
  static Value make_array();
  static Value make_number(double d);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::null; }
  bool is_bool() const { return kind_ == Kind::boolean; }
  bool is_number() const { return kind_ == Kind::number; }
  bool is_string() const { return kind_ == Kind::string; }
  bool is_array() const { return kind_ == Kind::array; }
  bool is_object() const { return kind_ == Kind::object; }

  bool as_bool() const { return boolean_; }
  double as_double() const { return number_; }
  // True when the literal is an integer (no fraction or exponent) that fits in 64 bits.
  bool is_int64() const { return is_integer_literal_ && fits_int64_; }
  bool is_integer_literal() const { return is_integer_literal_; }
  int64_t as_int64() const { return integer_; }
  const std::string& as_string() const { return text_; }
  // The number as written in the source ("1e400", "18446744073709551616").
  const std::string& literal() const { return text_; }

  const std::vector<Value>& items() const { return items_; }
  std::vector<Value>& items() { return items_; }
  const std::vector<Member>& members() const { return members_; }
  std::vector<Member>& members() { return members_; }

  const Value* find(std::string_view key) const;
  Value* find(std::string_view key);
  const Member* find_member(std::string_view key) const;
  // Sets (or replaces) a member, keeping its position in the order of keys.
  void set(std::string key, Value v);
  bool erase(std::string_view key);
  void push_back(Value v) { items_.push_back(std::move(v)); }

  const std::shared_ptr<const SourceFile>& file() const { return file_; }
  SourcePos pos() const { return pos_; }
  void set_origin(std::shared_ptr<const SourceFile> file, SourcePos pos);
  // Sets the origin of this value and every value below it.
  void set_origin_recursive(const std::shared_ptr<const SourceFile>& file, SourcePos pos);

  // A reference that could not be loaded (already reported): readers stay silent about it.
  bool unresolved() const { return unresolved_; }
  void mark_unresolved() { unresolved_ = true; }

  // A short description for messages: "an object", "the string \"x\"", "the number 3".
  std::string describe() const;

 private:
  friend class Parser;

  Kind kind_ = Kind::null;
  bool boolean_ = false;
  bool is_integer_literal_ = false;
  bool fits_int64_ = false;
  bool unresolved_ = false;
  double number_ = 0;
  int64_t integer_ = 0;
  std::string text_;
  std::vector<Value> items_;
  std::vector<Member> members_;
  std::shared_ptr<const SourceFile> file_;
  SourcePos pos_;
};

struct ParseLimits {
  size_t max_bytes = 16u << 20;  // input specs are small; traces have their own reader
  int max_depth = 256;
};

// Parses `text` as the contents of `file`. Syntax errors end the parse (one diagnostic, at the
// exact position); duplicate keys and out-of-range numbers are reported and parsing continues.
// Returns a null value with an error reported when the text is not a JSON document.
Value parse_json(std::string_view text, const std::shared_ptr<const SourceFile>& file,
                 Diagnostics& diag, const ParseLimits& limits = {});

// Parses a value given on the command line (e.g. the right side of --set key=value): JSON when it
// parses as JSON, otherwise the text as a string.
Value parse_json_or_string(std::string_view text, const std::shared_ptr<const SourceFile>& file);

// JSON pointer (RFC 6901) helpers.
std::string pointer_append(std::string_view base, std::string_view key);
std::string pointer_append(std::string_view base, size_t index);
// Splits "/a/b~1c" into {"a", "b/c"}; returns false for a malformed pointer.
bool pointer_split(std::string_view pointer, std::vector<std::string>& tokens);

// Quotes a string for a message, escaping control and non-printable characters.
std::string quote(std::string_view s);

}  // namespace arlsim::parse
