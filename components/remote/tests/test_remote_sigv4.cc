// The S3 pieces that need no server: SigV4 signatures against AWS's published examples, where
// credentials and the region come from, and the ListObjectsV2 / error-body scanner.
#include "remote/aws_credentials.h"
#include "remote/s3_list.h"
#include "remote/sigv4.h"

#include <catch2/catch.hpp>

#include "components/remote/tests/aws_environment.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace test_remote_sigv4 {

namespace mrd = mploader::remote::detail;
namespace fs = std::filesystem;
using shard_test::AwsEnvironment;

namespace {

const char* const kEmptySha =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

// AWS's example key pair from "Examples: Signature Calculations in AWS Signature Version 4".
mrd::AwsCredentials example_credentials() {
  mrd::AwsCredentials c;
  c.access_key_id = "AKIAIOSFODNN7EXAMPLE";
  c.secret_access_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  return c;
}

std::string header(const mrd::SignedRequest& r, const std::string& name) {
  for (const std::string& h : r.headers) {
    if (h.compare(0, name.size() + 2, name + ": ") == 0) return h.substr(name.size() + 2);
  }
  return "";
}

// A fresh HOME with an .aws folder, removed at the end of the test.
class TempHome {
 public:
  TempHome() {
    std::string pattern = (fs::temp_directory_path() / "mploader-aws-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = pattern;
    fs::create_directories(dir_ / ".aws");
  }
  ~TempHome() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string path() const { return dir_.string(); }
  std::string write(const std::string& name, const std::string& text) const {
    const fs::path p = dir_ / ".aws" / name;
    std::ofstream(p) << text;
    return p.string();
  }

 private:
  fs::path dir_;
};

const char* const kCredentialsFile =
    "# the developer's keys\n"
    "[default]\n"
    "aws_access_key_id = AKIDDEFAULT\n"
    "aws_secret_access_key=secret-default\n"
    "\n"
    "; a second profile, with padding and a session token\n"
    "  [ dev ]  \n"
    "  aws_access_key_id   =   AKIDDEV  \n"
    "  aws_secret_access_key = secret/dev=  \n"
    "  aws_session_token = token-dev\n"
    "[broken]\n"
    "aws_access_key_id = AKIDBROKEN\n";

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const mploader::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("sigv4: AWS's GET Object example with a Range header signs as published", "[remote]") {
  const auto r = mrd::sign_v4({"GET", "examplebucket.s3.amazonaws.com", "/test.txt", {},
                               {{"range", "bytes=0-9"}}, "20130524T000000Z", kEmptySha},
                              example_credentials(), "us-east-1", "s3");
  CHECK(r.canonical_request ==
        std::string("GET\n/test.txt\n\n"
                    "host:examplebucket.s3.amazonaws.com\nrange:bytes=0-9\n"
                    "x-amz-content-sha256:") + kEmptySha + "\n"
        "x-amz-date:20130524T000000Z\n\n"
        "host;range;x-amz-content-sha256;x-amz-date\n" + kEmptySha);
  CHECK(mrd::sha256_hex(r.canonical_request) ==
        "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
  CHECK(r.signature == "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  CHECK(header(r, "Authorization") ==
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
  CHECK(header(r, "x-amz-date") == "20130524T000000Z");
  CHECK(header(r, "x-amz-content-sha256") == kEmptySha);
  CHECK(header(r, "x-amz-security-token").empty());
  CHECK(r.headers.size() == 3);
}

TEST_CASE("sigv4: AWS's GET Bucket example sorts and encodes its query", "[remote]") {
  // Given out of order: the canonical query sorts them.
  const auto r = mrd::sign_v4({"GET", "examplebucket.s3.amazonaws.com", "/",
                               {{"prefix", "J"}, {"max-keys", "2"}}, {}, "20130524T000000Z",
                               kEmptySha},
                              example_credentials(), "us-east-1", "s3");
  CHECK(r.canonical_request.rfind("GET\n/\nmax-keys=2&prefix=J\n", 0) == 0);
  CHECK(r.signature == "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7");
  CHECK(header(r, "Authorization").find("SignedHeaders=host;x-amz-content-sha256;x-amz-date,") !=
        std::string::npos);
}

TEST_CASE("sigv4: a session token is sent and signed, and query values are encoded",
          "[remote]") {
  auto creds = example_credentials();
  creds.session_token = "tok/en+=";
  const auto r = mrd::sign_v4(
      {"HEAD", "localhost:9000", "/bucket/key%20x.tar",
       {{"list-type", "2"}, {"prefix", "a b/c"}, {"continuation-token", ""}},
       {{"range", "bytes=0-9"}}, "20240101T120000Z", "UNSIGNED-PAYLOAD"},
      creds, "eu-west-1", "s3");
  CHECK(header(r, "x-amz-security-token") == "tok/en+=");
  CHECK(header(r, "x-amz-content-sha256") == "UNSIGNED-PAYLOAD");
  CHECK(r.headers.size() == 4);
  CHECK(r.canonical_request ==
        "HEAD\n/bucket/key%20x.tar\ncontinuation-token=&list-type=2&prefix=a%20b%2Fc\n"
        "host:localhost:9000\nrange:bytes=0-9\nx-amz-content-sha256:UNSIGNED-PAYLOAD\n"
        "x-amz-date:20240101T120000Z\nx-amz-security-token:tok/en+=\n\n"
        "host;range;x-amz-content-sha256;x-amz-date;x-amz-security-token\nUNSIGNED-PAYLOAD");
  CHECK(header(r, "Authorization").find("/20240101/eu-west-1/s3/aws4_request") !=
        std::string::npos);
  CHECK(r.signature.size() == 64);
}

TEST_CASE("sigv4: uri_encode keeps RFC 3986's unreserved characters only", "[remote]") {
  CHECK(mrd::uri_encode("AZaz09-_.~", true) == "AZaz09-_.~");
  CHECK(mrd::uri_encode("a b+c=d&e", true) == "a%20b%2Bc%3Dd%26e");
  CHECK(mrd::uri_encode("dir/sub dir/x.tar", false) == "dir/sub%20dir/x.tar");
  CHECK(mrd::uri_encode("dir/x", true) == "dir%2Fx");
  CHECK(mrd::uri_encode("\xc3\xa9*", true) == "%C3%A9%2A");
  CHECK(mrd::uri_encode(std::string("a\0b", 3), true) == "a%00b");
  CHECK(mrd::uri_encode("", true).empty());
}

TEST_CASE("sigv4: amz_date_now and sha256_hex have AWS's formats", "[remote]") {
  const std::string now = mrd::amz_date_now();
  REQUIRE(now.size() == 16);
  CHECK(now[8] == 'T');
  CHECK(now[15] == 'Z');
  CHECK(now.rfind("20", 0) == 0);
  CHECK(mrd::sha256_hex("") == kEmptySha);
  CHECK(mrd::sha256_hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("aws credentials: the environment comes first, with its session token",
          "[remote]") {
  AwsEnvironment env;
  TempHome home;
  home.write("credentials", kCredentialsFile);
  env.set("HOME", home.path());
  env.set("AWS_ACCESS_KEY_ID", "AKIDENV");
  env.set("AWS_SECRET_ACCESS_KEY", "secret-env");
  auto c = mrd::resolve_aws_credentials("dev");
  CHECK(c.access_key_id == "AKIDENV");
  CHECK(c.secret_access_key == "secret-env");
  CHECK(c.session_token.empty());
  CHECK(c.source.find("environment") != std::string::npos);
  CHECK(c.source.find("AWS_ACCESS_KEY_ID") != std::string::npos);

  env.set("AWS_SESSION_TOKEN", "token-env");
  CHECK(mrd::resolve_aws_credentials("").session_token == "token-env");

  unsetenv("AWS_SECRET_ACCESS_KEY");
  const std::string m = message_of([] { mrd::resolve_aws_credentials(""); });
  CHECK(m.find("AWS_SECRET_ACCESS_KEY") != std::string::npos);
}

TEST_CASE("aws credentials: the option, AWS_PROFILE or default picks the file's profile",
          "[remote]") {
  AwsEnvironment env;
  TempHome home;
  const std::string file = home.write("credentials", kCredentialsFile);
  env.set("HOME", home.path());

  auto c = mrd::resolve_aws_credentials("");
  CHECK(c.access_key_id == "AKIDDEFAULT");
  CHECK(c.secret_access_key == "secret-default");
  CHECK(c.session_token.empty());
  CHECK(c.source == "profile \"default\" of " + file);

  env.set("AWS_PROFILE", "dev");
  c = mrd::resolve_aws_credentials("");
  CHECK(c.access_key_id == "AKIDDEV");
  CHECK(c.secret_access_key == "secret/dev=");  // '=' inside a value is kept
  CHECK(c.session_token == "token-dev");
  CHECK(c.source == "profile \"dev\" of " + file);

  // The option wins over AWS_PROFILE.
  CHECK(mrd::resolve_aws_credentials("default").access_key_id == "AKIDDEFAULT");
}

TEST_CASE("aws credentials: AWS_SHARED_CREDENTIALS_FILE replaces ~/.aws/credentials",
          "[remote]") {
  AwsEnvironment env;
  TempHome home;
  env.set("HOME", home.path());
  const std::string other = home.write("elsewhere.ini", "[default]\naws_access_key_id=AKIDX\n"
                                                        "aws_secret_access_key=sx\n");
  env.set("AWS_SHARED_CREDENTIALS_FILE", other);
  const auto c = mrd::resolve_aws_credentials("");
  CHECK(c.access_key_id == "AKIDX");
  CHECK(c.source.find(other) != std::string::npos);
}

TEST_CASE("aws credentials: errors name the file, the profile and what to set", "[remote]") {
  AwsEnvironment env;
  TempHome home;
  const std::string file = home.write("credentials", kCredentialsFile);
  env.set("HOME", home.path());

  std::string m = message_of([] { mrd::resolve_aws_credentials("nope"); });
  CHECK(m.find(file) != std::string::npos);
  CHECK(m.find("\"nope\"") != std::string::npos);
  CHECK(m.find("broken, default, dev") != std::string::npos);
  CHECK(m.find("AWS_ACCESS_KEY_ID") != std::string::npos);
  CHECK(m.find("AWS_PROFILE") != std::string::npos);

  // A key id without its secret.
  m = message_of([] { mrd::resolve_aws_credentials("broken"); });
  CHECK(m.find(file) != std::string::npos);
  CHECK(m.find("\"broken\"") != std::string::npos);
  CHECK(m.find("aws_secret_access_key") != std::string::npos);

  // No file at all.
  fs::remove(file);
  m = message_of([] { mrd::resolve_aws_credentials(""); });
  CHECK(m.find(file) != std::string::npos);
  CHECK(m.find("\"default\"") != std::string::npos);
  CHECK(m.find("missing") != std::string::npos);
}

TEST_CASE("aws region: the option, AWS_REGION, AWS_DEFAULT_REGION, the config, us-east-1",
          "[remote]") {
  AwsEnvironment env;
  TempHome home;
  env.set("HOME", home.path());
  CHECK(mrd::resolve_aws_region("") == "us-east-1");

  home.write("config", "[default]\nregion = eu-north-1\n\n[profile dev]\n  region=ap-south-1\n"
                       "[dev]\nregion = wrong-section\n");
  CHECK(mrd::resolve_aws_region("") == "eu-north-1");
  env.set("AWS_PROFILE", "dev");
  CHECK(mrd::resolve_aws_region("") == "ap-south-1");
  env.set("AWS_PROFILE", "absent");
  CHECK(mrd::resolve_aws_region("") == "us-east-1");

  env.set("AWS_DEFAULT_REGION", "us-west-1");
  CHECK(mrd::resolve_aws_region("") == "us-west-1");
  env.set("AWS_REGION", "us-west-2");
  CHECK(mrd::resolve_aws_region("") == "us-west-2");
  CHECK(mrd::resolve_aws_region("sa-east-1") == "sa-east-1");
}

TEST_CASE("s3 list: objects, entities, truncation and the continuation token", "[remote]") {
  const std::string xml =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>bucket</Name><Prefix>data/</Prefix><KeyCount>2</KeyCount>"
      "<IsTruncated>true</IsTruncated>"
      "<Contents><Key>data/a&amp;b &lt;1&gt; &quot;q&quot; &apos;s&apos;.tar</Key>"
      "<LastModified>2024-01-01T00:00:00.000Z</LastModified>"
      "<ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag><Size>10240</Size>"
      "<StorageClass>STANDARD</StorageClass></Contents>\n"
      "<Contents>\n  <Size>0</Size>\n  <Key>data/&#233;t&#xE9; &#x1F600;.tar</Key>\n"
      "</Contents>"
      "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
      "</ListBucketResult>";
  const auto page = mrd::parse_list_objects_v2(xml);
  REQUIRE(page.objects.size() == 2);
  CHECK(page.objects[0].key == "data/a&b <1> \"q\" 's'.tar");
  CHECK(page.objects[0].size == 10240);
  CHECK(page.objects[0].etag == "\"9b2cf535f27731c974343645a3985328\"");
  CHECK(page.objects[1].key == "data/\xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80.tar");
  CHECK(page.objects[1].size == 0);
  CHECK(page.objects[1].etag.empty());
  CHECK(page.truncated);
  CHECK(page.next_token == "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
}

TEST_CASE("s3 list: an empty last page, and entities that are not ones", "[remote]") {
  auto page = mrd::parse_list_objects_v2(
      "<ListBucketResult><KeyCount>0</KeyCount><IsTruncated>false</IsTruncated>"
      "</ListBucketResult>");
  CHECK(page.objects.empty());
  CHECK_FALSE(page.truncated);
  CHECK(page.next_token.empty());

  page = mrd::parse_list_objects_v2(
      "<ListBucketResult><Contents><Key>a&b&#;&#xZZ;&#0;&#x110000;&bogus;&</Key><Size>1</Size>"
      "</Contents></ListBucketResult>");
  REQUIRE(page.objects.size() == 1);
  CHECK(page.objects[0].key == "a&b&#;&#xZZ;&#0;&#x110000;&bogus;&");
  CHECK_FALSE(page.truncated);
}

TEST_CASE("s3 list: malformed pages throw, saying what is wrong", "[remote]") {
  auto message = [](const std::string& xml) {
    return message_of([&] { mrd::parse_list_objects_v2(xml); });
  };
  const std::string head = "<ListBucketResult>", tail = "</ListBucketResult>";
  CHECK(message("<html>Service Unavailable</html>").find("ListBucketResult") !=
        std::string::npos);
  CHECK(message(head + "<Contents><Key>a</Key><Size>1</Size>" + tail).find("end") !=
        std::string::npos);
  CHECK(message(head + "<Contents><Size>1</Size></Contents>" + tail).find("<Key>") !=
        std::string::npos);
  CHECK(message(head + "<Contents><Key></Key><Size>1</Size></Contents>" + tail)
            .find("<Key>") != std::string::npos);
  for (const char* size : {"", "-1", "1.5", "12a", " 3", "99999999999999999999999"}) {
    const std::string xml =
        head + "<Contents><Key>k</Key><Size>" + size + "</Size></Contents>" + tail;
    const std::string m = message(xml);
    INFO("size \"" << size << "\": " << m);
    CHECK(m.find("\"k\"") != std::string::npos);
    CHECK(m.find("size") != std::string::npos);
  }
  CHECK(message(head + "<Contents><Key>k</Key></Contents>" + tail).find("size") !=
        std::string::npos);
  CHECK(message(head + "<IsTruncated>true</IsTruncated>" + tail)
            .find("NextContinuationToken") != std::string::npos);
  // A <Key> after its <Contents> ended does not count for it.
  CHECK(message(head + "<Contents><Size>1</Size></Contents><Key>k</Key>" + tail)
            .find("<Key>") != std::string::npos);
}

TEST_CASE("s3 error: the code and message of an error body", "[remote]") {
  const auto e = mrd::parse_s3_error(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SignatureDoesNotMatch</Code>"
      "<Message>The request signature we calculated does not match &amp; so on</Message>"
      "<RequestId>4442587FB7D0A2F9</RequestId></Error>");
  REQUIRE(e);
  CHECK(e->code == "SignatureDoesNotMatch");
  CHECK(e->message == "The request signature we calculated does not match & so on");

  const auto no_message = mrd::parse_s3_error("<Error><Code>NoSuchBucket</Code></Error>");
  REQUIRE(no_message);
  CHECK(no_message->code == "NoSuchBucket");
  CHECK(no_message->message.empty());

  CHECK_FALSE(mrd::parse_s3_error(""));
  CHECK_FALSE(mrd::parse_s3_error("<html>502 Bad Gateway</html>"));
  CHECK_FALSE(mrd::parse_s3_error("<Error><Message>no code</Message></Error>"));
  CHECK_FALSE(mrd::parse_s3_error("<Error></Error><Code>outside</Code>"));
}

TEST_CASE("sigv4: a header value is signed trimmed, its runs of spaces made one", "[remote]") {
  const auto plain = mrd::sign_v4({"GET", "examplebucket.s3.amazonaws.com", "/test.txt", {},
                                   {{"range", "bytes=0-9"}}, "20130524T000000Z", kEmptySha},
                                  example_credentials(), "us-east-1", "s3");
  const auto padded = mrd::sign_v4({"GET", "examplebucket.s3.amazonaws.com", "/test.txt", {},
                                    {{"range", "  bytes=0-9  "}}, "20130524T000000Z", kEmptySha},
                                   example_credentials(), "us-east-1", "s3");
  CHECK(padded.signature == plain.signature);
  const auto spaced = mrd::sign_v4(
      {"GET", "h", "/", {}, {{"x-amz-meta-a", "a   b"}}, "20130524T000000Z", kEmptySha},
      example_credentials(), "us-east-1", "s3");
  CHECK(spaced.canonical_request.find("x-amz-meta-a:a b\n") != std::string::npos);
}

TEST_CASE("s3 list: a surrogate reference is kept as written, not made bad UTF-8",
          "[remote]") {
  const auto page = mrd::parse_list_objects_v2(
      "<ListBucketResult><Contents><Key>a&#xD800;b&#x1F600;</Key><Size>1</Size></Contents>"
      "</ListBucketResult>");
  REQUIRE(page.objects.size() == 1);
  CHECK(page.objects[0].key == "a&#xD800;b\xF0\x9F\x98\x80");
}

}  // namespace test_remote_sigv4
