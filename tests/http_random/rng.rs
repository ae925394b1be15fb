//! The alphabets the generators draw from, and the shared seeded generator.

pub use crate::common::rng::Rng;

pub const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz";
pub const TOKEN: &[u8] =
    b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-.^_`|~";
pub const VISIBLE: &[u8] = b" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~";
