#include "sim/parse/json.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>

#include "sim/parse/diagnostics.h"
#include "sim/parse/utf8.h"

namespace arlsim::parse {

Value::Value(const Value& other)
    : kind_(other.kind_),
      boolean_(other.boolean_),
      is_integer_literal_(other.is_integer_literal_),
      fits_int64_(other.fits_int64_),
      unresolved_(other.unresolved_),
      number_(other.number_),
      integer_(other.integer_),
      text_(other.text_),
      items_(other.items_),
      file_(other.file_),
      pos_(other.pos_) {
  members_.reserve(other.members_.size());
  for (const auto& m : other.members_)
    members_.push_back({m.key, m.key_pos, std::make_unique<Value>(*m.value), m.key_file});
}

Value& Value::operator=(const Value& other) {
  if (this != &other) {
    Value copy(other);
    *this = std::move(copy);
  }
  return *this;
}

Value Value::make_bool(bool b) {
  Value v;
  v.kind_ = Kind::boolean;
  v.boolean_ = b;
  return v;
}

Value Value::make_string(std::string s) {
  Value v;
  v.kind_ = Kind::string;
  v.text_ = std::move(s);
  return v;
}

Value Value::make_object() {
  Value v;
  v.kind_ = Kind::object;
  return v;
}

Value Value::make_array() {
  Value v;
  v.kind_ = Kind::array;
  return v;
}

Value Value::make_number(double d) {
  Value v;
  v.kind_ = Kind::number;
  v.number_ = d;
  if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.2e18) {
    v.is_integer_literal_ = true;
    v.fits_int64_ = true;
    v.integer_ = static_cast<int64_t>(d);
    v.text_ = std::to_string(v.integer_);
  } else {
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
    v.text_ = ec == std::errc() ? std::string(buf, end) : std::string("?");
  }
  return v;
}

const Value* Value::find(std::string_view key) const {
  const Member* m = find_member(key);
  return m ? m->value.get() : nullptr;
}

Value* Value::find(std::string_view key) {
  for (auto& m : members_)
    if (m.key == key) return m.value.get();
  return nullptr;
}

const Member* Value::find_member(std::string_view key) const {
  for (const auto& m : members_)
    if (m.key == key) return &m;
  return nullptr;
}

void Value::set(std::string key, Value v) {
  for (auto& m : members_)
    if (m.key == key) {
      m.key_file = v.file();
      *m.value = std::move(v);
      return;
    }
  const SourcePos key_pos = v.pos();
  auto file = v.file();
  members_.push_back({std::move(key), key_pos, std::make_unique<Value>(std::move(v)), std::move(file)});
}

bool Value::erase(std::string_view key) {
  for (auto it = members_.begin(); it != members_.end(); ++it) {
    if (it->key == key) {
      members_.erase(it);
      return true;
    }
  }
  return false;
}

void Value::set_origin(std::shared_ptr<const SourceFile> file, SourcePos pos) {
  file_ = std::move(file);
  pos_ = pos;
}

void Value::set_origin_recursive(const std::shared_ptr<const SourceFile>& file, SourcePos pos) {
  set_origin(file, pos);
  for (auto& item : items_) item.set_origin_recursive(file, pos);
  for (auto& m : members_) {
    m.key_pos = pos;
    m.key_file = file;
    m.value->set_origin_recursive(file, pos);
  }
}

std::string Value::describe() const {
  switch (kind_) {
    case Kind::null: return "null";
    case Kind::boolean: return boolean_ ? "true" : "false";
    case Kind::number: return "the number " + text_;
    case Kind::string: {
      std::string s = text_.size() > 40 ? text_.substr(0, 40) + "..." : text_;
      return "the string " + quote(s);
    }
    case Kind::array: return "an array";
    case Kind::object: return "an object";
  }
  return "a value";
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          static const char* hex = "0123456789abcdef";
          out += "\\x";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string pointer_append(std::string_view base, std::string_view key) {
  std::string out(base);
  out += '/';
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

std::string pointer_append(std::string_view base, size_t index) {
  return std::string(base) + "/" + std::to_string(index);
}

bool pointer_split(std::string_view pointer, std::vector<std::string>& tokens) {
  tokens.clear();
  if (pointer.empty()) return true;
  if (pointer[0] != '/') return false;
  std::string cur;
  for (size_t i = 1; i <= pointer.size(); ++i) {
    if (i == pointer.size() || pointer[i] == '/') {
      tokens.push_back(cur);
      cur.clear();
      continue;
    }
    if (pointer[i] == '~') {
      if (i + 1 >= pointer.size() || (pointer[i + 1] != '0' && pointer[i + 1] != '1')) return false;
      cur += pointer[i + 1] == '0' ? '~' : '/';
      ++i;
      continue;
    }
    cur += pointer[i];
  }
  return true;
}

// Recursive-descent parser over a byte buffer; tracks line and column as it goes.
class Parser {
 public:
  Parser(std::string_view text, const std::shared_ptr<const SourceFile>& file, Diagnostics& diag,
         const ParseLimits& limits)
      : text_(text), file_(file), diag_(diag), limits_(limits) {}

  Value parse_document() {
    skip_space();
    if (failed_) return {};
    if (at_end()) {
      fail(text_.empty() ? "the file is empty; expected a JSON object"
                         : "the file holds only whitespace or comments; expected a JSON object");
      return {};
    }
    Value v = parse_value(0);
    if (failed_) return {};
    skip_space();
    if (!failed_ && !at_end()) fail("unexpected " + describe_char() + " after the end of the JSON document");
    return failed_ ? Value() : v;
  }

  bool failed() const { return failed_; }

 private:
  bool at_end() const { return i_ >= text_.size(); }
  char peek() const { return text_[i_]; }
  SourcePos here() const { return {line_, column_}; }

  void advance() {
    const unsigned char c = static_cast<unsigned char>(text_[i_++]);
    if (c == '\n') {
      ++line_;
      column_ = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++column_;  // count characters, not UTF-8 continuation bytes
    }
  }

  void fail(std::string message, std::string hint = {}) { fail_at(here(), std::move(message), std::move(hint)); }
  void fail_at(SourcePos pos, std::string message, std::string hint = {}) {
    if (failed_) return;
    failed_ = true;
    diag_.error_in_file(file_, pos, std::move(message), std::move(hint));
  }

  std::string describe_char() const {
    if (at_end()) return "end of file";
    const unsigned char c = static_cast<unsigned char>(peek());
    if (c >= 0x20 && c < 0x7f) return std::string("character '") + static_cast<char>(c) + "'";
    static const char* hex = "0123456789abcdef";
    return std::string("byte 0x") + hex[c >> 4] + hex[c & 15];
  }

  void skip_space() {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else if (c == '/' && i_ + 1 < text_.size() && text_[i_ + 1] == '/') {
        while (!at_end() && peek() != '\n') advance();
      } else if (c == '/' && i_ + 1 < text_.size() && text_[i_ + 1] == '*') {
        const SourcePos start = here();
        advance();
        advance();
        while (!at_end() && !(peek() == '*' && i_ + 1 < text_.size() && text_[i_ + 1] == '/')) advance();
        if (at_end()) {
          fail_at(start, "unterminated /* comment");
          return;
        }
        advance();
        advance();
      } else {
        return;
      }
    }
  }

  bool match_word(std::string_view w) { return text_.substr(i_, w.size()) == w; }

  Value parse_value(int depth) {
    if (depth > limits_.max_depth) {
      fail("nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
      return {};
    }
    if (at_end()) {
      fail("unexpected end of file; expected a value");
      return {};
    }
    const SourcePos start = here();
    Value v;
    const char c = peek();
    if (c == '{') {
      v = parse_object(depth);
    } else if (c == '[') {
      v = parse_array(depth);
    } else if (c == '"') {
      v.kind_ = Value::Kind::string;
      v.text_ = parse_string();
    } else if (c == '-' || (c >= '0' && c <= '9')) {
      v = parse_number();
    } else if (match_word("true")) {
      v = Value::make_bool(true);
      for (int k = 0; k < 4; ++k) advance();
    } else if (match_word("false")) {
      v = Value::make_bool(false);
      for (int k = 0; k < 5; ++k) advance();
    } else if (match_word("null")) {
      for (int k = 0; k < 4; ++k) advance();
    } else if (match_word("NaN") || match_word("Infinity") || match_word("+Infinity")) {
      fail("NaN and Infinity are not valid JSON numbers", "write a finite number");
    } else if (c == '\'') {
      fail("strings must be in double quotes, not single quotes");
    } else if (c == '}' || c == ']' || c == ',') {
      fail("unexpected " + describe_char() + "; expected a value");
    } else {
      fail("unexpected " + describe_char() + "; expected a value");
    }
    v.file_ = file_;
    v.pos_ = start;
    return v;
  }

  Value parse_object(int depth) {
    Value obj = Value::make_object();
    advance();  // '{'
    skip_space();
    if (!at_end() && peek() == '}') {
      advance();
      return obj;
    }
    while (!failed_) {
      skip_space();
      if (at_end()) {
        fail("unexpected end of file inside an object; expected a key");
        break;
      }
      if (peek() == '}') {
        fail("trailing comma before '}'", "remove the last comma");
        break;
      }
      if (peek() != '"') {
        fail("unexpected " + describe_char() + "; expected a key in double quotes");
        break;
      }
      const SourcePos key_pos = here();
      std::string key = parse_string();
      if (failed_) break;
      skip_space();
      if (at_end() || peek() != ':') {
        fail("expected ':' after the key " + quote(key) + ", found " + describe_char());
        break;
      }
      advance();
      skip_space();
      Value v = parse_value(depth + 1);
      if (failed_) break;
      if (const Member* prev = obj.find_member(key)) {
        diag_.error_in_file(file_, key_pos,
                            "duplicate key " + quote(key) + " (first defined at line " +
                                std::to_string(prev->key_pos.line) + ")");
      } else {
        obj.members_.push_back({std::move(key), key_pos, std::make_unique<Value>(std::move(v)), file_});
      }
      skip_space();
      if (at_end()) {
        fail("unexpected end of file inside an object; expected ',' or '}'");
        break;
      }
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == '}') {
        advance();
        break;
      }
      fail("unexpected " + describe_char() + " in an object; expected ',' or '}'");
    }
    return obj;
  }

  Value parse_array(int depth) {
    Value arr = Value::make_array();
    advance();  // '['
    skip_space();
    if (!at_end() && peek() == ']') {
      advance();
      return arr;
    }
    while (!failed_) {
      skip_space();
      if (!at_end() && peek() == ']') {
        fail("trailing comma before ']'", "remove the last comma");
        break;
      }
      Value v = parse_value(depth + 1);
      if (failed_) break;
      arr.items_.push_back(std::move(v));
      skip_space();
      if (at_end()) {
        fail("unexpected end of file inside an array; expected ',' or ']'");
        break;
      }
      if (peek() == ',') {
        advance();
        continue;
      }
      if (peek() == ']') {
        advance();
        break;
      }
      fail("unexpected " + describe_char() + " in an array; expected ',' or ']'");
    }
    return arr;
  }

  bool parse_hex4(uint32_t& out) {
    out = 0;
    for (int k = 0; k < 4; ++k) {
      if (at_end()) return false;
      const char h = peek();
      out <<= 4;
      if (h >= '0' && h <= '9') out |= static_cast<uint32_t>(h - '0');
      else if (h >= 'a' && h <= 'f') out |= static_cast<uint32_t>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') out |= static_cast<uint32_t>(h - 'A' + 10);
      else return false;
      advance();
    }
    return true;
  }

  // Length of a valid UTF-8 sequence starting at i_, or 0.
  size_t utf8_length() const {
    return parse::utf8_length(reinterpret_cast<const unsigned char*>(text_.data()) + i_, text_.size() - i_);
  }

  std::string parse_string() {
    const SourcePos start = here();
    advance();  // opening quote
    std::string out;
    while (true) {
      if (at_end()) {
        fail_at(start, "unterminated string");
        return out;
      }
      const unsigned char c = static_cast<unsigned char>(peek());
      if (c == '"') {
        advance();
        return out;
      }
      if (c == '\n') {
        fail_at(start, "unterminated string (a line break before the closing quote)");
        return out;
      }
      if (c < 0x20) {
        fail("control " + describe_char() + " inside a string", "escape it, e.g. \\t or \\u0009");
        return out;
      }
      if (c == '\\') {
        advance();
        if (at_end()) continue;
        const char e = peek();
        const SourcePos esc = here();
        advance();
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            uint32_t cp = 0;
            if (!parse_hex4(cp)) {
              fail_at(esc, "invalid \\u escape; expected four hexadecimal digits");
              return out;
            }
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              uint32_t lo = 0;
              if (!match_word("\\u")) {
                fail_at(esc, "unpaired UTF-16 surrogate in \\u escape");
                return out;
              }
              advance();
              advance();
              if (!parse_hex4(lo) || lo < 0xDC00 || lo > 0xDFFF) {
                fail_at(esc, "unpaired UTF-16 surrogate in \\u escape");
                return out;
              }
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              fail_at(esc, "unpaired UTF-16 surrogate in \\u escape");
              return out;
            }
            append_utf8(out, cp);
            break;
          }
          default:
            fail_at(esc, std::string("invalid escape '\\") + (e >= 0x20 && e < 0x7f ? std::string(1, e) : "?") + "'");
            return out;
        }
        continue;
      }
      if (c < 0x80) {
        out += static_cast<char>(c);
        advance();
        continue;
      }
      const size_t n = utf8_length();
      if (n == 0) {
        fail("invalid UTF-8 " + describe_char() + " inside a string");
        return out;
      }
      out.append(text_.substr(i_, n));
      for (size_t k = 0; k < n; ++k) advance();
    }
  }

  Value parse_number() {
    const size_t begin = i_;
    const SourcePos start = here();
    bool integer = true;
    if (peek() == '-') advance();
    if (at_end() || !(peek() >= '0' && peek() <= '9')) {
      if (match_word("Infinity")) fail("NaN and Infinity are not valid JSON numbers", "write a finite number");
      else fail("invalid number; expected a digit after '-'");
      return {};
    }
    if (peek() == '0') {
      advance();
      if (!at_end() && peek() >= '0' && peek() <= '9') {
        fail_at(start, "invalid number: leading zeros are not allowed");
        return {};
      }
    } else {
      while (!at_end() && peek() >= '0' && peek() <= '9') advance();
    }
    if (!at_end() && peek() == '.') {
      integer = false;
      advance();
      if (at_end() || !(peek() >= '0' && peek() <= '9')) {
        fail("invalid number: expected a digit after '.'");
        return {};
      }
      while (!at_end() && peek() >= '0' && peek() <= '9') advance();
    }
    if (!at_end() && (peek() == 'e' || peek() == 'E')) {
      integer = false;
      advance();
      if (!at_end() && (peek() == '+' || peek() == '-')) advance();
      if (at_end() || !(peek() >= '0' && peek() <= '9')) {
        fail("invalid number: expected a digit in the exponent");
        return {};
      }
      while (!at_end() && peek() >= '0' && peek() <= '9') advance();
    }
    Value v;
    v.kind_ = Value::Kind::number;
    v.text_ = std::string(text_.substr(begin, i_ - begin));
    v.is_integer_literal_ = integer;
    if (integer) {
      const char* first = v.text_.data();
      const char* last = first + v.text_.size();
      auto [ptr, ec] = std::from_chars(first, last, v.integer_);
      v.fits_int64_ = ec == std::errc() && ptr == last;
    }
    v.number_ = std::strtod(v.text_.c_str(), nullptr);
    if (!std::isfinite(v.number_)) {
      diag_.error_in_file(file_, start, "number " + v.text_ + " is out of range");
      v.number_ = 0;
      v.unresolved_ = true;
    }
    return v;
  }

  std::string_view text_;
  std::shared_ptr<const SourceFile> file_;
  Diagnostics& diag_;
  ParseLimits limits_;
  size_t i_ = 0;
  uint32_t line_ = 1;
  uint32_t column_ = 1;
  bool failed_ = false;
};

Value parse_json(std::string_view text, const std::shared_ptr<const SourceFile>& file, Diagnostics& diag,
                 const ParseLimits& limits) {
  if (text.size() > limits.max_bytes) {
    diag.error_in_file(file, {},
                       "the file is " + std::to_string(text.size() >> 20) + " MiB; input files of this kind are limited to " +
                           std::to_string(limits.max_bytes >> 20) + " MiB");
    return {};
  }
  // A UTF-8 byte order mark is tolerated.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  Parser p(text, file, diag, limits);
  return p.parse_document();
}

Value parse_json_or_string(std::string_view text, const std::shared_ptr<const SourceFile>& file) {
  Diagnostics scratch;
  Value v = parse_json(text, file, scratch);
  if (scratch.has_errors()) {
    v = Value::make_string(std::string(text));
    v.set_origin(file, {});
  }
  return v;
}

}  // namespace arlsim::parse
