"""The storage root: the codec, framing, scan, manifests, the store API, verify and damage."""
