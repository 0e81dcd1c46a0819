//! The NEFF container: header, gzip'd ustar payload, manifests.
