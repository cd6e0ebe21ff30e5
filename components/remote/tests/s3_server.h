// A real S3-compatible server for the remote tests: moto_server from the project's .venv
// (scripts/install-deps), started on 127.0.0.1 on a free port. Its IAM authentication is on
// after the setup's requests, so every request the loader sends must carry a valid SigV4
// signature of a key the server knows: the setup makes a user with a read policy and an access
// key, a bucket, and uploads the shards with boto3, as a user would.
// Without the .venv's Python or moto, ok() is false and why_not() says why: the test skips.
#pragma once

#include "components/remote/tests/aws_environment.h"
#include "components/remote/tests/http_server.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace shard_test {

class MotoServer {
 public:
  // Uploads `files` (local paths, their base names as keys under `prefix`) to `bucket`.
  MotoServer(const std::string& state, const std::string& bucket, const std::string& prefix,
             const std::vector<std::string>& files)
      : state_(state), port_(free_port()) {
#ifdef MPLOADER_PYTHON
    python_ = MPLOADER_PYTHON;
#endif
    const std::string bin = python_.substr(0, python_.rfind('/') + 1);
    if (python_.empty() || ::access((bin + "moto_server").c_str(), X_OK) != 0) {
      why_ = "moto_server is not in the project's .venv: run scripts/install-deps";
      return;
    }
    // Requests before auth is enforced: create_user, put_user_policy, create_access_key,
    // create_bucket and one put_object per file.
    const std::string free_actions = std::to_string(4 + files.size());
    pid_ = ::fork();
    if (pid_ == 0) {
      ::setpgid(0, 0);
      ::setenv("INITIAL_NO_AUTH_ACTION_COUNT", free_actions.c_str(), 1);
      const std::string log = state_ + "/moto.log";
      std::freopen(log.c_str(), "w", stdout);
      std::freopen(log.c_str(), "a", stderr);
      ::execl((bin + "moto_server").c_str(), "moto_server", "-H", "127.0.0.1", "-p",
              std::to_string(port_).c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 1500 && !port_answers(port_); ++i) {
      if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = 0;
        why_ = "moto_server exited at start (see " + state_ + "/moto.log)";
        return;
      }
      ::usleep(10000);
    }
    setup(bucket, prefix, files);
  }
  ~MotoServer() {
    if (pid_ > 0) {
      ::kill(-pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  bool ok() const { return pid_ > 0 && !key_id_.empty(); }
  const std::string& why_not() const { return why_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& key_id() const { return key_id_; }
  const std::string& secret() const { return secret_; }
  // The server's credentials, in the environment for as long as `env` lives.
  void sign_in(AwsEnvironment& env) const {
    env.set("AWS_ACCESS_KEY_ID", key_id_);
    env.set("AWS_SECRET_ACCESS_KEY", secret_);
  }

 private:
  void setup(const std::string& bucket, const std::string& prefix,
             const std::vector<std::string>& files) {
    std::ofstream script(state_ + "/setup.py");
    script << "import boto3, os, sys\n"
           << "kw = dict(endpoint_url='" << endpoint() << "', region_name='us-east-1',\n"
           << "          aws_access_key_id='admin', aws_secret_access_key='admin')\n"
           << "iam = boto3.client('iam', **kw)\n"
           << "iam.create_user(UserName='reader')\n"
           << "iam.put_user_policy(UserName='reader', PolicyName='read', PolicyDocument="
           << "'{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\","
           << "\"Action\":\"s3:*\",\"Resource\":\"*\"}]}')\n"
           << "key = iam.create_access_key(UserName='reader')['AccessKey']\n"
           << "s3 = boto3.client('s3', **kw)\n"
           << "s3.create_bucket(Bucket='" << bucket << "')\n"
           << "for path in sys.argv[1:]:\n"
           << "    with open(path, 'rb') as f:\n"
           << "        s3.put_object(Bucket='" << bucket << "', Key='" << prefix
           << "' + os.path.basename(path), Body=f.read())\n"
           << "print(key['AccessKeyId'], key['SecretAccessKey'])\n";
    script.close();
    std::string command = python_ + " " + state_ + "/setup.py";
    for (const std::string& f : files) command += " " + f;
    command += " 2>" + state_ + "/setup.err";
    FILE* out = ::popen(command.c_str(), "r");
    char line[512] = "";
    const bool read = out != nullptr && std::fgets(line, sizeof line, out) != nullptr;
    if (out != nullptr) ::pclose(out);
    std::istringstream words(read ? line : "");
    words >> key_id_ >> secret_;
    if (key_id_.empty()) {
      std::ifstream err(state_ + "/setup.err");
      std::stringstream text;
      text << err.rdbuf();
      why_ = "the S3 setup through boto3 failed: " + text.str().substr(0, 1500);
    }
  }

  std::string state_, python_, why_, key_id_, secret_;
  int port_;
  pid_t pid_ = 0;
};

}  // namespace shard_test
