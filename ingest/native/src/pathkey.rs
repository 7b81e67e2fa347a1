//! The fixed-width key of a raw AS path (docs: congruency/METHOD.md "Path keys"):
//! MurmurHash3_x64_128, seed 0, over the path's ASNs as little-endian uint32, its two 64-bit
//! halves as signed int64 (`path_key_hi` = h1, `path_key_lo` = h2). The same function serves
//! the native decoder and, through `path_keys`, every other backend.

#[inline]
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51afd7ed558ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ceb9fe1a85ec53);
    k ^ (k >> 33)
}

/// MurmurHash3_x64_128 (Austin Appleby's reference, seed 0) of `asns` as little-endian bytes.
pub fn key(asns: &[u32]) -> (i64, i64) {
    const C1: u64 = 0x87c37b91114253d5;
    const C2: u64 = 0x4cf5ad432745937f;
    let len = asns.len() * 4;
    let (mut h1, mut h2) = (0u64, 0u64);
    let word = |i: usize| -> u64 {
        // 8 bytes = two ASNs, little-endian
        (asns[2 * i] as u64) | ((asns[2 * i + 1] as u64) << 32)
    };
    let blocks = len / 16;
    for b in 0..blocks {
        let mut k1 = word(2 * b);
        let mut k2 = word(2 * b + 1);
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
        h1 = h1.rotate_left(27).wrapping_add(h2).wrapping_mul(5).wrapping_add(0x52dce729);
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
        h2 = h2.rotate_left(31).wrapping_add(h1).wrapping_mul(5).wrapping_add(0x38495ab5);
    }
    // The tail: 0..3 ASNs (0, 4, 8 or 12 bytes) after the 16-byte blocks.
    let tail = &asns[blocks * 4..];
    let (mut k1, mut k2) = (0u64, 0u64);
    if tail.len() >= 3 {
        k2 = tail[2] as u64;
        k2 = k2.wrapping_mul(C2).rotate_left(33).wrapping_mul(C1);
        h2 ^= k2;
    }
    if !tail.is_empty() {
        k1 = tail[0] as u64 | if tail.len() >= 2 { (tail[1] as u64) << 32 } else { 0 };
        k1 = k1.wrapping_mul(C1).rotate_left(31).wrapping_mul(C2);
        h1 ^= k1;
    }
    let _ = (k1, k2);
    h1 ^= len as u64;
    h2 ^= len as u64;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    (h1 as i64, h2 as i64)
}
