# mploader::remote: the libFuzzer target, included by fuzz/CMakeLists.txt (its function
# mploader_fuzz_target; sources named from the project's root).
find_package(CURL REQUIRED)
find_package(OpenSSL REQUIRED COMPONENTS Crypto)
mploader_fuzz_target(remote "remote manifest, S3 listing and brace patterns"
                     SOURCES components/remote/manifest.cc components/remote/url.cc components/remote/http_transport.cc
                             components/remote/s3_transport.cc components/remote/sigv4.cc
                             components/remote/aws_credentials.cc components/remote/s3_list.cc
                             components/remote/file_transport.cc components/remote/sha256.cc util/errors.cc
                             core/remote_files.cc
                     LIBS nlohmann_json::nlohmann_json CURL::libcurl OpenSSL::Crypto)
