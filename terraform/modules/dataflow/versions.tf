terraform {
  required_version = ">= 1.5, < 2.0"

  required_providers {
    # google_dataflow_flex_template_job exists only in the beta provider.
    google-beta = {
      source  = "hashicorp/google-beta"
      version = "~> 6.30"
    }
  }
}
