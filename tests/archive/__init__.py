"""The S3 archive: pushing, reading a bucket, faults, stops and several machines."""
