"""docker-compose.yml's minio-init: create the staging bucket STREAMPROC_BUCKET unless it exists.

S3 endpoint and keys come from boto3's own environment variables (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...);
the no-Docker deployment test runs this same script with the same variables.
"""

from __future__ import annotations

import os
import sys

import boto3
from botocore.exceptions import ClientError


def main() -> int:
    bucket = os.environ["STREAMPROC_BUCKET"]
    client = boto3.client("s3")
    try:
        client.head_bucket(Bucket=bucket)
        print(f"bucket {bucket} exists")
        return 0
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket"):
            print(f"bucket {bucket}: {exc}", file=sys.stderr)
            return 1
    client.create_bucket(Bucket=bucket)
    print(f"bucket {bucket} created")
    return 0


if __name__ == "__main__":
    sys.exit(main())
