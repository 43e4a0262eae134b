# Copyright: Contributors to clusterapi.aws
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The EKS package's tests, a package so that their basenames (test_access, test_addons ...) may repeat those of
other packages' tests (pytest imports test files by basename otherwise)."""
