//! nrt_load (seed 002): the six-stage NEFF load pipeline.
