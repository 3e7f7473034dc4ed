terraform {
  required_version = ">= 1.7.0" # terraform test with mock_provider (tests/)

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.60, < 6.0" # validated with 5.100 (data.aws_region's name is deprecated in 6.x)
    }
  }
}
