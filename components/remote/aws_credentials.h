// remote/: where S3 credentials and the region come from, in the AWS CLI's order.
#pragma once

#include "remote/sigv4.h"

#include <string>

namespace mploader::remote::detail {

// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (AWS_SESSION_TOKEN too), else the profile
// `profile_option`, AWS_PROFILE or "default" of AWS_SHARED_CREDENTIALS_FILE or
// ~/.aws/credentials. Throws OptionError naming the variables and the file it looked at
// when none is found, or a profile lacks its secret.
AwsCredentials resolve_aws_credentials(const std::string& profile_option);

// `region_option`, else AWS_REGION, AWS_DEFAULT_REGION, the profile's region in
// AWS_CONFIG_FILE or ~/.aws/config, else "us-east-1".
std::string resolve_aws_region(const std::string& region_option);

}  // namespace mploader::remote::detail
