// The ListObjectsV2 and error-body scanner (s3_list.h).
#include "remote/s3_list.h"

#include "remote/text.h"

#include <mploader/errors.h>

#include <cctype>
#include <stdexcept>

namespace mploader::remote::detail {
namespace {

// The text of the first <tag>...</tag> in [from, to) of `xml`; nullopt when absent.
std::optional<std::string> element(const std::string& xml, const std::string& tag, size_t from,
                                   size_t to) {
  const std::string open = "<" + tag + ">", close = "</" + tag + ">";
  const size_t start = xml.find(open, from);
  if (start == std::string::npos || start >= to) return std::nullopt;
  const size_t body = start + open.size();
  const size_t end = xml.find(close, body);
  if (end == std::string::npos || end > to) return std::nullopt;
  return xml.substr(body, end - body);
}

void append_utf8(std::string& out, unsigned long code) {
  if (code < 0x80) {
    out.push_back(static_cast<char>(code));
  } else if (code < 0x800) {
    out.push_back(static_cast<char>(0xc0 | (code >> 6)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
  } else if (code < 0x10000) {
    out.push_back(static_cast<char>(0xe0 | (code >> 12)));
    out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
  } else {
    out.push_back(static_cast<char>(0xf0 | ((code >> 18) & 0x07)));
    out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3f)));
    out.push_back(static_cast<char>(0x80 | (code & 0x3f)));
  }
}

// XML's five named entities and numeric references; anything else is kept as it is.
std::string unescaped(const std::string& s) {
  static const std::pair<const char*, char> named[] = {
      {"amp;", '&'}, {"lt;", '<'}, {"gt;", '>'}, {"quot;", '"'}, {"apos;", '\''}};
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      out.push_back(s[i]);
      continue;
    }
    bool done = false;
    for (const auto& [name, c] : named) {
      if (s.compare(i + 1, std::char_traits<char>::length(name), name) == 0) {
        out.push_back(c);
        i += std::char_traits<char>::length(name);
        done = true;
        break;
      }
    }
    const size_t semi = s.find(';', i);
    if (!done && i + 2 < s.size() && s[i + 1] == '#' && semi != std::string::npos &&
        semi - i <= 10) {
      const bool hex = s[i + 2] == 'x' || s[i + 2] == 'X';
      const std::string digits = s.substr(i + (hex ? 3 : 2), semi - i - (hex ? 3 : 2));
      bool ok = !digits.empty();
      for (char c : digits) {
        ok = ok && (hex ? std::isxdigit(static_cast<unsigned char>(c)) != 0
                        : std::isdigit(static_cast<unsigned char>(c)) != 0);
      }
      const unsigned long code = ok ? std::stoul(digits, nullptr, hex ? 16 : 10) : 0;
      // Surrogates (U+D800..U+DFFF) are no characters: kept as written, not made bad UTF-8.
      if (ok && code > 0 && code <= 0x10ffff && (code < 0xd800 || code > 0xdfff)) {
        append_utf8(out, code);
        i = semi;
        done = true;
      }
    }
    if (!done) out.push_back('&');
  }
  return out;
}

[[noreturn]] void bad(const std::string& why) {
  throw Error("the store's object listing (ListObjectsV2) " + why +
              ": is the endpoint an S3-compatible store?");
}

}  // namespace

S3ListPage parse_list_objects_v2(const std::string& xml) {
  if (xml.find("<ListBucketResult") == std::string::npos) bad("is no <ListBucketResult>");
  S3ListPage page;
  for (size_t at = 0; (at = xml.find("<Contents>", at)) != std::string::npos;) {
    const size_t end = xml.find("</Contents>", at);
    if (end == std::string::npos) bad("has a <Contents> without its end");
    const auto key = element(xml, "Key", at, end);
    const auto size = element(xml, "Size", at, end);
    if (!key || key->empty()) bad("has an object without a <Key>");
    S3Object o;
    o.key = unescaped(*key);
    o.size = size ? parse_count(*size) : -1;
    if (o.size < 0) bad("gives object \"" + o.key + "\" no size that is a whole number");
    o.etag = unescaped(element(xml, "ETag", at, end).value_or(""));
    page.objects.push_back(std::move(o));
    at = end;
  }
  page.truncated = element(xml, "IsTruncated", 0, xml.size()).value_or("") == "true";
  if (page.truncated) {
    page.next_token = unescaped(element(xml, "NextContinuationToken", 0, xml.size())
                                    .value_or(""));
    if (page.next_token.empty()) bad("is cut (IsTruncated) but gives no NextContinuationToken");
  }
  return page;
}

std::optional<S3Error> parse_s3_error(const std::string& xml) {
  const size_t start = xml.find("<Error>");
  if (start == std::string::npos) return std::nullopt;
  const size_t end = xml.find("</Error>", start);
  const size_t to = end == std::string::npos ? xml.size() : end;
  const auto code = element(xml, "Code", start, to);
  if (!code) return std::nullopt;
  return S3Error{unescaped(*code), unescaped(element(xml, "Message", start, to).value_or(""))};
}

}  // namespace mploader::remote::detail
